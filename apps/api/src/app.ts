import type { FastifyInstance } from 'fastify'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import type { Config } from '@switchboard/core/config'
import { tracingOn } from '@switchboard/core/observability'
import services from './plugins/app/index.ts'
import auth from './plugins/auth.ts'
import consoleApp from './plugins/console.ts'
import context from './plugins/context.ts'
import deadline from './plugins/deadline.ts'
import docs from './plugins/docs.ts'
import errors from './plugins/errors.ts'
import jsonBody from './plugins/json-body.ts'
import metrics from './plugins/metrics.ts'
import requestId from './plugins/request-id.ts'
import requestTimeout from './plugins/request-timeout.ts'
import routes from './routes/index.ts'
import tracing from './plugins/tracing.ts'

export interface AppOptions {
  config: Config
}

/** The whole API as one plugin: external plugins, then ours, then the services, then the routes and the console. */
export async function app (fastify: FastifyInstance, opts: AppOptions): Promise<void> {
  // First, so that it wraps every route's handler; only while tracing is on (README, Operations: Traces).
  if (tracingOn) await fastify.register(tracing)
  await fastify.register(context, { config: opts.config })
  await fastify.register(requestId)
  await fastify.register(requestTimeout)
  await fastify.register(deadline)
  await fastify.register(errors)
  await fastify.register(jsonBody)
  // Not strict: an OPTIONS request without Origin or Access-Control-Request-Method gets the
  // CORS headers (they reveal nothing) instead of the plugin's text/plain 400, which no client can parse.
  await fastify.register(cors, { origin: true, strictPreflight: false })
  await fastify.register(rateLimit, {
    global: false,
    // After parsing, so that limits can be keyed by the body (login: per account).
    hook: 'preHandler',
    redis: fastify.redis,
    nameSpace: `${opts.config.queuePrefix}:rate-limit:`,
    // A Redis outage must not lock users out.
    skipOnError: true
  })
  await fastify.register(docs)
  await fastify.register(metrics)
  await fastify.register(services)
  await fastify.register(auth)
  await fastify.register(routes)
  await fastify.register(consoleApp)

  fastify.addHook('onReady', async () => {
    await fastify.users.ensureAdmin(opts.config.adminEmail, opts.config.adminPassword)
  })
}
