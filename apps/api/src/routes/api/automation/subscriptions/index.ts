import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { auditContextOf } from '../../../../audit-context.ts'
import { deliveryNotFound, subscriptionNotFound } from '@switchboard/core/subscriptions'
import { viewerOf } from '@switchboard/core/users'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { checkIdParam } from '../../../../schemas/ids.ts'
import { keyScopes } from '../../key-scopes.ts'
import {
  CreatedSubscription, CreateSubscriptionBody, Delivery, DeliveryParams, DeliveryWithAttempts,
  ListDeliveriesQuery, ListSubscriptionsQuery, Subscription, UpdateSubscriptionBody
} from './schemas.ts'

/**
 * Event subscriptions (README, Event subscriptions), scoped to the caller like workflows; admins
 * see all. The secret is write-only but for the answer that creates it. An API key needs
 * `subscriptions:write` for every route.
 */
const subscriptionRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { subscriptions } = fastify
  const tags = ['subscriptions']
  // One scope for reads and writes (README, API keys): a delivery shows what was sent.
  fastify.addHook('onRoute', keyScopes('subscriptions:write', 'subscriptions:write'))
  fastify.addHook('preHandler', checkIdParam('id', () => { throw subscriptionNotFound() }))
  fastify.addHook('preHandler', checkIdParam('deliveryId', () => { throw deliveryNotFound() }))

  fastify.post('', {
    schema: { tags, summary: 'Subscribe a URL to events; the answer carries the signing secret, once', body: CreateSubscriptionBody, response: { 201: CreatedSubscription, ...errorResponses(400, 401, 403) } }
  }, async (request, reply) => reply.code(201).send(await subscriptions.create(viewerOf(request.user), request.body, auditContextOf(request))))

  fastify.get('', {
    schema: { tags, summary: 'List subscriptions, oldest first', querystring: ListSubscriptionsQuery, response: { 200: Type.Array(Subscription), ...errorResponses(400, 401, 403) } }
  }, async (request) => await subscriptions.list(viewerOf(request.user), request.query))

  fastify.get('/:id', {
    schema: { tags, summary: 'A subscription, and why it was disabled', params: IdParams, response: { 200: Subscription, ...errorResponses(401, 403, 404) } }
  }, async (request) => {
    const subscription = await subscriptions.find(viewerOf(request.user), request.params.id)
    if (subscription === null) throw subscriptionNotFound()
    return subscription
  })

  fastify.patch('/:id', {
    schema: { tags, summary: 'Change its URL or events, disable or enable it (enabling clears its failures)', params: IdParams, body: UpdateSubscriptionBody, response: { 200: Subscription, ...errorResponses(400, 401, 403, 404) } }
  }, async (request) => await subscriptions.update(viewerOf(request.user), request.params.id, request.body, auditContextOf(request)))

  fastify.delete('/:id', {
    schema: { tags, summary: 'Delete a subscription with its deliveries', params: IdParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404) } }
  }, async (request, reply) => {
    await subscriptions.delete(viewerOf(request.user), request.params.id, auditContextOf(request))
    return reply.code(204).send(null)
  })

  fastify.get('/:id/deliveries', {
    schema: { tags, summary: 'A subscription\'s deliveries, newest first', params: IdParams, querystring: ListDeliveriesQuery, response: { 200: Type.Array(Delivery), ...errorResponses(400, 401, 403, 404) } }
  }, async (request) => await subscriptions.deliveries(viewerOf(request.user), request.params.id, request.query))

  fastify.get('/deliveries/:deliveryId', {
    schema: { tags, summary: 'A delivery with its attempts: status, latency, the answer\'s first bytes', params: DeliveryParams, response: { 200: DeliveryWithAttempts, ...errorResponses(401, 403, 404) } }
  }, async (request) => await subscriptions.delivery(viewerOf(request.user), request.params.deliveryId))

  fastify.post('/deliveries/:deliveryId/replay', {
    schema: { tags, summary: 'Send a finished delivery again, under the same webhook-id', params: DeliveryParams, response: { 202: Delivery, ...errorResponses(401, 403, 404, 409) } }
  }, async (request, reply) => reply.code(202).send(await subscriptions.replay(viewerOf(request.user), request.params.deliveryId)))
}

export default subscriptionRoutes
