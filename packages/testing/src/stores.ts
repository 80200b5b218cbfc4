import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createConnection } from 'node:net'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import { ensureDatabase, migrateDatabase } from '@switchboard/core/db'
import { freePort } from './processes.ts'
import type { Teardown } from './teardown.ts'

/** The server binaries of the machine's PostgreSQL (Debian's layout); POSTGRES_BIN moves them. */
const POSTGRES_BIN = process.env.POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin'

/**
 * A store of a test's own, on a free loopback port, which the test may stop, kill, freeze and
 * start again without disturbing the shared PostgreSQL and Redis. Its data goes at teardown.
 */
interface OwnStore {
  port: number
  url: string
  /** Starts the server again (after `stop` or `kill`) on the same port and data. */
  start: () => Promise<void>
  /** A clean shutdown: PostgreSQL's fast mode (sessions ended), Redis' SHUTDOWN NOSAVE. */
  stop: () => Promise<void>
  /** SIGKILL: no goodbye to the clients; an empty Redis when started again. */
  kill: () => Promise<void>
  /** SIGSTOP to the server and its child processes: connections stay open and nothing answers. */
  freeze: () => void
  /** SIGCONT: the frozen server carries on with what it had received. */
  thaw: () => void
}

interface ServerProcess {
  child: ChildProcess
  exited: Promise<unknown>
  output: () => string
}

/** Starts a server that dies with the test process, however that ends. */
function launch (command: string, args: string[], asUser?: { uid: number, gid: number }): ServerProcess {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...asUser })
  const killOnExit = (): void => { child.kill('SIGKILL') }
  process.once('exit', killOnExit)
  child.once('exit', () => { process.off('exit', killOnExit) })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  return { child, exited: once(child, 'exit'), output: () => output }
}

/** The direct children of `pid` (PostgreSQL's backends, each in a session of its own), from /proc. */
function childrenOf (pid: number): number[] {
  const children: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // pid (comm) state ppid …: the command may hold spaces and parentheses, so read after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry))
    } catch {
      // The process ended meanwhile.
    }
  }
  return children
}

const running = (server: ServerProcess | undefined): server is ServerProcess =>
  server !== undefined && server.child.exitCode === null && server.child.signalCode === null

async function accepts (port: number): Promise<boolean> {
  const socket = createConnection({ port, host: '127.0.0.1' })
  try {
    await once(socket, 'connect')
    return true
  } catch {
    return false
  } finally {
    socket.destroy()
  }
}

async function waitUntil (what: string, check: () => Promise<boolean>, server: ServerProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await check()) {
    if (server.child.exitCode !== null) throw new Error(`${what} exited before it was ready:\n${server.output()}`)
    if (Date.now() > deadline) throw new Error(`${what} was not ready within ${timeoutMs} ms:\n${server.output()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Signals the server and every process it started (a freeze must reach the backends that hold the connections). */
function signalAll (server: ServerProcess | undefined, signal: NodeJS.Signals): void {
  if (!running(server)) return
  const pid = server.child.pid!
  for (const target of [pid, ...childrenOf(pid)]) {
    try {
      process.kill(target, signal)
    } catch {
      // Ended meanwhile.
    }
  }
}

async function end (server: ServerProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  if (!running(server)) return
  signalAll(server, 'SIGCONT')
  server.child.kill(signal)
  await server.exited
}

/** PostgreSQL refuses to run as root: as root, the cluster belongs to the user `postgres` the server package created. */
function serverUser (): { uid: number, gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined
  const entry = readFileSync('/etc/passwd', 'utf8').split('\n').find((line) => line.startsWith('postgres:'))
  if (entry === undefined) throw new Error('running as root, a PostgreSQL of its own needs the user postgres to run it')
  const [, , uid, gid] = entry.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}

/**
 * A PostgreSQL cluster of the test's own (initdb from the machine's server binaries, trust on
 * loopback, no Unix socket, fsync off), with the database `switchboard` migrated. `kill` is an
 * immediate shutdown (SIGQUIT: clients cut at once, crash recovery at the next start).
 */
export async function startOwnPostgres (t: Teardown): Promise<OwnStore> {
  const dataDir = mkdtempSync('/tmp/switchboard-own-pg-')
  const asUser = serverUser()
  if (asUser !== undefined) chownSync(dataDir, asUser.uid, asUser.gid)
  const port = await freePort()
  let server: ServerProcess | undefined
  t.teardown(async () => {
    await end(server, 'SIGQUIT')
    rmSync(dataDir, { recursive: true, force: true })
  })

  const initdb = launch(join(POSTGRES_BIN, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync'], asUser)
  const [code] = await initdb.exited as [number | null]
  if (code !== 0) throw new Error(`initdb failed:\n${initdb.output()}`)

  const start = async (): Promise<void> => {
    server = launch(join(POSTGRES_BIN, 'postgres'), [
      '-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=',
      // A kill stops the process, not the machine: what reached the kernel survives without fsync. Commits
      // stay synchronous, or an immediate shutdown would lose runs whose requests were answered.
      '-c', 'fsync=off', '-c', 'full_page_writes=off'
    ], asUser)
    const current = server
    await waitUntil('PostgreSQL', async () => await accepts(port) && current.output().includes('ready to accept connections'), current)
  }
  await start()
  const url = `postgres://postgres@127.0.0.1:${port}/switchboard`
  await ensureDatabase(url)
  await migrateDatabase(url)
  return {
    port,
    url,
    start,
    stop: async () => { await end(server, 'SIGINT') },
    kill: async () => { await end(server, 'SIGQUIT') },
    freeze: () => { signalAll(server, 'SIGSTOP') },
    thaw: () => { signalAll(server, 'SIGCONT') }
  }
}

/** A redis-server of the test's own, without persistence (noeviction unless told otherwise): started again after `stop` or `kill`, it is empty. */
export async function startOwnRedis (t: Teardown, { maxmemoryPolicy = 'noeviction' }: { maxmemoryPolicy?: string } = {}): Promise<OwnStore> {
  const port = await freePort()
  let server: ServerProcess | undefined
  t.teardown(async () => { await end(server, 'SIGKILL') })

  const start = async (): Promise<void> => {
    server = launch('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', maxmemoryPolicy])
    const current = server
    await waitUntil('redis-server', async () => await accepts(port) && current.output().includes('Ready to accept connections'), current)
  }
  await start()
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop: async () => { await end(server, 'SIGTERM') },
    kill: async () => { await end(server, 'SIGKILL') },
    freeze: () => { signalAll(server, 'SIGSTOP') },
    thaw: () => { signalAll(server, 'SIGCONT') }
  }
}
