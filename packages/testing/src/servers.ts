import { execFileSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureDatabase, migrateDatabase } from '@switchboard/core/db'
import { freePort, spawnTied } from './processes.ts'
import type { TestDatabase } from './database.ts'
import type { Teardown } from './teardown.ts'

/**
 * A PostgreSQL or Redis server of the test's own, on a free loopback port, that the test may
 * stop and start again: fault tests kill stores without disturbing the shared ones other
 * tests use. Everything is stopped and its files removed at teardown.
 */

const POSTGRES_BIN = process.env.POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin'
/** How long a server may take to say it is ready (initdb and crash recovery included). */
const READY_TIMEOUT_MS = 30_000

interface ServerProcess {
  child: ChildProcess
  exited: Promise<unknown>
}

/** Starts `command` and resolves once its output contains `ready`. */
async function launch (command: string, args: string[], ready: string, options: { uid?: number, gid?: number } = {}): Promise<ServerProcess> {
  const child = spawnTied(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options })
  const exited = once(child, 'exit')
  let output = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${command} was not ready within ${READY_TIMEOUT_MS} ms:\n${output}`))
    }, READY_TIMEOUT_MS)
    const onData = (chunk: Buffer): void => {
      output += chunk.toString()
      if (output.includes(ready)) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`${command} exited before it was ready:\n${output}`))
    }, reject)
  })
  // Keep reading so that a full pipe never blocks the server.
  child.stdout!.resume()
  child.stderr!.resume()
  return { child, exited }
}

async function stopProcess (server: ServerProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  if (server === undefined || server.child.exitCode !== null || server.child.signalCode !== null) return
  server.child.kill(signal)
  await server.exited
}

/** The processes `pid` started (PostgreSQL's backends put themselves in sessions of their own, out of reach of a group signal). */
function childrenOf (pid: number): number[] {
  const children: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue
    try {
      // Field 4 of /proc/<pid>/stat is the parent's pid; the command name before it may hold spaces.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry))
    } catch {
      // The process ended while the list was read.
    }
  }
  return children
}

/** PostgreSQL refuses to run as root: as root, its files and processes belong to the user postgres. */
function postgresUser (): { uid: number, gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string): number => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())
  return { uid: id('-u'), gid: id('-g') }
}

export interface StoreServer {
  port: number
  /** Whether the server is up (between `start` and `stop`). */
  running: () => boolean
  /** Starts the server again on the same port (Redis: empty). */
  start: () => Promise<void>
  /** Stops it: `SIGKILL` kills Redis or PostgreSQL's postmaster at once. */
  stop: (signal?: NodeJS.Signals) => Promise<void>
}

export interface PostgresServer extends StoreServer {
  /** A migrated database on this server, for `startStack`; it goes with the server. */
  createDatabase: (name?: string) => Promise<TestDatabase>
  url: (database: string) => string
  /**
   * Freezes every process of the server (SIGSTOP): connections stay open, statements and new
   * connections hang, as on a stalled disk or a lost network, until `thaw`.
   */
  freeze: () => void
  thaw: () => void
}

/**
 * PostgreSQL from the installed server binaries (POSTGRES_BIN, default PostgreSQL 15's), in a
 * temporary data directory, loopback only, trusting local clients. fsync is off (a test's stop is a
 * process stop, never a machine crash: what reached the kernel survives it); synchronous_commit
 * stays on, or an immediate shutdown would lose commits the clients were told of. `stop`
 * defaults to SIGQUIT (immediate shutdown: clients are cut at once and the next start runs
 * crash recovery); SIGINT is a fast shutdown.
 */
export async function startPostgresServer (t: Teardown): Promise<PostgresServer> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-pg-'))
  const user = postgresUser()
  if (user !== undefined) chownSync(dir, user.uid, user.gid)
  const dataDir = join(dir, 'data')
  const port = await freePort()
  let server: ServerProcess | undefined
  const running = (): boolean => server !== undefined && server.child.exitCode === null && server.child.signalCode === null
  let frozen = false
  const signal = (pid: number, name: NodeJS.Signals): void => {
    try {
      process.kill(pid, name)
    } catch (err) {
      // A backend that ended since the list was read.
      if ((err as { code?: string }).code !== 'ESRCH') throw err
    }
  }
  // The postmaster first, so that it starts no process while the others are stopped; woken last.
  const freeze = (): void => {
    const postmaster = server!.child.pid!
    frozen = true
    signal(postmaster, 'SIGSTOP')
    for (const pid of childrenOf(postmaster)) signal(pid, 'SIGSTOP')
  }
  const thaw = (): void => {
    const postmaster = server!.child.pid!
    for (const pid of childrenOf(postmaster)) signal(pid, 'SIGCONT')
    signal(postmaster, 'SIGCONT')
    frozen = false
  }
  t.teardown(async () => {
    if (running() && frozen) thaw()
    await stopProcess(server, 'SIGQUIT')
    rmSync(dir, { recursive: true, force: true })
  })
  execFileSync(join(POSTGRES_BIN, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], { stdio: 'pipe', ...user })

  const start = async (): Promise<void> => {
    server = await launch(join(POSTGRES_BIN, 'postgres'), [
      '-D', dataDir, '-p', String(port),
      '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=',
      '-c', 'fsync=off', '-c', 'full_page_writes=off',
      '-c', 'max_connections=300'
    ], 'database system is ready to accept connections', user)
  }
  await start()
  const url = (database: string): string => `postgres://postgres@127.0.0.1:${port}/${database}`
  return {
    port,
    url,
    running,
    start,
    stop: async (signal = 'SIGQUIT') => { await stopProcess(server, signal) },
    freeze,
    thaw,
    createDatabase: async (name = 'switchboard') => {
      await ensureDatabase(url(name))
      await migrateDatabase(url(name))
      return { url: url(name), name, drop: async () => {} }
    }
  }
}

/** The machine's `redis-server` on a free port, without persistence: every start is empty. */
export async function startRedisServer (t: Teardown): Promise<StoreServer & { url: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-redis-'))
  const port = await freePort()
  let server: ServerProcess | undefined
  t.teardown(async () => {
    await stopProcess(server, 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })
  const start = async (): Promise<void> => {
    server = await launch('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
      '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'
    ], 'Ready to accept connections')
  }
  await start()
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    running: () => server !== undefined && server.child.exitCode === null && server.child.signalCode === null,
    start,
    stop: async (signal = 'SIGKILL') => { await stopProcess(server, signal) }
  }
}
