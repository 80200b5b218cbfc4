import type { FastifyInstance } from 'fastify'
import api from './api/index.ts'
import health from './health/index.ts'
import mcp from './mcp/index.ts'
import webhook from './webhook/index.ts'

/** Every route, each folder registered under the URL prefix it is named after. */
export default async function routes (fastify: FastifyInstance): Promise<void> {
  await fastify.register(health, { prefix: '/health' })
  await fastify.register(api, { prefix: '/api' })
  await fastify.register(webhook, { prefix: '/webhook' })
  await fastify.register(mcp, { prefix: '/mcp' })
}
