import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sandboxDelivery, sandboxDeliveryId, type SandboxInbound } from '@switchboard/core/chat'
import { DomainError } from '@switchboard/core/errors'
import { viewerOf } from '@switchboard/core/users'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { acceptDelivery } from '../../../webhook/chat/accept.ts'
import { SandboxInboundAccepted, SandboxInboundBody } from './schemas.ts'

/**
 * A customer played on a sandbox number (README, Sandbox numbers): the delivery the platform's
 * webhook would get, stored and queued as the webhook does, so that consent keywords, KEYWORD and
 * `chat.message.received` workflows and the assistant react as to a real message. Whoever can use
 * the number plays its customers; another user's number is 404, as for every account route.
 */
const sandbox: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/:id/sandbox/inbound', {
    schema: { tags: ['chat'], params: IdParams, body: SandboxInboundBody, response: { 202: SandboxInboundAccepted, ...errorResponses(400, 401, 404, 503) } }
  }, async (request, reply) => {
    const account = await fastify.chat.accounts.select(viewerOf(request.user), request.params.id)
    if (!account.isSandbox) {
      throw new DomainError('CHAT_ACCOUNT_NOT_SANDBOX', 'Chat account is not a sandbox number: its customers write through the chat platform')
    }
    const { from, name, username, text, interactive, media } = request.body
    const parts = [text, interactive, media].filter((part) => part !== undefined).length
    if (parts !== 1) throw new DomainError('VALIDATION_ERROR', 'Give exactly one of text, interactive and media')
    const message = text !== undefined ? { text } : interactive !== undefined ? { interactive } : { media: media! }
    const inbound: SandboxInbound = { from, ...(name !== undefined && { name }), ...(username !== undefined && { username }), ...message }
    const { payload, wamid } = sandboxDelivery(account.phoneNumberId, inbound)
    await acceptDelivery(fastify, request, payload, sandboxDeliveryId())
    return reply.code(202).send({ wamid })
  })
}

export default sandbox
