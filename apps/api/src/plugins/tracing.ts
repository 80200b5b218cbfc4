import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** What machines poll every few seconds (probes, scrapes): their spans would bury the requests that matter. */
const UNTRACED = new Set(['/health/live', '/health/ready', '/metrics'])

/**
 * A server span per request (`POST /api/automation/workflows/:id/fire`), continuing the caller's
 * W3C traceparent, with a span for the route's handler that is the active context while the handler
 * runs: a run started there is its child (runs/group-start.ts). @fastify/otel, loaded and
 * registered only while tracing is on (app.ts); Fastify's hooks get no span of their own.
 */
async function tracing (fastify: FastifyInstance): Promise<void> {
  const { FastifyOtelInstrumentation } = await import('@fastify/otel')
  const instrumentation = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    ignorePaths: ({ url }) => UNTRACED.has(url.split('?')[0] ?? url),
    // HTTP semantic conventions: a server span is named by its method and route, never the raw URL.
    requestHook: (span, request) => { span.updateName(request.routeOptions.url === undefined ? request.method : `${request.method} ${request.routeOptions.url}`) }
  })
  await fastify.register(instrumentation.plugin())
}

export default fp(tracing, { name: 'tracing' })
