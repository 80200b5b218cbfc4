import { configOrExit } from '../config.ts'
import { rotateEncryptionKey } from '../credentials/rotation.ts'
import { createDatabase } from '../db/client.ts'
import { keyringOf } from '../encryption.ts'
import { createLogger } from '../logger.ts'

/**
 * `pnpm credentials:rotate`: re-encrypts every credential and chat account token with
 * ENCRYPTION_KEY, reading them with it or any of ENCRYPTION_KEYS_PREVIOUS (README, Credentials).
 */
const config = configOrExit('rotate')
const logger = createLogger(config.logLevel, 'rotate')
const database = createDatabase(config.databaseUrl, { max: 1, poolMode: config.databasePoolMode })
try {
  const rotated = await rotateEncryptionKey({ db: database.db, keyring: keyringOf(config), logger })
  logger.info({ rotated }, 'every stored secret is encrypted with the current key')
} catch (err) {
  logger.error({ err }, 'rotation stopped')
  process.exitCode = 1
} finally {
  await database.close()
}
