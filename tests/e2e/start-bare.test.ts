/**
 * `pnpm start` on a machine where nothing answers on the default PostgreSQL and Redis
 * addresses: LOCAL_POSTGRES_PORT and LOCAL_REDIS_PORT move those default addresses to
 * ports nothing listens on, DATABASE_URL and REDIS_URL are unset. The launcher then runs
 * an embedded PostgreSQL and a redis-server itself, and the service completes a run.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { completeOneRun } from '@switchboard/testing/one-run'
import { freePort } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { Teardown } from '@switchboard/testing/teardown'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const admin = { email: 'admin@example.com', password: 'start-bare-password' }

async function portAnswers (port: number): Promise<boolean> {
  try {
    await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(1_000) })
    return true
  } catch (err) {
    return (err as { cause?: { code?: string } }).cause?.code !== 'ECONNREFUSED'
  }
}

interface Launched { output: () => string, exited: Promise<[number | null, string | null]>, pid: number }

/** Starts `start` in a process group of its own; teardown ends the group, whatever the test did. */
function launch (t: Teardown, env: NodeJS.ProcessEnv): Launched {
  const { DATABASE_URL: _database, REDIS_URL: _redis, ...inherited } = process.env
  const child = spawn(process.execPath, ['--conditions=@switchboard/source', '--import=tsx', 'infra/local/start.ts', '--source'], {
    cwd: ROOT,
    env: { ...inherited, NODE_ENV: 'development', ADMIN_EMAIL: admin.email, ADMIN_PASSWORD: admin.password, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>
  t.teardown(() => {
    // The launcher's children (PostgreSQL, Redis, the apps) share its group.
    try { process.kill(-child.pid!, 'SIGKILL') } catch {}
  })
  return { output: () => output, exited, pid: child.pid! }
}

/**
 * As root, the embedded PostgreSQL runs as the user postgres, which must reach this checkout's
 * node_modules: a checkout inside a private directory (a `mktemp -d` folder, /root) is made
 * traversable (search permission only, never read) until the test ends.
 */
function letOthersTraverse (t: Teardown, from: string): void {
  if (process.getuid?.() !== 0) return
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    const mode = statSync(dir).mode & 0o7777
    if ((mode & 0o001) !== 0) continue
    chmodSync(dir, mode | 0o001)
    t.teardown(() => { chmodSync(dir, mode) })
  }
}

t.test('with nothing on the default addresses, start runs PostgreSQL and Redis itself and completes a run', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-start-'))
  // As root, PostgreSQL runs as the user postgres, which must reach its data directory.
  chmodSync(dataDir, 0o755)
  letOthersTraverse(t, ROOT)
  const ports = { postgres: await freePort(), redis: await freePort(), api: await freePort(), worker: await freePort() }
  t.notOk(await portAnswers(ports.postgres), 'nothing answers on the default PostgreSQL address')
  t.notOk(await portAnswers(ports.redis), 'nothing answers on the default Redis address')

  const started = Date.now()
  const start = launch(t, {
    DATA_DIR: dataDir,
    LOCAL_POSTGRES_PORT: String(ports.postgres),
    LOCAL_REDIS_PORT: String(ports.redis),
    PORT: String(ports.api),
    HOST: '127.0.0.1',
    WORKER_HTTP_PORT: String(ports.worker)
  })
  t.teardown(() => { rmSync(dataDir, { recursive: true, force: true }) })

  const baseUrl = `http://127.0.0.1:${ports.api}`
  const ready = waitFor(async () => {
    try {
      return (await fetch(`${baseUrl}/health/ready`)).ok ? true : undefined
    } catch {
      return undefined
    }
  }, { timeoutMs: 90_000, intervalMs: 250, what: 'the api to be ready' })
  const launcherStopped = start.exited.then(([code, signal]) => { throw new Error(`start exited (${code ?? signal}) before the api was ready`) })
  launcherStopped.catch(() => {})
  try {
    await Promise.race([ready, launcherStopped])
  } catch (err) {
    // The launcher's own lines say which step it was at.
    throw new Error(`${(err as Error).message} after ${((Date.now() - started) / 1000).toFixed(1)}s; start printed:\n${start.output()}`)
  }
  t.comment(`ready after ${((Date.now() - started) / 1000).toFixed(1)}s`)
  t.match(start.output(), `no PostgreSQL answers on 127.0.0.1:${ports.postgres}: starting an embedded PostgreSQL there, data in ${join(dataDir, 'postgres')}`)
  t.match(start.output(), `no Redis answers on 127.0.0.1:${ports.redis}: starting`)
  t.ok(existsSync(join(dataDir, 'postgres', 'PG_VERSION')), 'the database lives under DATA_DIR')

  const { runId } = await completeOneRun(baseUrl, admin)
  t.ok(runId, `run SUCCESS ${((Date.now() - started) / 1000).toFixed(1)}s after start`)

  process.kill(start.pid, 'SIGTERM')
  const [code] = await start.exited
  t.equal(code, 0, 'SIGTERM stops start cleanly')
  for (const [name, port] of Object.entries(ports)) t.notOk(await portAnswers(port), `${name} is stopped`)
})

t.test('without redis-server and with nothing on the Redis address, start stops with one line saying how to get Redis', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-start-'))
  t.teardown(() => { rmSync(dataDir, { recursive: true, force: true }) })
  const redisPort = await freePort()
  // An empty PATH: no redis-server to be found (start runs node by its own path).
  const start = launch(t, { DATA_DIR: dataDir, LOCAL_REDIS_PORT: String(redisPort), PATH: join(dataDir, 'empty') })
  const [code] = await start.exited
  t.equal(code, 1)
  t.equal(start.output(), `[start] No Redis answers on 127.0.0.1:${redisPort} and redis-server is not installed: install Redis (apt-get install redis-server, brew install redis) or set REDIS_URL, or run the whole stack in containers: docker compose -f infra/compose.yaml up\n`)
})
