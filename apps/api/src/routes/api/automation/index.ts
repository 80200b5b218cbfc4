import type { FastifyInstance } from 'fastify'
import approvals from './approvals/index.ts'
import credentials from './credentials/index.ts'
import events from './events/index.ts'
import nodeTypes from './node-types/index.ts'
import queues from './queues/index.ts'
import runs from './runs/index.ts'
import subscriptions from './subscriptions/index.ts'
import webhook from './webhook/index.ts'
import workflows from './workflows/index.ts'

/** /api/automation: workflow definitions, the node types they are made of, their runs, what starts them, the credentials they use and the subscriptions their events are sent to. */
export default async function automation (fastify: FastifyInstance): Promise<void> {
  await fastify.register(workflows, { prefix: '/workflows' })
  await fastify.register(nodeTypes, { prefix: '/node-types' })
  await fastify.register(runs, { prefix: '/runs' })
  await fastify.register(approvals, { prefix: '/approvals' })
  await fastify.register(events, { prefix: '/events' })
  await fastify.register(webhook, { prefix: '/webhook' })
  await fastify.register(queues, { prefix: '/queues' })
  await fastify.register(credentials, { prefix: '/credentials' })
  await fastify.register(subscriptions, { prefix: '/subscriptions' })
}
