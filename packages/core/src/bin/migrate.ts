import { loadConfig } from '../config.ts'
import { ensureDatabase, migrateDatabase } from '../db/migrate.ts'
import { createLogger } from '../logger.ts'

const config = loadConfig()
const logger = createLogger(config.logLevel, 'migrate')
try {
  await ensureDatabase(config.databaseUrl)
  await migrateDatabase(config.databaseUrl)
  logger.info('database migrated')
} catch (err) {
  logger.error({ err }, 'migration failed')
  process.exitCode = 1
}
