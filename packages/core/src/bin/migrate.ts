import { ConfigError, configuredOrExit, loadConfig } from '../config.ts'
import { DatabaseSetupError, ensureDatabase, migrateDatabase } from '../db/migrate.ts'
import { createLogger } from '../logger.ts'

/**
 * The database to migrate: DATABASE_MIGRATION_URL when set (a user that owns the schema, or a
 * direct connection where the service goes through a transaction-mode pooler: README,
 * "Configuration"), and then nothing else is read, so that what runs the migration (the
 * Kubernetes Job) holds no other credential; otherwise the service's own DATABASE_URL.
 */
function migrationTarget (env: NodeJS.ProcessEnv): { databaseUrl: string, logLevel: string } {
  const raw = env.DATABASE_MIGRATION_URL?.trim()
  if (raw === undefined || raw === '') {
    const config = loadConfig(env)
    return { databaseUrl: config.databaseUrl, logLevel: config.logLevel }
  }
  if (!URL.canParse(raw) || !['postgres:', 'postgresql:'].includes(new URL(raw).protocol)) {
    throw new ConfigError([{ setting: 'DATABASE_MIGRATION_URL', message: 'DATABASE_MIGRATION_URL must be a postgres:// or postgresql:// URL' }])
  }
  return { databaseUrl: raw, logLevel: 'info' }
}

const { databaseUrl, logLevel } = configuredOrExit('migrate', () => migrationTarget(process.env))
const logger = createLogger(logLevel, 'migrate')
try {
  if (await ensureDatabase(databaseUrl) === 'created') logger.info('database created')
  await migrateDatabase(databaseUrl)
  logger.info('database migrated')
} catch (err) {
  // A setup problem is one line saying what to do; anything else keeps its stack.
  if (err instanceof DatabaseSetupError) logger.error(err.message)
  else logger.error({ err }, 'migration failed')
  process.exitCode = 1
}
