import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { accountNotFound, decryptSecret, encryptSecret, chatAccountsRepository, type ChatAccountChanges } from '@switchboard/core/chat'
import { viewerOf } from '@switchboard/core/users'
import { errorResponses, IdParams, Pagination, Timestamp } from '../../schemas/common.ts'

export const ChatAccount = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  name: Type.String(),
  phoneNumberId: Type.String(),
  businessAccountId: Type.Union([Type.String(), Type.Null()]),
  displayPhoneNumber: Type.Union([Type.String(), Type.Null()]),
  isDefault: Type.Boolean(),
  createdAt: Timestamp
})

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', errorMessage: 'name must be 1 to 200 characters' }),
  phoneNumberId: Type.String({ pattern: '^[0-9]{1,64}$', errorMessage: 'phoneNumberId must be the platform phone number id (digits)' }),
  businessAccountId: Type.Union([Type.String({ pattern: '^[0-9]{1,64}$' }), Type.Null()], { errorMessage: 'businessAccountId must be the platform business account id (digits)' }),
  displayPhoneNumber: Type.Union([Type.String({ maxLength: 32 }), Type.Null()]),
  accessToken: Type.String({ minLength: 1, maxLength: 4096, errorMessage: 'accessToken must be 1 to 4096 characters' }),
  isDefault: Type.Boolean()
}

export const CreateChatAccountBody = Type.Object({
  name: fields.name,
  phoneNumberId: fields.phoneNumberId,
  accessToken: fields.accessToken,
  businessAccountId: Type.Optional(fields.businessAccountId),
  displayPhoneNumber: Type.Optional(fields.displayPhoneNumber),
  isDefault: Type.Optional(fields.isDefault)
}, { additionalProperties: false })

export const UpdateChatAccountBody = Type.Partial(Type.Object(fields), { additionalProperties: false })

const alreadyLinked = () => new DomainError('CHAT_ACCOUNT_EXISTS', 'Chat account already linked')

/**
 * Linked chat accounts (contract, Chat). The access token is write-only: it is
 * encrypted before it is stored and no response carries it.
 */
const accounts: FastifyPluginAsyncTypebox = async (fastify) => {
  const repo = chatAccountsRepository(fastify.db)
  const { encryptionKey } = fastify.config

  fastify.get('/api/chat/accounts', {
    schema: { tags: ['chat'], querystring: Type.Object(Pagination), response: { 200: Type.Array(ChatAccount), ...errorResponses(400, 401) } }
  }, async (request) => repo.list(viewerOf(request.user), request.query))

  fastify.post('/api/chat/accounts', {
    schema: { tags: ['chat'], body: CreateChatAccountBody, response: { 201: ChatAccount, ...errorResponses(400, 401, 409, 500, 502) } }
  }, async (request, reply) => {
    const { accessToken, ...rest } = request.body
    await fastify.chat.verifyNumber(rest.phoneNumberId, accessToken)
    const account = await repo.create(request.user.sub, { ...rest, accessTokenEncrypted: encryptSecret(encryptionKey, accessToken) })
    if (account === null) throw alreadyLinked()
    return reply.code(201).send(account)
  })

  fastify.patch('/api/chat/accounts/:id', {
    schema: { tags: ['chat'], params: IdParams, body: UpdateChatAccountBody, response: { 200: ChatAccount, ...errorResponses(400, 401, 404, 409, 500, 502) } }
  }, async (request) => {
    const { accessToken, ...rest } = request.body
    const viewer = viewerOf(request.user)
    if (accessToken !== undefined || rest.phoneNumberId !== undefined) {
      // The number and token the account will have must still belong together.
      const current = await repo.findWithSecret(request.params.id, viewer)
      if (current === null) throw accountNotFound()
      await fastify.chat.verifyNumber(rest.phoneNumberId ?? current.phoneNumberId, accessToken ?? decryptSecret(encryptionKey, current.accessTokenEncrypted))
    }
    const changes: ChatAccountChanges = { ...rest, ...(accessToken !== undefined && { accessTokenEncrypted: encryptSecret(encryptionKey, accessToken) }) }
    try {
      const account = await repo.update(request.params.id, viewer, changes)
      if (account === null) throw accountNotFound()
      return account
    } catch (err) {
      // Drizzle wraps the driver's error; 23505 is the (userId, phoneNumberId) unique index.
      if ((err as { cause?: { code?: string } }).cause?.code === '23505') throw alreadyLinked()
      throw err
    }
  })

  fastify.delete('/api/chat/accounts/:id', {
    schema: { tags: ['chat'], params: IdParams, response: { 204: Type.Null(), ...errorResponses(401, 404) } }
  }, async (request, reply) => {
    if (!await repo.delete(request.params.id, viewerOf(request.user))) throw accountNotFound()
    return reply.code(204).send(null)
  })
}

export default accounts
