import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DEFAULT_DEBOUNCE_MS } from '@switchboard/core/assistant'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { AssistantSettingsBody, AssistantSettingsView, AssistantUsage, UsageQuery } from './schemas.ts'

const DAY_MS = 24 * 3600 * 1000

/**
 * An account's assistant (README, The assistant): its instructions, model and key, and what it
 * used. `:id` is a linked account or `default`, the installation's shared inbox, whose settings
 * only admins change. Whoever can use an account reads them.
 */
const assistant: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/:id/assistant', {
    schema: { tags: ['chat'], params: IdParams, response: { 200: AssistantSettingsView, ...errorResponses(401, 404) } }
  }, async (request) => fastify.assistantSettings.view((await fastify.chatAccountSettingsOf(request, request.params.id, 'read')).phoneNumberId))

  fastify.put('/:id/assistant', {
    schema: { tags: ['chat'], params: IdParams, body: AssistantSettingsBody, response: { 200: AssistantSettingsView, ...errorResponses(400, 401, 403, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountSettingsOf(request, request.params.id, 'change')
    const { instructions, answerAlways = false, model = null, apiKeyCredentialId = null, debounceMs = DEFAULT_DEBOUNCE_MS, answerFromKnowledgeOnly = false } = request.body
    return fastify.assistantSettings.save(account.phoneNumberId, request.user.sub, { instructions, answerAlways, model, apiKeyCredentialId, debounceMs, answerFromKnowledgeOnly })
  })

  fastify.get('/:id/usage', {
    schema: { tags: ['chat'], params: IdParams, querystring: UsageQuery, response: { 200: AssistantUsage, ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountSettingsOf(request, request.params.id, 'read')
    const { days } = request.query
    return { days, ...await fastify.assistantTurns.usage(account.phoneNumberId, new Date(Date.now() - days * DAY_MS)) }
  })
}

export default assistant
