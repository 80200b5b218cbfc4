import { configOrExit } from '../config.ts'
import { DatabaseSetupError, ensureDatabase, migrateDatabase } from '../db/migrate.ts'
import { createLogger } from '../logger.ts'

const config = configOrExit('migrate')
const logger = createLogger(config.logLevel, 'migrate')
try {
  if (await ensureDatabase(config.databaseUrl) === 'created') logger.info('database created')
  await migrateDatabase(config.databaseUrl)
  logger.info('database migrated')
} catch (err) {
  // A setup problem is one line saying what to do; anything else keeps its stack.
  if (err instanceof DatabaseSetupError) logger.error(err.message)
  else logger.error({ err }, 'migration failed')
  process.exitCode = 1
}
