import type { FastifyInstance } from 'fastify'
import chat from './chat/index.ts'
import resume from './resume/index.ts'

/** /webhook: platforms calling in, public (each authenticates its own way). */
export default async function webhook (fastify: FastifyInstance): Promise<void> {
  await fastify.register(chat, { prefix: '/chat' })
  await fastify.register(resume, { prefix: '/resume' })
}
