import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { keyringOf } from '@switchboard/core/encryption'
import { subscriptionsRepository, type SubscriptionsRepository } from '@switchboard/core/subscriptions'

declare module 'fastify' {
  interface FastifyInstance {
    subscriptions: SubscriptionsRepository
  }
}

/** Event subscriptions: secrets encrypted with the process's keyring, URLs checked by http_request's guard and its setting. */
async function subscriptions (fastify: FastifyInstance): Promise<void> {
  const { config } = fastify
  fastify.decorate('subscriptions', subscriptionsRepository({
    db: fastify.db,
    keyring: keyringOf(config),
    queues: fastify.queues,
    config: config.eventSubscriptions,
    allowPrivate: config.httpRequestAllowPrivate
  }))
}

export default fp(subscriptions, { name: 'subscriptions', dependencies: ['context'] })
