import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { collectDefaultMetrics, Registry } from 'prom-client'
import type { Logger } from '@switchboard/core/logger'
import { metricsText } from '@switchboard/core/observability'
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

function json (res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body))
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

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    if (req.method !== 'GET') {
      json(res, 405, { statusCode: 405, code: 'METHOD_NOT_ALLOWED', error: 'Method Not Allowed', message: 'Method Not Allowed' })
      return
    }
    const answer = async (): Promise<void> => {
      if (path === '/health/live') {
        json(res, 200, { status: 'ok' })
      } else if (path === '/health/ready') {
        const { ready, checks } = await readiness()
        json(res, ready ? 200 : 503, { status: ready ? 'ok' : 'unavailable', checks })
      } else if (path === '/metrics') {
        res.writeHead(200, { 'content-type': registry.contentType }).end(await metricsText(registry))
      } else {
        json(res, 404, { statusCode: 404, code: 'NOT_FOUND', error: 'Not Found', message: 'Not Found' })
      }
    }
    answer().catch((err: unknown) => {
      logger.error({ err, path }, 'worker http request failed')
      if (!res.headersSent) json(res, 500, { statusCode: 500, code: 'INTERNAL_SERVER_ERROR', error: 'Internal Server Error', message: 'Internal Server Error' })
    })
  })
  // Probes and scrapes only: no slow client may hold a connection for long.
  server.requestTimeout = 10_000
  server.listen(port, host)
  await once(server, 'listening')
  const bound = (server.address() as AddressInfo).port
  logger.info({ host, port: bound }, 'worker http listening')
  return {
    port: bound,
    registry,
    close: async () => {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    }
  }
}
