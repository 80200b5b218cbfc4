import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { accountNotFound, newSandboxAccount, type ChatAccountChanges, type NewChatAccount } from '@switchboard/core/chat'
import { decryptSecret, encryptSecret, keyringOf } from '@switchboard/core/encryption'
import { viewerOf } from '@switchboard/core/users'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { ChatAccount, CreateChatAccountBody, ListChatAccountsQuery, UpdateChatAccountBody } from './schemas.ts'

const alreadyLinked = () => new DomainError('CHAT_ACCOUNT_EXISTS', 'Chat account already linked')

/** What only a platform number has (README, Sandbox numbers). */
const PLATFORM_FIELDS = ['phoneNumberId', 'accessToken', 'businessAccountId'] as const

/** A sandbox number has no platform fields, and is never the default account: implicit choices never count it. */
function refuseForSandbox (body: { [field in typeof PLATFORM_FIELDS[number]]?: unknown } & { isDefault?: boolean }): void {
  const field = PLATFORM_FIELDS.find((name) => body[name] !== undefined)
  if (field !== undefined) throw new DomainError('CHAT_ACCOUNT_SANDBOX', `A sandbox number has no ${field}: it has no chat platform behind it`)
  if (body.isDefault === true) throw new DomainError('CHAT_ACCOUNT_SANDBOX', 'A sandbox number cannot be the default account')
}

/**
 * Linked chat accounts (README, Chat), and sandbox numbers (`sandbox: true`, README, Sandbox
 * numbers). The access token is write-only: it is encrypted before it is stored and no response carries it.
 */
const accounts: FastifyPluginAsyncTypebox = async (fastify) => {
  const repo = fastify.chatAccounts
  const keyring = keyringOf(fastify.config)

  fastify.get('', {
    schema: { tags: ['chat'], querystring: ListChatAccountsQuery, response: { 200: Type.Array(ChatAccount), ...errorResponses(400, 401) } }
  }, async (request) => repo.list(viewerOf(request.user), request.query))

  /** A sandbox number's row, or a platform number's once the platform confirms the token may use it. */
  async function newAccountOf (body: Static<typeof CreateChatAccountBody>): Promise<NewChatAccount> {
    const { accessToken, phoneNumberId, sandbox = false, ...rest } = body
    if (sandbox) {
      refuseForSandbox(body)
      return { ...newSandboxAccount(keyring, rest.name), ...(rest.displayPhoneNumber != null && { displayPhoneNumber: rest.displayPhoneNumber }) }
    }
    if (phoneNumberId === undefined) throw new DomainError('VALIDATION_ERROR', 'phoneNumberId is required')
    if (accessToken === undefined) throw new DomainError('VALIDATION_ERROR', 'accessToken is required')
    await fastify.chat.verifyNumber(phoneNumberId, accessToken)
    return { ...rest, phoneNumberId, accessTokenEncrypted: encryptSecret(keyring, accessToken) }
  }

  fastify.post('', {
    schema: { tags: ['chat'], body: CreateChatAccountBody, response: { 201: ChatAccount, ...errorResponses(400, 401, 409, 500, 502) } }
  }, async (request, reply) => {
    const account = await repo.create(request.user.sub, await newAccountOf(request.body))
    if (account === null) throw alreadyLinked()
    return reply.code(201).send(account)
  })

  fastify.patch('/:id', {
    schema: { tags: ['chat'], params: IdParams, body: UpdateChatAccountBody, response: { 200: ChatAccount, ...errorResponses(400, 401, 404, 409, 500, 502) } }
  }, async (request) => {
    const { accessToken, ...rest } = request.body
    const viewer = viewerOf(request.user)
    if (PLATFORM_FIELDS.some((field) => request.body[field] !== undefined) || rest.isDefault === true) {
      const current = await repo.findWithSecret(request.params.id, viewer)
      if (current === null) throw accountNotFound()
      if (current.isSandbox) refuseForSandbox(request.body)
      // The number and token the account will have must still belong together.
      if (accessToken !== undefined || rest.phoneNumberId !== undefined) {
        await fastify.chat.verifyNumber(rest.phoneNumberId ?? current.phoneNumberId, accessToken ?? decryptSecret(keyring, current.accessTokenEncrypted))
      }
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
