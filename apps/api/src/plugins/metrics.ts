import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import { metricsText, registerStoreMetrics } from '@switchboard/core/observability'

declare module 'fastify' {
  interface FastifyInstance {
    /** Where routes register their own metrics, served by the metrics listener. */
    metricsRegistry: Registry
    /** The metrics listener (API_METRICS_PORT); its port is known once the api is ready. */
    metricsListener: { port: number }
  }
}

function json (res: ServerResponse, status: number, error: string, code: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' })
    .end(JSON.stringify({ statusCode: status, code, error, message: error }))
}

/**
 * Prometheus metrics on a listener of their own (API_METRICS_PORT, on HOST), never on the public
 * port: the series tell login outcomes, queue depths and store state, and a scrape makes the
 * stores work (README, Security). Process defaults, request durations by route pattern
 * (never the raw URL, so ids cannot explode the label set), store state and the application's
 * series (observability/metrics). node:http, as the worker's listener: one GET route needs no framework.
 */
async function metrics (fastify: FastifyInstance): Promise<void> {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  fastify.decorate('metricsRegistry', registry)
  registerStoreMetrics(registry, { database: fastify.database, databasePoolMax: fastify.config.databasePoolMax, redis: { producer: fastify.redis }, queues: fastify.queues })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, route and status code',
    labelNames: ['method', 'route', 'status_code'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry]
  })

  fastify.addHook('onResponse', async (request, reply) => {
    duration.observe({ method: request.method, route: request.routeOptions.url ?? 'unknown', status_code: reply.statusCode }, reply.elapsedTime / 1000)
  })

  const server = createServer((req, res) => {
    if (req.method !== 'GET') {
      json(res, 405, 'Method Not Allowed', 'METHOD_NOT_ALLOWED')
    } else if ((req.url ?? '/').split('?')[0] !== '/metrics') {
      json(res, 404, 'Not Found', 'NOT_FOUND')
    } else {
      metricsText(registry).then((text) => {
        res.writeHead(200, { 'content-type': registry.contentType }).end(text)
      }, (err: unknown) => {
        fastify.log.error({ err }, 'metrics scrape failed')
        json(res, 500, 'Internal Server Error', 'INTERNAL_SERVER_ERROR')
      })
    }
  })
  // Scrapes only: no slow client may hold a connection for long.
  server.requestTimeout = 10_000
  const listener = { port: fastify.config.apiMetricsPort }
  fastify.decorate('metricsListener', listener)

  fastify.addHook('onReady', async () => {
    server.listen(fastify.config.apiMetricsPort, fastify.config.host)
    // Rejects with the listen error (a port in use): the api does not start without its metrics.
    await once(server, 'listening')
    listener.port = (server.address() as AddressInfo).port
    fastify.log.info({ host: fastify.config.host, port: listener.port }, 'metrics listening')
  })
  fastify.addHook('onClose', async () => {
    if (!server.listening) return
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  })
}

export default fp(metrics, { name: 'metrics' })
