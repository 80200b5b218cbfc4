import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { CannedRepliesQuery, CannedReply, NewCannedReplyBody, UpdateCannedReplyBody } from './schemas.ts'

/**
 * The canned replies of the selected account's number (README, The team inbox): listed, added,
 * changed and deleted by whoever can use the account; another number's reply is a 404.
 */
const cannedReplies: FastifyPluginAsyncTypebox = async (fastify) => {
  const repo = fastify.cannedReplies

  fastify.get('', {
    schema: { tags: ['chat'], querystring: CannedRepliesQuery, response: { 200: Type.Array(CannedReply), ...errorResponses(400, 401, 404) } }
  }, async (request) => repo.list((await fastify.chatAccountFor(request)).phoneNumberId, request.query))

  fastify.post('', {
    schema: { tags: ['chat'], body: NewCannedReplyBody, response: { 201: CannedReply, ...errorResponses(400, 401, 404, 409) } }
  }, async (request, reply) => {
    const account = await fastify.chatAccountFor(request)
    return reply.code(201).send(await repo.create(account.phoneNumberId, request.body))
  })

  fastify.patch('/:id', {
    schema: { tags: ['chat'], params: IdParams, body: UpdateCannedReplyBody, response: { 200: CannedReply, ...errorResponses(400, 401, 404, 409) } }
  }, async (request) => repo.update(request.params.id, (await fastify.chatAccountFor(request)).phoneNumberId, request.body))

  fastify.delete('/:id', {
    schema: { tags: ['chat'], params: IdParams, response: { 204: Type.Null(), ...errorResponses(400, 401, 404) } }
  }, async (request, reply) => {
    await repo.delete(request.params.id, (await fastify.chatAccountFor(request)).phoneNumberId)
    return reply.code(204).send(null)
  })
}

export default cannedReplies
