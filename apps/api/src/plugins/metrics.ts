import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import { metricsText, registerStoreMetrics } from '@switchboard/core/observability'

declare module 'fastify' {
  interface FastifyInstance {
    /** Where routes register their own metrics, served at /metrics. */
    metricsRegistry: Registry
  }
}

/**
 * Prometheus metrics at GET /metrics: process defaults, request durations by
 * route pattern (never the raw URL, so ids cannot explode the label set), store
 * state and the application's series (observability/metrics).
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
    const route = request.routeOptions.url ?? 'unknown'
    if (route === '/metrics') return
    duration.observe({ method: request.method, route, status_code: reply.statusCode }, reply.elapsedTime / 1000)
  })

  fastify.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    return reply.type(registry.contentType).send(await metricsText(registry))
  })
}

export default fp(metrics, { name: 'metrics' })
