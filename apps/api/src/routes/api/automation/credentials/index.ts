import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { credentialNotFound } from '@switchboard/core/credentials'
import { viewerOf } from '@switchboard/core/users'
import { auditContextOf } from '../../../../audit-context.ts'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { checkIdParam } from '../../../../schemas/ids.ts'
import { CreateCredentialBody, Credential, ListCredentialsQuery, UpdateCredentialBody } from './schemas.ts'
import { keyScopes } from '../../key-scopes.ts'

/**
 * Credentials (README, Credentials), scoped to the caller like workflows; admins see all.
 * `data` is write-only: encrypted before it is stored, in no answer.
 */
const credentialRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRoute', keyScopes('credentials:read', 'credentials:write'))
  const { credentials } = fastify
  const tags = ['credentials']
  fastify.addHook('preHandler', checkIdParam('id', () => { throw credentialNotFound() }))

  fastify.post('', {
    schema: { tags, summary: 'Create a credential', body: CreateCredentialBody, response: { 201: Credential, ...errorResponses(400, 401, 409) } }
  }, async (request, reply) => reply.code(201).send(await credentials.create(viewerOf(request.user), request.body, auditContextOf(request))))

  fastify.get('', {
    schema: { tags, summary: 'List credentials by name, without their data', querystring: ListCredentialsQuery, response: { 200: Type.Array(Credential), ...errorResponses(400, 401) } }
  }, async (request) => credentials.list(viewerOf(request.user), request.query))

  fastify.get('/:id', {
    schema: { tags, summary: 'A credential, without its data', params: IdParams, response: { 200: Credential, ...errorResponses(401, 404) } }
  }, async (request) => {
    const credential = await credentials.find(viewerOf(request.user), request.params.id)
    if (credential === null) throw credentialNotFound()
    return credential
  })

  fastify.patch('/:id', {
    schema: {
      tags,
      summary: 'Rename a credential or replace its data (a rename is refused while a workflow names it)',
      params: IdParams,
      body: UpdateCredentialBody,
      response: { 200: Credential, ...errorResponses(400, 401, 404, 409) }
    }
  }, async (request) => credentials.update(viewerOf(request.user), request.params.id, request.body, auditContextOf(request)))

  fastify.delete('/:id', {
    schema: {
      tags,
      summary: 'Delete a credential (refused while a workflow uses it)',
      params: IdParams,
      response: { 204: Type.Null(), ...errorResponses(401, 404, 409) }
    }
  }, async (request, reply) => {
    await credentials.delete(viewerOf(request.user), request.params.id, auditContextOf(request))
    return reply.code(204).send(null)
  })
}

export default credentialRoutes
