import { randomBytes } from 'node:crypto'
import { loadConfig, type Config } from '@switchboard/core/config'
import { REDIS_URL } from './database.ts'

export const TEST_JWT_SECRET = 'test-secret-that-is-long-enough-0123456789'
export const TEST_ADMIN = { email: 'admin@example.com', password: 'admin-password' }

/** The environment of one test file: its own database and queue prefix. */
export function testEnv (databaseUrl: string, queuePrefix: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    QUEUE_PREFIX: queuePrefix,
    JWT_SECRET: TEST_JWT_SECRET,
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    ADMIN_EMAIL: TEST_ADMIN.email,
    ADMIN_PASSWORD: TEST_ADMIN.password,
    LOG_LEVEL: 'warn',
    // Listeners stay on loopback, each on any free port: processes of parallel tests never
    // compete for the defaults. A test that scrapes a port it must know sets it.
    HOST: '127.0.0.1',
    WORKER_HTTP_PORT: '0',
    API_METRICS_PORT: '0',
    // A worker stopped with a job hanging (a test's never-answering server) exits as before the
    // production default grew to cover an assistant turn.
    WORKER_DRAIN_MS: '30000',
    ...overrides
  }
}

export function testConfig (databaseUrl: string, queuePrefix: string, overrides: Record<string, string> = {}): Config {
  return loadConfig(testEnv(databaseUrl, queuePrefix, overrides))
}
