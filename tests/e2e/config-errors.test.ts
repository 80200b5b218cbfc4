/**
 * A process started with bad or missing settings says so in one JSON log line naming every one
 * of them, and exits with 78 (EX_CONFIG): one restart teaches an operator everything to fix.
 */
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { entryArgs } from '@switchboard/testing/entries'
import { spawnTied } from '@switchboard/testing/processes'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const SETTINGS = ['JWT_SECRET', 'ENCRYPTION_KEY', 'ADMIN_PASSWORD', 'CHAT_APP_SECRET', 'DATABASE_URL', 'REDIS_URL', 'LOG_LEVEL', 'PORT', 'WORKER_CONCURRENCY']

/** Runs an entry point (from its build when current: packages/testing/src/entries.ts) with `env` on top of this process's environment less every setting above. */
async function runWith (entry: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !SETTINGS.includes(name)))
  const child = spawnTied(process.execPath, entryArgs(entry), {
    cwd: ROOT,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const [code] = await once(child, 'exit') as [number | null]
  return { code, stdout, stderr }
}

const entries = {
  api: 'apps/api/src/server.ts',
  worker: 'apps/worker/src/main.ts',
  migrate: 'packages/core/src/bin/migrate.ts',
  rotate: 'packages/core/src/bin/rotate-encryption-key.ts'
}

t.test('production with nothing set: one line naming the four required settings, exit code 78', async (t) => {
  for (const [name, entry] of Object.entries(entries)) {
    const { code, stdout, stderr } = await runWith(entry, { NODE_ENV: 'production' })
    t.equal(code, 78, `${name} exits with EX_CONFIG`)
    t.equal(stderr, '', `${name} prints no stack trace`)
    const lines = stdout.trim().split('\n')
    t.equal(lines.length, 1, `${name} prints one line`)
    const line = JSON.parse(lines[0] ?? '{}')
    t.match(line, {
      level: 60,
      name,
      settings: ['JWT_SECRET', 'ENCRYPTION_KEY', 'ADMIN_PASSWORD', 'CHAT_APP_SECRET'],
      msg: /^invalid configuration: JWT_SECRET of at least 32 characters is required when NODE_ENV=production; ENCRYPTION_KEY is required/
    }, `${name}'s line names every missing setting`)
    t.equal(line.problems.length, 4)
  }
})

t.test('malformed values are listed together with the missing ones', async (t) => {
  const { code, stdout } = await runWith(entries.api, {
    NODE_ENV: 'production',
    JWT_SECRET: 'j'.repeat(40),
    ENCRYPTION_KEY: 'too-short',
    PORT: 'eighty',
    LOG_LEVEL: 'loud',
    WORKER_CONCURRENCY: '0',
    DATABASE_URL: 'mysql://db/switchboard'
  })
  t.equal(code, 78)
  const line = JSON.parse(stdout)
  t.same(line.settings, ['ENCRYPTION_KEY', 'ADMIN_PASSWORD', 'CHAT_APP_SECRET', 'LOG_LEVEL', 'PORT', 'DATABASE_URL', 'WORKER_CONCURRENCY'])
  t.match(line.problems, [
    'ENCRYPTION_KEY must be 32 bytes, base64-encoded',
    /^ADMIN_PASSWORD/,
    /^CHAT_APP_SECRET/,
    /^LOG_LEVEL must be one of/,
    'PORT must be an integer from 0 to 65535, got "eighty"',
    'DATABASE_URL must use postgres: or postgresql:',
    /^WORKER_CONCURRENCY must be an integer/
  ])
})

t.test('behind a transaction-mode pooler, the api needs DATABASE_LISTEN_URL and the migration DATABASE_MIGRATION_URL', async (t) => {
  const pooled = { NODE_ENV: 'test', DATABASE_URL: 'postgres://switchboard_api@127.0.0.1:9/switchboard', DATABASE_POOL_MODE: 'transaction' }
  const api = await runWith(entries.api, pooled)
  t.equal(api.code, 78)
  t.match(JSON.parse(api.stdout), { settings: ['DATABASE_LISTEN_URL'], problems: [/^DATABASE_LISTEN_URL is required when DATABASE_POOL_MODE=transaction: LISTEN hears nothing through a transaction-mode pooler/] })
  const migrate = await runWith(entries.migrate, pooled)
  t.equal(migrate.code, 78)
  t.match(JSON.parse(migrate.stdout), { settings: ['DATABASE_MIGRATION_URL'], problems: [/^DATABASE_MIGRATION_URL is required when DATABASE_POOL_MODE=transaction: the migration connects directly/] })
})
