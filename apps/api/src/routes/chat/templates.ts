import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { errorResponses } from '../../schemas/common.ts'

/** A platform template record, as the platform describes it (spec 2.8 leaves the fields to the platform). */
export const Template = Type.Object({
  id: Type.String(),
  name: Type.String(),
  language: Type.String(),
  status: Type.String()
}, { additionalProperties: true })

/** Spec 4.3: the approved templates of the selected account's business account, fetched live. */
const templates: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/api/chat/templates', {
    schema: { tags: ['chat'], response: { 200: Type.Array(Template), ...errorResponses(400, 401, 404, 500, 502) } }
  }, async (request) => fastify.chat.listTemplates(await fastify.chatAccountFor(request)))
}

export default templates
