import type { FastifyInstance } from 'fastify'
import audit from './audit/index.ts'
import auth from './auth/index.ts'
import automation from './automation/index.ts'
import chat from './chat/index.ts'
import users from './users/index.ts'

/** /api: bearer-token routes (the auth plugin's rule), but for those marked public. */
export default async function api (fastify: FastifyInstance): Promise<void> {
  await fastify.register(auth, { prefix: '/auth' })
  await fastify.register(users, { prefix: '/users' })
  await fastify.register(automation, { prefix: '/automation' })
  await fastify.register(chat, { prefix: '/chat' })
  await fastify.register(audit, { prefix: '/audit' })
}
