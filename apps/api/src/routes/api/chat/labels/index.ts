import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { errorResponses } from '../../../../schemas/common.ts'
import { LabelCount, LabelsQuery } from './schemas.ts'

/**
 * The labels of the selected account's number (README, The team inbox: labels): every label its
 * conversations or contacts carry, with how many of each carry it. A label is added and removed on
 * a conversation (conversations/labels.ts) or a contact (contacts/labels.ts).
 */
const labels: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    schema: { tags: ['chat'], querystring: LabelsQuery, response: { 200: Type.Array(LabelCount), ...errorResponses(400, 401, 404) } }
  }, async (request) => fastify.chatLabels.list((await fastify.chatAccountFor(request)).phoneNumberId, request.query))
}

export default labels
