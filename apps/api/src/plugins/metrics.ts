import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import { NODE_TYPES } from '@switchboard/core/engine'
import { metricsText, registerStoreMetrics, startProbeListener, zeroNodeSeries, type ProbeListener } from '@switchboard/core/observability'

declare module 'fastify' {
  interface FastifyInstance {
    /** Where routes register their own metrics, served by the metrics listener. */
    metricsRegistry: Registry
    /** The metrics listener (API_METRICS_PORT); its port is known once the api is ready. */
    metricsListener: { port: number }
  }
}

/**
 * Prometheus metrics on a listener of their own (API_METRICS_PORT, on HOST), never on the public
 * port: the series tell login outcomes, queue depths and store state, and a scrape makes the
 * stores work (README, Security). Process defaults, request durations by route pattern
 * (never the raw URL, so ids cannot explode the label set), store state and the application's
 * series (observability/metrics), on the probe listener the worker uses too.
 */
async function metrics (fastify: FastifyInstance): Promise<void> {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  fastify.decorate('metricsRegistry', registry)
  zeroNodeSeries(NODE_TYPES)
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

  const listener = { port: fastify.config.apiMetricsPort }
  fastify.decorate('metricsListener', listener)
  let started: ProbeListener | undefined

  // Rejects with the listen error (a port in use): the api does not start without its metrics.
  fastify.addHook('onReady', async () => {
    started = await startProbeListener({
      name: 'metrics',
      host: fastify.config.host,
      port: fastify.config.apiMetricsPort,
      logger: fastify.log,
      routes: { '/metrics': async (res) => { res.writeHead(200, { 'content-type': registry.contentType }).end(await metricsText(registry)) } }
    })
    listener.port = started.port
  })
  fastify.addHook('onClose', async () => { await started?.close() })
}

export default fp(metrics, { name: 'metrics' })
