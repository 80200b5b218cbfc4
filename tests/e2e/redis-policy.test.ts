/**
 * BullMQ needs a Redis that never evicts keys (README, Deploy: Redis): a process in production
 * refuses one that may (its line, exit code 78) once Redis answers; elsewhere it warns and runs.
 * Each case runs the real entry point against a redis-server of its own.
 */
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { testEnv } from '@switchboard/testing/config'
import { createTestDatabase, uniqueQueuePrefix } from '@switchboard/testing/database'
import { entryArgs } from '@switchboard/testing/entries'
import { freePort, spawnTied } from '@switchboard/testing/processes'
import { startOwnRedis } from '@switchboard/testing/stores'
import { waitFor } from '@switchboard/testing/wait'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const database = await createTestDatabase()
t.teardown(async () => { await database.drop() })

const evicting = await startOwnRedis(t, { maxmemoryPolicy: 'allkeys-lru' })
const keeping = await startOwnRedis(t)

const PRODUCTION = {
  NODE_ENV: 'production',
  JWT_SECRET: randomBytes(32).toString('hex'),
  ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  ADMIN_PASSWORD: 'a-production-admin-password',
  CHAT_APP_SECRET: 'a-production-app-secret'
}

interface Started { lines: () => Array<Record<string, any>>, exited: Promise<number | null>, stop: () => void }

/** Starts an entry point with the test settings and `env`, reading its JSON log lines. */
async function start (entry: string, env: Record<string, string>): Promise<Started> {
  const child = spawnTied(process.execPath, entryArgs(entry), {
    cwd: ROOT,
    env: { ...process.env, ...testEnv(database.url, uniqueQueuePrefix(), { PORT: String(await freePort()), ...env }) },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = once(child, 'exit').then(([code]) => code as number | null)
  t.teardown(() => { child.kill('SIGKILL') })
  const lines = (): Array<Record<string, any>> => output.split('\n').flatMap((line) => {
    try { return [JSON.parse(line)] } catch { return [] }
  })
  return { lines, exited, stop: () => { child.kill('SIGKILL') } }
}

const entries = { api: 'apps/api/src/server.ts', worker: 'apps/worker/src/main.ts' }

t.test('production and a Redis that evicts keys: the process says why and exits 78', async (t) => {
  for (const [name, entry] of Object.entries(entries)) {
    const process = await start(entry, { ...PRODUCTION, REDIS_URL: evicting.url })
    t.equal(await process.exited, 78, `${name} exits with EX_CONFIG`)
    const fatal = process.lines().find((line) => line.level === 60)
    t.match(fatal, { maxmemoryPolicy: 'allkeys-lru', msg: /^Redis's maxmemory-policy is allkeys-lru: BullMQ needs noeviction.*refusing to run with NODE_ENV=production$/ }, `${name}'s line`)
  }
})

t.test('development and a Redis that evicts keys: a warning, and the worker runs', async (t) => {
  const worker = await start(entries.worker, { REDIS_URL: evicting.url, LOG_LEVEL: 'info' })
  await waitFor(async () => worker.lines().some((line) => line.msg === 'worker started') ? true : undefined, { timeoutMs: 60_000, what: 'the worker to start' })
  const warning = await waitFor(async () => worker.lines().find((line) => line.level === 40 && /maxmemory-policy is allkeys-lru/.test(line.msg)), { timeoutMs: 10_000, what: 'the warning' })
  t.match(warning, { maxmemoryPolicy: 'allkeys-lru' })
  worker.stop()
})

t.test('production and noeviction without an append-only file: the api runs and warns once', async (t) => {
  const api = await start(entries.api, { ...PRODUCTION, REDIS_URL: keeping.url })
  await waitFor(async () => api.lines().some((line) => /append-only file/.test(line.msg ?? '')) ? true : undefined, { timeoutMs: 60_000, what: 'the append-only warning' })
  t.equal(api.lines().filter((line) => /append-only file/.test(line.msg ?? '')).length, 1)
  t.notOk(api.lines().some((line) => line.level >= 50), 'no error or fatal line')
  api.stop()
})
