import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { redisAnswers } from '@switchboard/core/queues'
import { withTimeout } from '@switchboard/core/timeout'
import { Check } from './schemas.ts'

const READY_TIMEOUT_MS = 2000

/**
 * Liveness says the process answers. Readiness depends on Postgres only: without Redis the api
 * still serves (queue counters per queue, login without its limiter, non-CRON workflow saves),
 * so a Redis outage shows as `degraded` in a 200 rather than taking every pod out of the Service.
 */
const health: FastifyPluginAsyncTypebox = async (fastify) => {
  // The assistant's state is information, never a reason to be unready (README, The assistant).
  const { model } = fastify.config.ai
  const details = {
    assistant: model === undefined
      ? 'off: AI_MODEL is not set (an account may set its own model)'
      : `on: model ${model}`
  }

  fastify.get('/live', {
    config: { public: true },
    schema: { tags: ['health'], security: [], response: { 200: Check } }
  }, async () => ({ status: 'ok' }))

  fastify.get('/ready', {
    config: { public: true },
    schema: { tags: ['health'], security: [], response: { 200: Check, 503: Check } }
  }, async (_request, reply) => {
    const [database, redis] = await Promise.allSettled([
      withTimeout(fastify.database.sql`select 1`.execute(), READY_TIMEOUT_MS, 'database'),
      withTimeout(redisAnswers(fastify.redis), READY_TIMEOUT_MS, 'redis')
    ])
    const checks = {
      database: database.status === 'fulfilled' ? 'ok' : 'unavailable',
      redis: redis.status === 'fulfilled' ? 'ok' : 'unavailable'
    }
    if (database.status !== 'fulfilled') return reply.code(503).send({ status: 'unavailable', checks, details })
    return reply.code(200).send({ status: redis.status === 'fulfilled' ? 'ok' : 'degraded', checks, details })
  })
}

export default health
