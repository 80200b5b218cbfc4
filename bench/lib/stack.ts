import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createDatabase, type Database } from '@switchboard/core/db'
import { testEnv, TEST_ADMIN } from '@switchboard/testing/config'
import { createTestClient, httpTransport, type TestClient } from '@switchboard/testing/client'
import { createTestDatabase, uniqueQueuePrefix } from '@switchboard/testing/database'
import { freePort } from '@switchboard/testing/processes'
import { deleteQueuePrefix } from '@switchboard/testing/redis'
import { launch, type BenchProcess, type Mode } from './processes.ts'

/** What every scenario gets from the runner. */
export interface BenchContext {
  quick: boolean
  /** F seeds 10,000,000 runs and reads at 50 connections, against tighter targets. */
  scale: boolean
  mode: Mode
  /** LOG_LEVEL of the api and worker processes. */
  logLevel: string
  /** Connections of the load generator in the throughput scenarios. */
  connections: number
  logDir: string
  /** Clean-up, run when the scenario ends (last registered first). */
  teardown: (fn: () => unknown) => void
}

export interface Stack {
  baseUrl: string
  env: Record<string, string>
  /** The bench's own connection to the stack's database, for seeding and for reading results. */
  sql: Database['sql']
  api: BenchProcess
  worker?: BenchProcess
  /** Starts the worker process (when the stack was started without one). */
  startWorker: () => Promise<BenchProcess>
  client: TestClient
  adminToken: () => Promise<string>
}

/** A database cloned from the migrated template and a queue prefix of their own, removed at teardown. */
export async function isolatedStores (ctx: BenchContext): Promise<{ databaseUrl: string, queuePrefix: string, sql: Database['sql'] }> {
  const database = await createTestDatabase()
  const queuePrefix = uniqueQueuePrefix()
  const own = createDatabase(database.url, { max: 2 })
  ctx.teardown(async () => {
    await own.close()
    await deleteQueuePrefix(queuePrefix)
    await database.drop()
  })
  return { databaseUrl: database.url, queuePrefix, sql: own.sql }
}

/**
 * One api process and, unless `worker` is false, one worker process of Switchboard on
 * stores of their own, each logging to a file of the scenario's log directory.
 */
export async function startStack (ctx: BenchContext, name: string, options: { worker?: boolean, env?: Record<string, string> } = {}): Promise<Stack> {
  const { databaseUrl, queuePrefix, sql } = await isolatedStores(ctx)
  const port = await freePort()
  const env = {
    // The scenarios fire far more than a user's default start quota (60,000 a minute): the check is
    // made and measured, its limit is out of the way.
    ...testEnv(databaseUrl, queuePrefix, { USER_QUOTA_RUNS_PER_MINUTE: '100000000', ...options.env }),
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: ctx.logLevel
  }
  const baseUrl = `http://127.0.0.1:${port}`
  const api = await launch({ name: `${name}-api`, entry: 'apps/api/src/server.ts', env, readyUrl: `${baseUrl}/health/ready`, logDir: ctx.logDir, mode: ctx.mode })
  ctx.teardown(api.stop)
  const stack: Stack = {
    baseUrl,
    env,
    sql,
    api,
    startWorker: async () => {
      const workerPort = await freePort()
      const worker = await launch({
        name: `${name}-worker`,
        entry: 'apps/worker/src/main.ts',
        env: { ...env, WORKER_HTTP_PORT: String(workerPort) },
        readyUrl: `http://127.0.0.1:${workerPort}/health/ready`,
        logDir: ctx.logDir,
        mode: ctx.mode
      })
      ctx.teardown(worker.stop)
      stack.worker = worker
      return worker
    },
    client: createTestClient(httpTransport(baseUrl)),
    adminToken: async () => { token ??= await stack.client.login(TEST_ADMIN); return token }
  }
  let token: string | undefined
  if (options.worker !== false) await stack.startWorker()
  return stack
}

/**
 * Serves `server` on a free loopback port until the scenario ends, with keep-alive longer than the
 * load generator's, and returns its base URL (`http://127.0.0.1:<port>`).
 */
export async function serveOnLoopback (ctx: BenchContext, server: Server): Promise<string> {
  server.keepAliveTimeout = 72_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  ctx.teardown(async () => {
    server.closeAllConnections()
    server.close()
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}
