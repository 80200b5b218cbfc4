import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import audit from './audit.ts'
import chat from './chat.ts'
import credentials from './credentials.ts'
import runs from './runs.ts'
import subscriptions from './subscriptions.ts'
import triggers from './triggers.ts'
import users from './users.ts'
import workflows from './workflows.ts'

/**
 * The services and repositories of every domain, created once and decorated on the
 * instance: routes read them from there (`fastify.workflows`, `fastify.runs`,
 * `fastify.triggers`…) and
 * build nothing themselves.
 */
async function services (fastify: FastifyInstance): Promise<void> {
  await fastify.register(users)
  await fastify.register(workflows)
  await fastify.register(runs)
  await fastify.register(triggers)
  await fastify.register(chat)
  await fastify.register(credentials)
  await fastify.register(audit)
  await fastify.register(subscriptions)
}

export default fp(services, { name: 'services', dependencies: ['context'] })
