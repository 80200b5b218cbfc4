import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { AI_MODES, CONVERSATION_PRIORITIES, MESSAGE_DIRECTIONS, MESSAGE_STATUSES } from '@switchboard/core/db'
import { CONVERSATION_FILTERS, CONVERSATION_SORTS, conversationsRepository } from '@switchboard/core/chat'
import { errorResponses, IdParams, NullableTimestamp, Pagination, Timestamp } from '../../schemas/common.ts'

const nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()])

export const ChatMessage = Type.Object({
  id: Type.String(),
  wamid: nullable(Type.String()),
  direction: Type.Enum(MESSAGE_DIRECTIONS),
  type: Type.String(),
  content: Type.String(),
  templateContent: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  status: Type.Union([Type.Enum(MESSAGE_STATUSES), Type.Null()]),
  agentId: nullable(Type.String()),
  agentName: nullable(Type.String()),
  replyToId: nullable(Type.String()),
  createdAt: Timestamp
})

const conversationFields = {
  id: Type.String(),
  phone: Type.String(),
  name: nullable(Type.String()),
  lastMessage: nullable(Type.String()),
  lastMessageAt: NullableTimestamp,
  unreadCount: Type.Integer(),
  isPinned: Type.Boolean(),
  isArchived: Type.Boolean(),
  priority: Type.String(),
  labels: Type.Array(Type.String()),
  assignedAgentId: nullable(Type.String()),
  aiMode: Type.String(),
  pendingApprovalCount: Type.Integer(),
  lastIncomingAt: NullableTimestamp,
  createdAt: Timestamp,
  updatedAt: Timestamp
}

export const Conversation = Type.Object(conversationFields)
export const ConversationWithMessages = Type.Object({ ...conversationFields, messages: Type.Array(ChatMessage) })

export const ConversationsQuery = Type.Object({
  filter: Type.Optional(Type.Enum(CONVERSATION_FILTERS)),
  sort: Type.Optional(Type.Enum(CONVERSATION_SORTS)),
  ...Pagination
})

export const UpdateConversationBody = Type.Object({
  isPinned: Type.Optional(Type.Boolean()),
  isArchived: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Type.Enum(CONVERSATION_PRIORITIES)),
  labels: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: 50, errorMessage: 'labels must be at most 50 labels of 1 to 50 characters' })),
  assignedAgentId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()])),
  aiMode: Type.Optional(Type.Enum(AI_MODES))
}, { additionalProperties: false })

export const MessagesQuery = Type.Object({
  before: Type.Optional(Type.String({ maxLength: 64 })),
  limit: Pagination.limit
})

const conversationNotFound = () => new DomainError('CONVERSATION_NOT_FOUND', 'Conversation not found')

/**
 * Spec 4.5 and the contract's conversation management. Every route acts on the
 * conversations of the selected account only; another account's conversation is a 404.
 */
const conversations: FastifyPluginAsyncTypebox = async (fastify) => {
  const repo = conversationsRepository(fastify.db)

  fastify.get('/api/chat/conversations', {
    schema: { tags: ['chat'], querystring: ConversationsQuery, response: { 200: Type.Array(ConversationWithMessages), ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    return repo.list(account.phoneNumberId, request.query)
  })

  fastify.patch('/api/chat/conversations/:id', {
    schema: { tags: ['chat'], params: IdParams, body: UpdateConversationBody, response: { 200: Conversation, ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const { labels } = request.body
    // Labels are a set: each stored once, in the order given (like workflow tags).
    const changes = labels === undefined ? request.body : { ...request.body, labels: [...new Set(labels)] }
    const conversation = await repo.update(request.params.id, account.phoneNumberId, changes)
    if (conversation === null) throw conversationNotFound()
    return conversation
  })

  fastify.post('/api/chat/conversations/:id/read', {
    schema: { tags: ['chat'], params: IdParams, response: { 200: Conversation, ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const conversation = await repo.update(request.params.id, account.phoneNumberId, { unreadCount: 0 })
    if (conversation === null) throw conversationNotFound()
    return conversation
  })

  fastify.get('/api/chat/conversations/:id/messages', {
    schema: { tags: ['chat'], params: IdParams, querystring: MessagesQuery, response: { 200: Type.Array(ChatMessage), ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const conversation = await repo.get(request.params.id, account.phoneNumberId)
    if (conversation === null) throw conversationNotFound()
    const { before, limit } = request.query
    const cursor = before === undefined ? undefined : await repo.findMessage(conversation.id, before)
    if (cursor === null) throw new DomainError('INVALID_CURSOR', 'before must be the id of a message of this conversation')
    return repo.messagesBefore(conversation.id, limit, cursor)
  })
}

export default conversations
