import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { pathOf } from '../request-log.ts'

/** What machines poll every few seconds (probes): their spans would bury the requests that matter. Scrapes never reach Fastify. */
const UNTRACED = new Set(['/health/live', '/health/ready'])

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
    // An error's stack stays in the process; its message is on the span's status (tracing.ts bounds it).
    recordExceptions: false,
    ignorePaths: ({ url }) => UNTRACED.has(url.split('?')[0] ?? url),
    requestHook: (span, request) => {
      // HTTP semantic conventions: a server span is named by its method and route, never the raw URL.
      span.updateName(request.routeOptions.url === undefined ? request.method : `${request.method} ${request.routeOptions.url}`)
      span.setAttributes({
        // The plugin records the URL with its query string, where secrets travel (build.ts, requestForLog).
        'url.path': pathOf(request),
        // The id on the request's log lines and its run's (README, Operations: Logs).
        'switchboard.request.id': request.id
      })
    }
  })
  await fastify.register(instrumentation.plugin())
}

export default fp(tracing, { name: 'tracing' })
