import { ConfigError, configuredOrExit, loadConfig } from '../config.ts'
import { DatabaseSetupError, DEFAULT_MIGRATION_WAITS, ensureDatabase, migrateDatabase, type MigrationWaits } from '../db/migrate.ts'
import { createLogger } from '../logger.ts'

/**
 * The database to migrate: DATABASE_MIGRATION_URL when set (a user that owns the schema, or a
 * direct connection where the service goes through a transaction-mode pooler: README,
 * "Configuration"), and then nothing else is read, so that what runs the migration (the
 * Kubernetes Job) holds no other credential; otherwise the service's own DATABASE_URL.
 */
function migrationTarget (env: NodeJS.ProcessEnv): { databaseUrl: string, logLevel: string, waits: MigrationWaits } {
  const waits = migrationWaits(env)
  const raw = env.DATABASE_MIGRATION_URL?.trim()
  if (raw === undefined || raw === '') {
    const config = loadConfig(env)
    // Its advisory lock is the session's: through a transaction-mode pooler it would serialize nothing.
    if (config.databasePoolMode === 'transaction') {
      throw new ConfigError([{ setting: 'DATABASE_MIGRATION_URL', message: 'DATABASE_MIGRATION_URL is required when DATABASE_POOL_MODE=transaction: the migration connects directly to PostgreSQL (or a session-mode pool), not through the pooler' }])
    }
    return { databaseUrl: config.databaseUrl, logLevel: config.logLevel, waits }
  }
  if (!URL.canParse(raw) || !['postgres:', 'postgresql:'].includes(new URL(raw).protocol)) {
    throw new ConfigError([{ setting: 'DATABASE_MIGRATION_URL', message: 'DATABASE_MIGRATION_URL must be a postgres:// or postgresql:// URL' }])
  }
  return { databaseUrl: raw, logLevel: 'info', waits }
}

/** DATABASE_MIGRATION_LOCK_TIMEOUT_MS (100–600000) and DATABASE_MIGRATION_LOCK_WAIT_MS (0–86400000), README, Configuration. */
function migrationWaits (env: NodeJS.ProcessEnv): MigrationWaits {
  const problems: Array<{ setting: string, message: string }> = []
  const int = (setting: string, fallback: number, min: number, max: number): number => {
    const raw = env[setting]?.trim()
    if (raw === undefined || raw === '') return fallback
    const value = Number(raw)
    if (Number.isInteger(value) && value >= min && value <= max) return value
    problems.push({ setting, message: `${setting} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}` })
    return fallback
  }
  const waits = {
    ...DEFAULT_MIGRATION_WAITS,
    lockTimeoutMs: int('DATABASE_MIGRATION_LOCK_TIMEOUT_MS', DEFAULT_MIGRATION_WAITS.lockTimeoutMs, 100, 600_000),
    migrationWaitMs: int('DATABASE_MIGRATION_LOCK_WAIT_MS', DEFAULT_MIGRATION_WAITS.migrationWaitMs, 0, 86_400_000)
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return waits
}

const { databaseUrl, logLevel, waits } = configuredOrExit('migrate', () => migrationTarget(process.env))
const logger = createLogger(logLevel, 'migrate')
try {
  if (await ensureDatabase(databaseUrl) === 'created') logger.info('database created')
  await migrateDatabase(databaseUrl, undefined, waits)
  logger.info('database migrated')
} catch (err) {
  // A setup problem is one line saying what to do; anything else keeps its stack.
  if (err instanceof DatabaseSetupError) logger.error(err.message)
  else logger.error({ err }, 'migration failed')
  process.exitCode = 1
}
