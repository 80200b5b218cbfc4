/**
 * `pnpm start` on a machine where nothing answers on the default PostgreSQL and Redis
 * addresses: LOCAL_POSTGRES_PORT and LOCAL_REDIS_PORT move those default addresses to
 * ports nothing listens on, DATABASE_URL and REDIS_URL are unset. The launcher then runs
 * an embedded PostgreSQL and a redis-server itself, and the service completes a run.
 *
 * It runs from a copy of this checkout inside a `mktemp -d` folder (mode 0700, like a home
 * folder), with nothing made reachable to others: as root, PostgreSQL runs as the user
 * postgres, which cannot enter that folder.
 */
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { completeOneRun } from '@switchboard/testing/one-run'
import { freePort, spawnTied } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { Teardown } from '@switchboard/testing/teardown'

// Two starts of the whole stack, each compiling the apps from source.
t.setTimeout(300_000)

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const defaultAdmin = { email: 'admin@example.com', password: 'admin' }

async function portAnswers (port: number, host = '127.0.0.1'): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = createConnection({ host, port, timeout: 1_000 })
    const done = (result: boolean): void => { socket.destroy(); resolve(result) }
    socket.once('connect', () => { done(true) })
    socket.once('timeout', () => { done(false) })
    socket.once('error', () => { done(false) })
  })
}

/**
 * A copy of this checkout (its files hard-linked, no .git, no data) in a new folder only its owner
 * may enter, as a checkout in /root or a `mktemp -d` folder is.
 */
async function privateCheckout (t: Teardown): Promise<string> {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-checkout-'))
  t.teardown(() => { rmSync(folder, { recursive: true, force: true }) })
  const checkout = join(folder, 'switchboard')
  mkdirSync(checkout)
  const entries = readdirSync(ROOT).filter((name) => !['.git', '.switchboard'].includes(name)).map((name) => join(ROOT, name))
  const cp = promisify(execFile)
  // Linked when on the same file system, copied otherwise.
  await cp('cp', ['-al', ...entries, checkout]).catch(async () => await cp('cp', ['-a', ...entries, checkout]))
  return checkout
}

interface Launched { output: () => string, exited: Promise<[number | null, string | null]>, pid: number }

