/**
 * `pnpm start`: the whole service on one machine, for development and a first try.
 * Uses the PostgreSQL and Redis of DATABASE_URL / REDIS_URL; when one is unset and
 * nothing answers on its default local address (127.0.0.1:LOCAL_POSTGRES_PORT,
 * 127.0.0.1:LOCAL_REDIS_PORT), runs one there itself: an embedded PostgreSQL
 * (infra/local/postgres.ts) and a `redis-server` from the machine, both with their
 * data under DATA_DIR. Then migrates, runs the api and the worker (on 127.0.0.1 unless
 * HOST is set), prints where to log in once the api listens, and stops everything on
 * SIGINT, SIGTERM or SIGHUP, or when one of them stops: the apps first (they drain),
 * then Redis and PostgreSQL.
 *
 * Its children run in sessions of their own, so that a terminal's Ctrl-C (SIGINT to the
 * whole foreground process group) reaches the launcher alone, which stops them in that
 * order. util-linux's setpriv ties each to the launcher: the kernel sends it SIGTERM if
 * the launcher dies without stopping it.
 *
 * The apps log JSON (what production ships); the launcher prints their lines through
 * pino-pretty.
 *
 * `--source` runs the api and the worker from their TypeScript sources (tests);
 * by default they run from the build, as `start:api` and `start:worker` do.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs'
import { createConnection } from 'node:net'
import { delimiter, join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { prettyFactory } from 'pino-pretty'
import { ConfigError, EXIT_CONFIG, loadConfig, type Config } from '@switchboard/core/config'
import { createDatabase, DatabaseSetupError, ensureDatabase, migrateDatabase } from '@switchboard/core/db'
import { usersRepository, verifyPassword } from '@switchboard/core/users'
import { prepareEmbeddedPostgres } from './postgres.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const fromSource = process.argv.includes('--source')
const SOURCE_ARGS = ['--conditions=@switchboard/source', '--import=tsx']
/** The admin's password when ADMIN_PASSWORD is unset (packages/core/src/config.ts). */
const DEFAULT_ADMIN_PASSWORD = 'admin'

const say = (line: string): void => { process.stdout.write(`[start] ${line}\n`) }

/** Stops with one line saying what to do. */
function fail (line: string, code = 1): never {
  process.stderr.write(`[start] ${line}\n`)
  process.exit(code)
}

/** Whether something accepts TCP connections on host:port. */
async function answers (port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port, timeout: 1_000 })
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

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path))

/** The apps' JSON lines for people: local times, one line each, a request as `GET /path 200 3ms`. */
const pretty = prettyFactory({
  colorize: process.stdout.isTTY,
  translateTime: 'SYS:HH:MM:ss.l',
  singleLine: true,
  ignore: 'pid,hostname,req,res,responseTime,requestId',
  messageFormat: (log, messageKey) => {
    const { req, res, responseTime } = log as { req?: { method: string, url: string }, res?: { statusCode: number }, responseTime?: number }
    const message = String(log[messageKey] ?? '')
    if (req === undefined || res === undefined || responseTime === undefined) return message
    const line = `${req.method} ${req.url} ${res.statusCode} ${Math.round(responseTime)}ms`
    return message === 'request completed' ? line : `${line} ${message}`
  }
})

function prettyLine (name: string, line: string): string {
  if (line.startsWith('{')) {
    try {
      return pretty(JSON.parse(line))
    } catch {}
  }
  return `[${name}] ${line}\n`
}

interface Managed { name: string, child: ChildProcess, exited: Promise<unknown>, stopSignal: NodeJS.Signals }
const managed: Managed[] = []

interface RunOptions {
  env?: NodeJS.ProcessEnv
  cwd?: string
  uid?: number
  gid?: number
  /** What stops it cleanly (PostgreSQL: SIGINT, its fast shutdown). */
  stopSignal?: NodeJS.Signals
  /** Its lines are pino's JSON. */
  json?: boolean
}

/** Starts a child in a session of its own; its output lines are printed with its name. */
function run (name: string, command: string, args: string[], options: RunOptions = {}): Managed {
  const [file, argv] = SETPRIV === undefined ? [command, args] : [SETPRIV, ['--pdeathsig', 'TERM', '--', command, ...args]]
  const child = spawn(file, argv, {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? process.env,
    uid: options.uid,
    gid: options.gid,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe']
  })
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      process.stdout.write(options.json === true ? prettyLine(name, line) : `[${name}] ${line}\n`)
    })
  }
  const entry = { name, child, exited: once(child, 'exit'), stopSignal: options.stopSignal ?? 'SIGTERM' }
  managed.push(entry)
  return entry
}

const running = (entry: Managed): boolean => entry.child.exitCode === null && entry.child.signalCode === null

