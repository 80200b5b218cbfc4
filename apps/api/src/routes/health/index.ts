import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { withTimeout } from '@switchboard/core/timeout'
import { Check } from './schemas.ts'

const READY_TIMEOUT_MS = 2000

/** Liveness says the process answers; readiness that Postgres and Redis do too. */
const health: FastifyPluginAsyncTypebox = async (fastify) => {
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
      withTimeout(fastify.redis.ping(), READY_TIMEOUT_MS, 'redis')
    ])
    const checks = {
      database: database.status === 'fulfilled' ? 'ok' : 'unavailable',
      redis: redis.status === 'fulfilled' ? 'ok' : 'unavailable'
    }
    const ready = database.status === 'fulfilled' && redis.status === 'fulfilled'
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', checks })
  })
}

export default health