/** Starts `start` in a process group of its own, as a terminal does; teardown ends the group, whatever the test did. */
function launch (t: Teardown, cwd: string, env: NodeJS.ProcessEnv): Launched {
  const { DATABASE_URL: _database, REDIS_URL: _redis, HOST: _host, ADMIN_PASSWORD: _password, ...inherited } = process.env
  const child = spawnTied(process.execPath, ['--conditions=@switchboard/source', '--import=tsx', 'infra/local/start.ts', '--source'], {
    cwd,
    env: { ...inherited, NODE_ENV: 'development', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true
  })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>
  t.teardown(() => {
    // The launcher's children are tied to it (setpriv): they stop when it dies.
    try { process.kill(-child.pid!, 'SIGKILL') } catch {}
  })
  return { output: () => output, exited, pid: child.pid! }
}

/** Waits for the banner's last line; fails with what start printed if it exits first. */
async function ready (start: Launched): Promise<void> {
  const started = Date.now()
  const banner = waitFor(async () => start.output().includes('[start] Ctrl-C stops everything') ? true : undefined,
    { timeoutMs: 120_000, intervalMs: 250, what: 'the banner' })
  const stopped = start.exited.then(([code, signal]) => { throw new Error(`start exited (${code ?? signal}) before its banner`) })
  stopped.catch(() => {})
  try {
    await Promise.race([banner, stopped])
  } catch (err) {
    throw new Error(`${(err as Error).message} after ${((Date.now() - started) / 1000).toFixed(1)}s; start printed:\n${start.output()}`)
  }
}

t.test('from a checkout in a 0700 folder, start runs PostgreSQL and Redis itself, completes a run and stops in order on Ctrl-C', async (t) => {
  const checkout = await privateCheckout(t)
  t.equal(statSync(join(checkout, '..')).mode & 0o777, 0o700, 'the checkout\'s folder is private')
  const dataDir = join(checkout, '.switchboard')
  t.teardown(() => {
    // As root the cluster lives outside the checkout, where DATA_DIR/postgres links to.
    const link = join(dataDir, 'postgres')
    if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink() === true) rmSync(realpathSync(link), { recursive: true, force: true })
  })
  const ports = { postgres: await freePort(), redis: await freePort(), api: await freePort(), worker: await freePort(), apiMetrics: await freePort() }
  t.notOk(await portAnswers(ports.postgres), 'nothing answers on the default PostgreSQL address')
  t.notOk(await portAnswers(ports.redis), 'nothing answers on the default Redis address')
  const env = {
    LOCAL_POSTGRES_PORT: String(ports.postgres),
    LOCAL_REDIS_PORT: String(ports.redis),
    PORT: String(ports.api),
    WORKER_HTTP_PORT: String(ports.worker),
    API_METRICS_PORT: String(ports.apiMetrics)
  }

  const started = Date.now()
  const first = launch(t, checkout, env)
  await ready(first)
  t.comment(`ready after ${((Date.now() - started) / 1000).toFixed(1)}s`)
  const output = first.output()
  t.match(output, `no PostgreSQL answers on 127.0.0.1:${ports.postgres}: starting an embedded PostgreSQL there, data in ${join(dataDir, 'postgres')}`)
  t.match(output, /data in \S+( \(\S+\))?, a new cluster\n/, 'the first start says it made the cluster')
  t.match(output, `no Redis answers on 127.0.0.1:${ports.redis}: starting`)
  t.ok(existsSync(join(dataDir, 'postgres', 'PG_VERSION')), 'the database is found under DATA_DIR')

  // The banner comes once the api listens, and names the console, the login and the default password.
  const baseUrl = `http://127.0.0.1:${ports.api}`
  const listening = output.indexOf(`Server listening at ${baseUrl}`)
  const banner = output.indexOf(`[start] Switchboard is ready: ${baseUrl}/console`)
  t.ok(listening >= 0 && banner > listening, 'the banner follows the api\'s listening line')
  t.match(output.slice(banner), [
    `[start] Switchboard is ready: ${baseUrl}/console (the API under ${baseUrl}/api, its reference at ${baseUrl}/docs)`,
    '[start] log in as admin@example.com',
    '[start] WARNING: admin@example.com still has the default password "admin": change it once logged in',
    '[start] Ctrl-C stops everything'
  ].join('\n'))

  // Unless HOST is set, the launcher's apps listen on loopback only: 127.0.0.2 is loopback too,
  // and reaches a listener on 0.0.0.0 but not one on 127.0.0.1.
  t.ok(await portAnswers(ports.api) && await portAnswers(ports.worker), 'the api and the worker answer on 127.0.0.1')
  t.notOk(await portAnswers(ports.api, '127.0.0.2'), 'the api listens on 127.0.0.1 only')
  t.notOk(await portAnswers(ports.worker, '127.0.0.2'), 'the worker listens on 127.0.0.1 only')
  t.ok(await portAnswers(ports.apiMetrics), 'the api\'s metrics listener answers on 127.0.0.1')
  t.notOk(await portAnswers(ports.apiMetrics, '127.0.0.2'), 'and on 127.0.0.1 only')

  const { runId } = await completeOneRun(baseUrl, defaultAdmin)
  t.ok(runId, `run SUCCESS ${((Date.now() - started) / 1000).toFixed(1)}s after start`)
  // Readable lines: one per request, probes (the readiness polls above) left out at info.
  await waitFor(async () => /INFO \(api\): POST \/api\/auth\/login 200 \d+ms\n/.test(first.output()) ? true : undefined, { what: 'the login\'s request line' })
  t.notMatch(first.output(), '/health/', 'no probe lines at info')
  t.notMatch(first.output(), /^\{"level"/m, 'no raw JSON lines')

  // Ctrl-C: the terminal signals the whole foreground process group.
  process.kill(-first.pid, 'SIGINT')
  const [code] = await first.exited
  const stopping = first.output().slice(first.output().indexOf('[start] Ctrl-C stops everything'))
  t.equal(code, 0, 'Ctrl-C stops start cleanly')
  t.notMatch(stopping, /second SIG|ELIFECYCLE|killed by timeout/, 'each app gets one signal and drains')
  const worker = stopping.indexOf('INFO (worker): closing')
  const api = stopping.indexOf('INFO (api): closing')
  const stores = Math.min(stopping.indexOf('[postgres]'), stopping.indexOf('[redis]'))
  t.ok(worker >= 0 && api >= 0, 'both apps close')
  t.ok(stores > worker && stores > api, 'the stores stop after the apps')
  t.match(stopping, /\[start\] stopped\n$/)
  for (const [name, port] of Object.entries(ports)) t.notOk(await portAnswers(port), `${name} is stopped`)

  // A restart finds the cluster made, and the admin made, and says so.
  const second = launch(t, checkout, env)
  await ready(second)
  t.match(second.output(), `starting an embedded PostgreSQL there, data in ${join(dataDir, 'postgres')}`)
  t.notMatch(second.output(), /a new cluster|database created/, 'a restart does not claim to initialise')
  process.kill(second.pid, 'SIGTERM')
  t.equal((await second.exited)[0], 0, 'SIGTERM stops start cleanly')
  for (const [name, port] of Object.entries(ports)) t.notOk(await portAnswers(port), `${name} is stopped again`)
})

t.test('without redis-server and with nothing on the Redis address, start stops with one line saying how to get Redis', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-start-'))
  t.teardown(() => { rmSync(dataDir, { recursive: true, force: true }) })
  const redisPort = await freePort()
  // An empty PATH: no redis-server to be found (start runs node by its own path).
  const start = launch(t, ROOT, { DATA_DIR: dataDir, LOCAL_REDIS_PORT: String(redisPort), PATH: join(dataDir, 'empty') })
  const [code] = await start.exited
  t.equal(code, 1)
  t.equal(start.output(), `[start] No Redis answers on 127.0.0.1:${redisPort} and redis-server is not installed: install Redis (apt-get install redis-server, brew install redis) or set REDIS_URL, or run the whole stack in containers: docker compose -f infra/compose.yaml up\n`)
})

t.test('a bad setting stops start with one line naming every bad one, exit code 78', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-start-'))
  t.teardown(() => { rmSync(dataDir, { recursive: true, force: true }) })
  const start = launch(t, ROOT, { DATA_DIR: dataDir, PORT: 'eighty', LOG_LEVEL: 'loud' })
  const [code] = await start.exited
  t.equal(code, 78)
  t.equal(start.output(), '[start] invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent; PORT must be an integer from 0 to 65535, got "eighty"\n')
})
