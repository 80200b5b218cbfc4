import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { mentionedEmails } from '@switchboard/core/chat'
import { DomainError } from '@switchboard/core/errors'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { ConversationNote, NoteBody, NotesQuery } from './schemas.ts'

/**
 * A conversation's private notes (README, The team inbox: notes): staff's, and those a handoff node
 * wrote. Apart from its messages and never sent. Registered by the conversations group: another
 * account's conversation is a 404 as on its other routes.
 */
const notes: FastifyPluginAsyncTypebox = async (fastify) => {
  const conversationOf = async (request: FastifyRequest, id: string) => {
    const account = await fastify.chatAccountFor(request)
    const conversation = await fastify.conversations.get(id, account.phoneNumberId)
    if (conversation === null) throw new DomainError('CONVERSATION_NOT_FOUND', 'Conversation not found')
    return { account, conversation }
  }

  fastify.get('/:id/notes', {
    schema: { tags: ['chat'], params: IdParams, querystring: NotesQuery, response: { 200: Type.Array(ConversationNote), ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const { conversation } = await conversationOf(request, request.params.id)
    return fastify.conversationNotes.list(conversation.id, request.query)
  })

  fastify.post('/:id/notes', {
    schema: { tags: ['chat'], params: IdParams, body: NoteBody, response: { 201: ConversationNote, ...errorResponses(400, 401, 404) } }
  }, async (request, reply) => {
    const { account, conversation } = await conversationOf(request, request.params.id)
    const { text } = request.body
    // `@email` of someone who cannot use the account stays text: only the account's people are mentioned.
    const mentions = await fastify.chat.accounts.agentIdsByEmail(account.phoneNumberId, mentionedEmails(text))
    const id = await fastify.conversationNotes.insert({ conversationId: conversation.id, authorId: request.user.sub, text, mentions })
    return reply.code(201).send((await fastify.conversationNotes.get(id))!)
  })
}

export default notes
