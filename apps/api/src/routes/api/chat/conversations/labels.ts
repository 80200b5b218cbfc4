import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DomainError } from '@switchboard/core/errors'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { LabelBody, LabelParams } from '../labels/schemas.ts'
import { Conversation } from './schemas.ts'

const conversationNotFound = () => new DomainError('CONVERSATION_NOT_FOUND', 'Conversation not found')

/**
 * One label added to or removed from a conversation (README, The team inbox: labels), each one statement on
 * the stored labels, so that people labelling one conversation at once keep each other's labels (a PATCH of
 * `labels` replaces them all). Registered by the conversations group: another account's conversation is a 404.
 */
const labels: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/:id/labels', {
    schema: { tags: ['chat'], params: IdParams, body: LabelBody, response: { 200: Conversation, ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const conversation = await fastify.conversations.addLabel(request.params.id, account.phoneNumberId, request.body.label)
    if (conversation === null) throw conversationNotFound()
    return conversation
  })

  fastify.delete('/:id/labels/:label', {
    schema: { tags: ['chat'], params: LabelParams, response: { 200: Conversation, ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const conversation = await fastify.conversations.removeLabel(request.params.id, account.phoneNumberId, request.params.label)
    if (conversation === null) throw conversationNotFound()
    return conversation
  })
}

export default labels
