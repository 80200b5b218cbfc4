import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { apiKeyNotFound, viewerOf } from '@switchboard/core/users'
import { auditContextOf } from '../../../../audit-context.ts'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { checkIdParam } from '../../../../schemas/ids.ts'
import { ApiKey, CreateApiKeyBody, CreatedApiKey, ListApiKeysQuery } from './schemas.ts'

/**
 * A person's API keys (README, API keys): made, listed and revoked with a person's token only
 * (these routes name no scope, so no key reaches them), so that a leaked key cannot make more.
 */
const apiKeys: FastifyPluginAsyncTypebox = async (fastify) => {
  const tags = ['auth']
  fastify.addHook('preHandler', checkIdParam('id', () => { throw apiKeyNotFound() }))

  fastify.post('', {
    schema: { tags, body: CreateApiKeyBody, response: { 201: CreatedApiKey, ...errorResponses(400, 401, 403) } }
  }, async (request, reply) => {
    const { name, scopes, workflowIds, expiresAt } = request.body
    const { key, secret } = await fastify.apiKeys.create(viewerOf(request.user), {
      name, scopes, workflowIds, expiresAt: expiresAt === undefined ? undefined : new Date(expiresAt)
    }, auditContextOf(request))
    return reply.code(201).send({ ...key, key: secret })
  })

  fastify.get('', {
    schema: { tags, querystring: ListApiKeysQuery, response: { 200: Type.Array(ApiKey), ...errorResponses(400, 401) } }
  }, async (request) => fastify.apiKeys.list(viewerOf(request.user), request.query))

  fastify.delete('/:id', {
    schema: { tags, params: IdParams, response: { 204: Type.Null(), ...errorResponses(401, 404) } }
  }, async (request, reply) => {
    const key = await fastify.apiKeys.revoke(viewerOf(request.user), request.params.id, auditContextOf(request))
    // The other replicas hear of it from Postgres; this one need not wait for that.
    fastify.forgetApiKeysOf(key.userId)
    return reply.code(204).send(null)
  })
}

export default apiKeys
