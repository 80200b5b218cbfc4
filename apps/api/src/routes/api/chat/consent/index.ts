import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DEFAULT_CONSENT_SETTINGS } from '@switchboard/core/chat'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { ConsentSettingsBody, ConsentSettingsView } from './schemas.ts'

/**
 * An account's opt-out and opt-in keywords and their confirmations (README, Contacts and consent),
 * with the access rules of its assistant settings: `:id` is a linked account or `default`, the
 * installation's shared inbox, whose settings only admins change. Whoever can use an account reads them.
 */
const consent: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/:id/consent', {
    schema: { tags: ['chat'], params: IdParams, response: { 200: ConsentSettingsView, ...errorResponses(401, 404) } }
  }, async (request) => fastify.consentSettings.view((await fastify.chatAccountSettingsOf(request, request.params.id, 'read')).phoneNumberId))

  fastify.put('/:id/consent', {
    schema: { tags: ['chat'], params: IdParams, body: ConsentSettingsBody, response: { 200: ConsentSettingsView, ...errorResponses(400, 401, 403, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountSettingsOf(request, request.params.id, 'change')
    return fastify.consentSettings.save(account.phoneNumberId, request.user.sub, { ...DEFAULT_CONSENT_SETTINGS, ...request.body })
  })
}

export default consent
