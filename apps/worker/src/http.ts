import { collectDefaultMetrics, Registry } from 'prom-client'
import type { Logger } from '@switchboard/core/logger'
import { metricsText, sendJson, startProbeListener } from '@switchboard/core/observability'
import { redisAnswers } from '@switchboard/core/queues'
import { withTimeout } from '@switchboard/core/timeout'
import type { WorkerContext } from './context.ts'

const READY_TIMEOUT_MS = 2000

export interface Readiness { ready: boolean, checks: Record<string, string> }

/** Ready while Postgres and Redis both answer within 2 s. */
export async function storesReadiness ({ database, redis }: Pick<WorkerContext, 'database' | 'redis'>): Promise<Readiness> {
  const [db, queue] = await Promise.allSettled([
    withTimeout(database.sql`select 1`.execute(), READY_TIMEOUT_MS, 'database'),
    withTimeout(redisAnswers(redis), READY_TIMEOUT_MS, 'redis')
  ])
  const checks = {
    database: db.status === 'fulfilled' ? 'ok' : 'unavailable',
    redis: queue.status === 'fulfilled' ? 'ok' : 'unavailable'
  }
  return { ready: db.status === 'fulfilled' && queue.status === 'fulfilled', checks }
}

export interface WorkerHttp {
  port: number
  /** The process's own series (defaults; the stores' once connected), served with the application's. */
  registry: Registry
  close: () => Promise<void>
}

/**
 * The worker's own small listener, for probes and scraping (it serves no API):
 * GET /health/live (the process answers), /health/ready (`readiness()`), /metrics
 * (Prometheus: process defaults, store state and the application's series).
 */
export async function startWorkerHttp ({ host, port, logger, readiness }: {
  host: string
  port: number
  logger: Logger
  readiness: () => Promise<Readiness>
}): Promise<WorkerHttp> {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const listener = await startProbeListener({
    name: 'worker http',
    host,
    port,
    logger,
    routes: {
      '/health/live': async (res) => { sendJson(res, 200, { status: 'ok' }) },
      '/health/ready': async (res) => {
        const { ready, checks } = await readiness()
        sendJson(res, ready ? 200 : 503, { status: ready ? 'ok' : 'unavailable', checks })
      },
      '/metrics': async (res) => { res.writeHead(200, { 'content-type': registry.contentType }).end(await metricsText(registry)) }
    }
  })
  return { ...listener, registry }
}
