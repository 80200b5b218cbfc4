import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { LabelBody, LabelParams } from '../labels/schemas.ts'
import { Contact } from './schemas.ts'

/**
 * One label added to or removed from a contact (README, The team inbox: labels), each one statement on the
 * stored labels, so that people labelling one contact at once keep each other's labels (a PATCH of `labels`
 * replaces them all). Registered by the contacts group: another number's contact is a 404.
 */
const labels: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/:id/labels', {
    schema: { tags: ['chat'], params: IdParams, body: LabelBody, response: { 200: Contact, ...errorResponses(400, 401, 404) } }
  }, async (request) => fastify.contacts.addLabel(request.params.id, (await fastify.chatAccountFor(request)).phoneNumberId, request.body.label))

  fastify.delete('/:id/labels/:label', {
    schema: { tags: ['chat'], params: LabelParams, response: { 200: Contact, ...errorResponses(400, 401, 404) } }
  }, async (request) => fastify.contacts.removeLabel(request.params.id, (await fastify.chatAccountFor(request)).phoneNumberId, request.params.label))
}

export default labels