/** Waits until the port answers; fails if the process exits first. */
async function waitForPort (entry: Managed, port: number, timeoutMs: number, host = '127.0.0.1'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await answers(port, host))) {
    if (!running(entry)) fail(`${entry.name} exited (${entry.child.exitCode ?? entry.child.signalCode}) before it answered on ${host}:${port}`)
    if (Date.now() > deadline) fail(`${entry.name} did not answer on ${host}:${port} within ${timeoutMs / 1000}s`)
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
      for (const entry of entries) entry.child.kill(entry.stopSignal)
      await Promise.all(entries.map((entry) => entry.exited))
    }
    say('stopped')
    process.exit(code)
  }
  return await new Promise<never>(() => {})
}
/** One line saying what went wrong, then everything started is stopped and the launcher exits 1. */
async function abort (line: string): Promise<never> {
  process.stderr.write(`[start] ${line}\n`)
  return await stopAll(1)
}
// Once stopping, more signals change nothing: `pnpm start` passes its own SIGINT on after the terminal's.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => { stopAll(0).catch(() => {}) })

/** The settings, or one line naming every bad one and exit code 78, as the apps do. */
function configuration (): Config {
  try {
    return loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) fail(`invalid configuration: ${err.message}`, EXIT_CONFIG)
    throw err
  }
}
const config = configuration()
const dataDir = resolve(config.dataDir)
const unset = (name: string): boolean => (process.env[name]?.trim() ?? '') === ''
mkdirSync(dataDir, { recursive: true })
// The launcher is for one machine: its api and worker listen on loopback unless HOST says otherwise.
const host = unset('HOST') ? '127.0.0.1' : config.host

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
  const embedded = await prepareEmbeddedPostgres(dataDir, config.localPostgresPort)
    .catch(async (err: Error) => await abort(`The embedded PostgreSQL could not be prepared: ${err.message}`))
  const where = join(dataDir, 'postgres') === embedded.cluster ? embedded.cluster : `${join(dataDir, 'postgres')} (${embedded.cluster})`
  say(`no PostgreSQL answers on 127.0.0.1:${config.localPostgresPort}: starting an embedded PostgreSQL there, data in ${where}${embedded.created ? ', a new cluster' : ''}`)
  const postgres = run('postgres', embedded.command, embedded.args, {
    cwd: embedded.cwd,
    uid: embedded.uid,
    gid: embedded.gid,
    env: { ...process.env, LC_ALL: 'C' },
    stopSignal: 'SIGINT'
  })
  await waitForPort(postgres, config.localPostgresPort, 60_000)
}

try {
  if (await ensureDatabase(config.databaseUrl) === 'created') say('database created')
  await migrateDatabase(config.databaseUrl)
  say('database migrated')
} catch (err) {
  if (err instanceof DatabaseSetupError) await abort(err.message)
  throw err
}

// The apps read the same settings, with the addresses and the data directory settled here
// (a cluster's REDIS_CLUSTER_NODES as the redis+cluster:// REDIS_URL it became).
const { REDIS_CLUSTER_NODES: _clusterNodes, ...settings } = process.env
const env = { ...settings, HOST: host, DATA_DIR: dataDir, DATABASE_URL: config.databaseUrl, REDIS_URL: config.redisUrl }
const entry = (app: 'api' | 'worker', main: string): string[] => fromSource ? [...SOURCE_ARGS, `apps/${app}/src/${main}.ts`] : [`apps/${app}/dist/${main}.js`]
const api = run('api', process.execPath, entry('api', 'server'), { env, json: true })
const worker = run('worker', process.execPath, entry('worker', 'main'), { env, json: true })
for (const app of [api, worker]) {
  app.exited.then(() => {
    if (!stopping) {
      say(`${app.name} stopped (${app.child.exitCode ?? app.child.signalCode}): stopping the rest`)
      stopAll(1).catch(() => {})
    }
  }, () => {})
}

/** Whether the admin can still log in with the default password (ADMIN_PASSWORD only sets the first one). */
async function adminHasDefaultPassword (): Promise<boolean> {
  const database = createDatabase(config.databaseUrl, { max: 1 })
  try {
    const admin = await usersRepository(database.db).findByEmail(config.adminEmail)
    return admin !== null && await verifyPassword(DEFAULT_ADMIN_PASSWORD, admin.passwordHash)
  } finally {
    await database.close()
  }
}

// The banner, once the api listens (it creates the admin before it does).
const everywhere = ['0.0.0.0', '::'].includes(host)
const local = everywhere ? '127.0.0.1' : host
const baseUrl = `http://${local.includes(':') ? `[${local}]` : local}:${config.port}`
await waitForPort(api, config.port, 120_000, local)
const lines = [
  `Switchboard is ready: ${baseUrl}/console (the API under ${baseUrl}/api, its reference at ${baseUrl}/docs)`,
  `log in as ${config.adminEmail}`
]
if (everywhere) lines.push(`listening on every interface (HOST=${host})`)
// A failed check only leaves the warning out: the stack runs.
if (await adminHasDefaultPassword().catch(() => false)) {
  lines.push(`WARNING: ${config.adminEmail} still has the default password "${DEFAULT_ADMIN_PASSWORD}": change it once logged in`)
}
lines.push('Ctrl-C stops everything')
for (const line of lines) say(line)
