import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { accountNotFound, type ChatAccountChanges } from '@switchboard/core/chat'
import { decryptSecret, encryptSecret, keyringOf } from '@switchboard/core/encryption'
import { viewerOf } from '@switchboard/core/users'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { ChatAccount, CreateChatAccountBody, ListChatAccountsQuery, UpdateChatAccountBody } from './schemas.ts'

const alreadyLinked = () => new DomainError('CHAT_ACCOUNT_EXISTS', 'Chat account already linked')

/**
 * Linked chat accounts (README, Chat). The access token is write-only: it is
 * encrypted before it is stored and no response carries it.
 */
const accounts: FastifyPluginAsyncTypebox = async (fastify) => {
  const repo = fastify.chatAccounts
  const keyring = keyringOf(fastify.config)

  fastify.get('', {
    schema: { tags: ['chat'], querystring: ListChatAccountsQuery, response: { 200: Type.Array(ChatAccount), ...errorResponses(400, 401) } }
  }, async (request) => repo.list(viewerOf(request.user), request.query))

  fastify.post('', {
    schema: { tags: ['chat'], body: CreateChatAccountBody, response: { 201: ChatAccount, ...errorResponses(400, 401, 409, 500, 502) } }
  }, async (request, reply) => {
    const { accessToken, ...rest } = request.body
    await fastify.chat.verifyNumber(rest.phoneNumberId, accessToken)
    const account = await repo.create(request.user.sub, { ...rest, accessTokenEncrypted: encryptSecret(keyring, accessToken) })
    if (account === null) throw alreadyLinked()
    return reply.code(201).send(account)
  })

  fastify.patch('/:id', {
    schema: { tags: ['chat'], params: IdParams, body: UpdateChatAccountBody, response: { 200: ChatAccount, ...errorResponses(400, 401, 404, 409, 500, 502) } }
  }, async (request) => {
    const { accessToken, ...rest } = request.body
    const viewer = viewerOf(request.user)
    if (accessToken !== undefined || rest.phoneNumberId !== undefined) {
      // The number and token the account will have must still belong together.
      const current = await repo.findWithSecret(request.params.id, viewer)
      if (current === null) throw accountNotFound()
      await fastify.chat.verifyNumber(rest.phoneNumberId ?? current.phoneNumberId, accessToken ?? decryptSecret(keyring, current.accessTokenEncrypted))
    }
    const changes: ChatAccountChanges = { ...rest, ...(accessToken !== undefined && { accessTokenEncrypted: encryptSecret(keyring, accessToken) }) }
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

  fastify.delete('/:id', {
    schema: { tags: ['chat'], params: IdParams, response: { 204: Type.Null(), ...errorResponses(401, 404) } }
  }, async (request, reply) => {
    if (!await repo.delete(request.params.id, viewerOf(request.user))) throw accountNotFound()
    return reply.code(204).send(null)
  })
}

export default accounts
