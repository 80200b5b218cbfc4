import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { viewerOf } from '@switchboard/core/users'
import { auditContextOf } from '../../../../audit-context.ts'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { Broadcast, BroadcastRecipient, BroadcastsQuery, CreateBroadcastBody, RecipientsQuery } from './schemas.ts'

const DEFAULT_TEMPLATE_LANGUAGE = 'en_US'

/**
 * Broadcasts (README, Broadcasts): one template to many customers of the selected account, sent
 * by the chat-broadcasts queue at a bounded rate. The owner and admins see and change one.
 */
const broadcasts: FastifyPluginAsyncTypebox = async (fastify) => {
  const service = fastify.broadcasts

  fastify.post('', {
    schema: { tags: ['chat'], body: CreateBroadcastBody, response: { 201: Broadcast, ...errorResponses(400, 401, 404) } }
  }, async (request, reply) => {
    const account = await fastify.chatAccountFor(request)
    const { templateName, lang = DEFAULT_TEMPLATE_LANGUAGE, recipients, label, contactIds, components, ratePerSecond, sendAt } = request.body
    const audiences = [recipients, label, contactIds].filter((audience) => audience !== undefined).length
    if (audiences !== 1) throw new DomainError('VALIDATION_ERROR', 'Give exactly one of recipients, label and contactIds')
    if (recipients !== undefined && components !== undefined) throw new DomainError('VALIDATION_ERROR', 'components is for a label or contactIds audience: listed recipients carry their own')
    const audience = recipients !== undefined ? { recipients } : label !== undefined ? { label, components } : { contactIds: contactIds!, components }
    const broadcast = await service.create(viewerOf(request.user), account, {
      ...audience,
      templateName,
      lang,
      ratePerSecond: ratePerSecond!,
      ...(sendAt !== undefined && { sendAt: new Date(sendAt) })
    }, auditContextOf(request))
    return reply.code(201).send(broadcast)
  })

  fastify.get('', {
    schema: { tags: ['chat'], querystring: BroadcastsQuery, response: { 200: Type.Array(Broadcast), ...errorResponses(400, 401) } }
  }, async (request) => service.list(viewerOf(request.user), request.query))

  fastify.get('/:id', {
    schema: { tags: ['chat'], params: IdParams, response: { 200: Broadcast, ...errorResponses(401, 404) } }
  }, async (request) => service.get(viewerOf(request.user), request.params.id))

  fastify.get('/:id/recipients', {
    schema: { tags: ['chat'], params: IdParams, querystring: RecipientsQuery, response: { 200: Type.Array(BroadcastRecipient), ...errorResponses(400, 401, 404) } }
  }, async (request) => service.recipients(viewerOf(request.user), request.params.id, request.query))

  for (const action of ['pause', 'resume', 'cancel'] as const) {
    fastify.post(`/:id/${action}`, {
      schema: { tags: ['chat'], params: IdParams, response: { 200: Broadcast, ...errorResponses(401, 404, 409) } }
    }, async (request) => service[action](viewerOf(request.user), request.params.id))
  }
}

export default broadcasts
