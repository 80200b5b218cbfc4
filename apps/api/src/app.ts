import type { FastifyInstance } from 'fastify'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import type { Config } from '@switchboard/core/config'
import { usersRepository } from '@switchboard/core/users'
import { createScheduleSync } from '@switchboard/core/schedules'
import auth from './plugins/auth.ts'
import context from './plugins/context.ts'
import docs from './plugins/docs.ts'
import errors from './plugins/errors.ts'
import jsonBody from './plugins/json-body.ts'
import metrics from './plugins/metrics.ts'
import authRoutes from './routes/auth.ts'
import healthRoutes from './routes/health.ts'
import userRoutes from './routes/users.ts'
import workflowRoutes from './routes/automation/workflows.ts'
import eventRoutes from './routes/automation/events.ts'
import fireRoutes from './routes/automation/fire.ts'
import queueRoutes from './routes/automation/queues.ts'
import runRoutes from './routes/automation/runs.ts'
import inboundWebhookRoutes from './routes/automation/webhook.ts'
import chat from './plugins/chat.ts'
import chatAccountRoutes from './routes/chat/accounts.ts'
import chatConversationRoutes from './routes/chat/conversations.ts'
import chatSendRoutes from './routes/chat/send.ts'
import chatTemplateRoutes from './routes/chat/templates.ts'
import chatWebhookRoutes from './routes/webhook-chat.ts'

export interface AppOptions {
  config: Config
}

/** The whole API as one plugin: external plugins, then ours, then the routes. */
export async function app (fastify: FastifyInstance, opts: AppOptions): Promise<void> {
  await fastify.register(context, { config: opts.config })
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
  await fastify.register(auth)

  await fastify.register(healthRoutes)
  await fastify.register(authRoutes)
  await fastify.register(userRoutes)
  await fastify.register(workflowRoutes, { scheduleSync: createScheduleSync({ db: fastify.db, queue: fastify.queues['scheduled-tasks'] }) })
  await fastify.register(fireRoutes)
  await fastify.register(inboundWebhookRoutes)
  await fastify.register(eventRoutes)
  await fastify.register(runRoutes)
  await fastify.register(queueRoutes)
  await fastify.register(chat)
  await fastify.register(chatAccountRoutes)
  await fastify.register(chatSendRoutes)
  await fastify.register(chatTemplateRoutes)
  await fastify.register(chatConversationRoutes)
  await fastify.register(chatWebhookRoutes)

  fastify.addHook('onReady', async () => {
    await usersRepository(fastify.db).ensureAdmin(opts.config.adminEmail, opts.config.adminPassword)
  })
}
