import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { existsSync } from 'node:fs'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { createTestDatabase, uniqueQueuePrefix, type TestDatabase } from './database.ts'
import { entryArgs } from './entries.ts'
import { deleteQueuePrefix } from './redis.ts'
import { testEnv, TEST_ADMIN } from './config.ts'
import { createTestClient, httpTransport, type TestClient } from './client.ts'
import type { Teardown } from './teardown.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/**
 * Ports handed to servers a test starts later come from below Linux's ephemeral range
 * (32768 and up): a port the kernel chose with bind(0) and released may be taken again, before
 * the server binds it, as the local port of any outgoing connection of the parallel test files.
 * Each of tap's job slots (`TAP_JOB_ID`, distinct among the files running at once; tap runs at
 * most 3) draws from a part of its own, the fourth part being the reliability tier's second tap
 * (`TEST_PORT_SLOT=3`, tests/tap/run.ts), and a file never gets one port twice: a port is free
 * when it is handed out, not when its server starts, and two files (or two servers of one file)
 * drew the same one.
 */
const TEST_PORTS = { from: 20_000, to: 32_000 }
const JOB_SLOTS = 4
const SLOT_PORTS = (TEST_PORTS.to - TEST_PORTS.from) / JOB_SLOTS
const SLOT_FROM = TEST_PORTS.from + (Number(process.env.TEST_PORT_SLOT ?? process.env.TAP_JOB_ID ?? 0) % JOB_SLOTS) * SLOT_PORTS
const handedOut = new Set<number>()

/** A port nothing listens on now and not handed out before, for a server the caller starts. */
export async function freePort (): Promise<number> {
  for (;;) {
    const port = SLOT_FROM + Math.floor(Math.random() * SLOT_PORTS)
    if (handedOut.has(port)) continue
    const server = createServer()
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => { resolve(false) })
      server.listen(port, '127.0.0.1', () => { resolve(true) })
    })
    if (!bound) continue
    server.close()
    await once(server, 'close')
    handedOut.add(port)
    return port
  }
}

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path))
const ENV = ['/usr/bin/env', '/bin/env'].find((path) => existsSync(path))

/** `NODE_OPTIONS` without what tap adds to it (its process tracker's loader), or undefined when nothing is left. */
function withoutTapOptions (nodeOptions: string | undefined): string | undefined {
  const kept = (nodeOptions ?? '').match(/(?:[^\s"]+|"[^"]*")+/g)?.filter((option) => !option.includes('@tapjs/')) ?? []
  return kept.length === 0 ? undefined : kept.join(' ')
}

/**
 * Spawns a process that dies with the test process however that ends (a time-out, an error
 * before its teardown ran): util-linux's setpriv has the kernel send it SIGKILL when its parent
 * exits. Without setpriv it is a plain spawn, and only teardown stops it.
 *
 * tap's process tracker, loaded in every test file, adds its module loader to the NODE_OPTIONS
 * of every process the file spawns, whatever `options.env` says. It serves coverage, which the
 * project turns off, and it doubled the CPU an api or a worker takes to start (docs/testing.md),
 * so `env` sets the process's NODE_OPTIONS to those of `options.env` without tap's.
 */
export function spawnTied (command: string, args: string[], options: SpawnOptions): ChildProcess {
  const nodeOptions = withoutTapOptions((options.env ?? process.env).NODE_OPTIONS)
  const clean = ENV === undefined ? [command, ...args] : [ENV, ...(nodeOptions === undefined ? ['-u', 'NODE_OPTIONS'] : [`NODE_OPTIONS=${nodeOptions}`]), command, ...args]
  return SETPRIV === undefined ? spawn(clean[0]!, clean.slice(1), options) : spawn(SETPRIV, ['--pdeathsig', 'KILL', '--', ...clean], options)
}

export interface ManagedProcess {
  child: ChildProcess
  /** Everything the process printed, for assertions and failure messages. */
  output: () => string
  /** Sends the signal and waits for the process to exit. */
  stop: (signal?: NodeJS.Signals) => Promise<void>
}

/** Loading takes seconds (more through tsx), more when several processes start at once on a busy machine. */
const START_TIMEOUT_MS = 60_000

type ReadyCheck = (output: string) => boolean | Promise<boolean>

function launch (entry: string, env: Record<string, string>, isReady: ReadyCheck): Promise<ManagedProcess> {
  const child = spawnTied(process.execPath, entryArgs(entry), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  const exited = once(child, 'exit')
  const managed: ManagedProcess = {
    child,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill(signal)
      await exited
    }
  }
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + START_TIMEOUT_MS
    const poll = async (): Promise<void> => {
      if (child.exitCode !== null || child.signalCode !== null) {
        reject(new Error(`${entry} exited with ${child.exitCode ?? child.signalCode} before it was ready:\n${output}`))
      } else if (await isReady(output)) {
        resolve(managed)
      } else if (Date.now() > deadline) {
        child.kill('SIGKILL')
        reject(new Error(`${entry} did not start within ${START_TIMEOUT_MS / 1000}s:\n${output}`))
      } else {
        setTimeout(() => { poll().catch(reject) }, 50)
      }
    }
    poll().catch(reject)
  })
}

