import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { DEFAULT_ACCOUNT_ID, type UsableChatAccount } from '@switchboard/core/chat'
import { forbidden } from '@switchboard/core/errors'
import { isAdmin, viewerOf } from '@switchboard/core/users'
import { errorResponses } from '../../../../schemas/common.ts'
import { CreateTemplateBody, StoredTemplate, TemplateNameParams, TemplatesAnswer, TemplatesQuery } from './schemas.ts'

/**
 * The selected account's templates (README, Chat: templates): the live list of approved ones, the ones made
 * here with their status, and making and deleting them. The installation's default account is shared like
 * its settings: only admins make or delete its templates.
 */
const templates: FastifyPluginAsyncTypebox = async (fastify) => {
  async function accountToChange (request: FastifyRequest): Promise<UsableChatAccount> {
    const account = await fastify.chatAccountFor(request)
    if (account.id === DEFAULT_ACCOUNT_ID && !isAdmin(viewerOf(request.user))) throw forbidden()
    return account
  }

  fastify.get('', {
    schema: { tags: ['chat'], querystring: TemplatesQuery, response: { 200: TemplatesAnswer, ...errorResponses(400, 401, 404, 500, 502) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const { status, limit, offset } = request.query
    if (status === undefined) return fastify.chat.listTemplates(account)
    return fastify.chatTemplates.list(account, status, { limit, offset })
  })

  fastify.post('', {
    schema: { tags: ['chat'], body: CreateTemplateBody, response: { 201: StoredTemplate, ...errorResponses(400, 401, 403, 404, 500, 502) } }
  }, async (request, reply) => {
    const created = await fastify.chatTemplates.create(await accountToChange(request), request.body)
    return reply.code(201).send(created)
  })

  fastify.delete('/:name', {
    schema: { tags: ['chat'], params: TemplateNameParams, response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 500, 502) } }
  }, async (request, reply) => {
    await fastify.chatTemplates.delete(await accountToChange(request), request.params.name)
    return reply.code(204).send(null)
  })
}

export default templates
