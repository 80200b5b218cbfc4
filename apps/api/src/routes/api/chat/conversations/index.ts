import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { messageView, withAssistantPause } from '@switchboard/core/chat'
import { DomainError } from '@switchboard/core/errors'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import labels from './labels.ts'
import notes from './notes.ts'
import { ApproveDraftBody, AssistantTurn, ChatMessage, Conversation, ConversationsQuery, ConversationWithMessages, DraftParams, MessagesQuery, TurnsQuery, TypingResult, UpdateConversationBody } from './schemas.ts'

const conversationNotFound = () => new DomainError('CONVERSATION_NOT_FOUND', 'Conversation not found')

/**
 * The conversation list and each conversation's changes (README, Chat), and its notes. Every route acts on the
 * conversations of the selected account only; another account's conversation is a 404.
 */
const conversations: FastifyPluginAsyncTypebox = async (fastify) => {
  const repo = fastify.conversations
  await fastify.register(notes)
  await fastify.register(labels)

  fastify.get('', {
    schema: { tags: ['chat'], querystring: ConversationsQuery, response: { 200: Type.Array(ConversationWithMessages), ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const { assigned, mentions, ...query } = request.query
    const assignedTo = assigned === undefined ? {} : { assignedTo: assigned === 'me' ? request.user.sub : assigned === 'none' ? null : assigned }
    const mentioning = mentions === undefined ? {} : { mentioning: request.user.sub }
    const list = await repo.list(account.phoneNumberId, { ...query, ...assignedTo, ...mentioning })
    return list.map((conversation) => ({ ...conversation, messages: conversation.messages.map(messageView) }))
  })

  fastify.patch('/:id', {
    schema: { tags: ['chat'], params: IdParams, body: UpdateConversationBody, response: { 200: Conversation, ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const { labels, assignedAgentId } = request.body
    if (typeof assignedAgentId === 'string' && !await fastify.chat.accounts.isAgent(account.phoneNumberId, assignedAgentId)) {
      throw new DomainError('VALIDATION_ERROR', 'assignedAgentId must be a user who can use this account')
    }
    // Labels are a set: each stored once, in the order given (like workflow tags).
    const changes = labels === undefined ? request.body : { ...request.body, labels: [...new Set(labels)] }
    const conversation = await repo.update(request.params.id, account.phoneNumberId, withAssistantPause(changes))
    if (conversation === null) throw conversationNotFound()
    return conversation
  })

  fastify.post('/:id/read', {
    schema: { tags: ['chat'], params: IdParams, response: { 200: Conversation, ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const conversation = await repo.update(request.params.id, account.phoneNumberId, { unreadCount: 0 })
    if (conversation === null) throw conversationNotFound()
    return conversation
  })

  fastify.get('/:id/messages', {
    schema: { tags: ['chat'], params: IdParams, querystring: MessagesQuery, response: { 200: Type.Array(ChatMessage), ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const conversation = await repo.get(request.params.id, account.phoneNumberId)
    if (conversation === null) throw conversationNotFound()
    const { before, limit } = request.query
    const cursor = before === undefined ? undefined : await repo.findMessage(conversation.id, before)
    if (cursor === null) throw new DomainError('INVALID_CURSOR', 'before must be the id of a message of this conversation')
    return (await repo.messagesBefore(conversation.id, limit, cursor)).map(messageView)
  })

  /**
   * The customer's latest message marked read at the platform, with the typing indicator while someone writes the
   * answer (README, Message kinds). 409 NO_CUSTOMER_MESSAGE when the customer never wrote.
   */
  fastify.post('/:id/typing', {
    schema: { tags: ['chat'], params: IdParams, response: { 200: TypingResult, ...errorResponses(400, 401, 404, 409, 500, 502) } }
  }, async (request) => {
    const marked = await fastify.chat.markRead(await fastify.chatAccountFor(request), request.params.id, { typing: true })
    if (marked === null) throw conversationNotFound()
    return marked
  })

  /** The assistant's drafts of the conversation, waiting for staff (README, The assistant). */
  fastify.get('/:id/drafts', {
    schema: { tags: ['chat'], params: IdParams, response: { 200: Type.Array(ChatMessage), ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const conversation = await repo.get(request.params.id, account.phoneNumberId)
    if (conversation === null) throw conversationNotFound()
    return (await fastify.drafts.pending(conversation.id)).map(messageView)
  })

  fastify.post('/:id/drafts/:messageId/approve', {
    schema: { tags: ['chat'], params: DraftParams, body: ApproveDraftBody, response: { 200: ChatMessage, ...errorResponses(400, 401, 404, 409, 500, 502) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    return messageView(await fastify.drafts.approve(account, request.params.id, request.params.messageId, deciderOf(request.user), request.body?.text))
  })

  fastify.post('/:id/drafts/:messageId/reject', {
    schema: { tags: ['chat'], params: DraftParams, response: { 200: ChatMessage, ...errorResponses(400, 401, 404, 409) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    return messageView(await fastify.drafts.reject(account, request.params.id, request.params.messageId, deciderOf(request.user)))
  })

  /** What the assistant did for the conversation, newest turn first: model calls, tool runs, outcome. */
  fastify.get('/:id/turns', {
    schema: { tags: ['chat'], params: IdParams, querystring: TurnsQuery, response: { 200: Type.Array(AssistantTurn), ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const conversation = await repo.get(request.params.id, account.phoneNumberId)
    if (conversation === null) throw conversationNotFound()
    return fastify.assistantTurns.recent(conversation.id, request.query.limit)
  })
}

const deciderOf = (user: { sub: string, email: string }) => ({ userId: user.sub, name: user.email })

export default conversations