export interface ApiProcess extends ManagedProcess {
  baseUrl: string
  /** Its metrics listener (API_METRICS_PORT): `${metricsUrl}/metrics`. */
  metricsUrl: string
}

export interface Stack {
  /** The first api's address. */
  baseUrl: string
  /** The first api's metrics listener. */
  metricsUrl: string
  env: Record<string, string>
  /** The first api process. */
  api: ApiProcess
  /** Every api process started, the first included, each on a port of its own. */
  apis: ApiProcess[]
  workers: ManagedProcess[]
  /** Starts one more api process on the same database and queues, with `env` over the stack's settings. */
  startApi: (env?: Record<string, string>) => Promise<ApiProcess>
  /** Starts one more worker process on the same database and queues. */
  startWorker: () => Promise<ManagedProcess>
  /** Logs in as the admin and returns the token. */
  adminToken: () => Promise<string>
  client: TestClient
  /** The client's `call`: fetch against the API with an optional bearer token and a JSON body. */
  call: TestClient['call']
}

export interface StackOptions {
  env?: Record<string, string>
  /** Settings of the worker processes only, over `env` (a database role of their own). */
  workerEnv?: Record<string, string>
  /** How many api processes to start (default 1). */
  apis?: number
  /** How many worker processes to start (default 1). */
  workers?: number
  /** A database the test prepared (default: a fresh migrated one); dropped at teardown either way. */
  database?: TestDatabase
  /** A Redis of the test's own (`startRedisServer`), which it cleans up itself; default: the shared one, under a fresh prefix. */
  redisUrl?: string
}

/**
 * The real api and worker processes on a database and queue prefix of their own,
 * for end-to-end tests. Everything is stopped and dropped at teardown.
 */
export async function startStack (t: Teardown, options: StackOptions = {}): Promise<Stack> {
  const database = options.database ?? await createTestDatabase()
  const queuePrefix = uniqueQueuePrefix()
  const env = {
    ...testEnv(database.url, queuePrefix, { ...(options.redisUrl !== undefined && { REDIS_URL: options.redisUrl }), ...options.env }),
    HOST: '127.0.0.1',
    LOG_LEVEL: options.env?.LOG_LEVEL ?? 'info'
  }
  const processes: ManagedProcess[] = []
  t.teardown(async () => {
    await Promise.all(processes.map(async (p) => { await p.stop('SIGKILL') }))
    if (options.redisUrl === undefined) await deleteQueuePrefix(queuePrefix)
    await database.drop()
  })

  const startWorker = async (): Promise<ManagedProcess> => {
    // The worker says it is ready in an info line, whatever level the test chose for the rest.
    const level = ['warn', 'error', 'fatal', 'silent'].includes(env.LOG_LEVEL) ? 'info' : env.LOG_LEVEL
    const worker = await launch('apps/worker/src/main.ts', { ...env, ...options.workerEnv, LOG_LEVEL: level }, (output) => output.includes('worker started'))
    processes.push(worker)
    workers.push(worker)
    return worker
  }

  const apis: ApiProcess[] = []
  const startApi = async (apiEnv: Record<string, string> = {}): Promise<ApiProcess> => {
    const port = await freePort()
    let metricsPort = await freePort()
    while (metricsPort === port) metricsPort = await freePort()
    const baseUrl = `http://127.0.0.1:${port}`
    const api = await launch('apps/api/src/server.ts', { ...env, ...apiEnv, PORT: String(port), API_METRICS_PORT: String(metricsPort) }, async () => {
      try {
        return (await fetch(`${baseUrl}/health/live`)).ok
      } catch {
        return false
      }
    })
    processes.push(api)
    apis.push({ ...api, baseUrl, metricsUrl: `http://127.0.0.1:${metricsPort}` })
    return apis.at(-1)!
  }

  const workers: ManagedProcess[] = []
  // Each process spends seconds of CPU loading before it listens: one per core at a time, so
  // that none waits out its start time-out behind the others on a small machine.
  const starts: Array<() => Promise<unknown>> = [
    ...Array.from({ length: options.apis ?? 1 }, () => async () => await startApi()),
    ...Array.from({ length: options.workers ?? 1 }, () => startWorker)
  ]
  await Promise.all(Array.from({ length: Math.min(availableParallelism(), starts.length) }, async () => {
    for (let start = starts.shift(); start !== undefined; start = starts.shift()) await start()
  }))
  const api = apis[0]!
  const { baseUrl, metricsUrl } = api

  const client = createTestClient(httpTransport(baseUrl))
  let token: string | undefined
  const adminToken = async (): Promise<string> => {
    token ??= await client.login(TEST_ADMIN)
    return token
  }

  return { baseUrl, metricsUrl, env, api, apis, workers, startApi, startWorker, adminToken, client, call: client.call }
}
