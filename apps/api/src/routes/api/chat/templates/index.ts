import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../../../schemas/common.ts'
import { Templates } from './schemas.ts'

/** The approved templates of the selected account's business account, fetched live (README, Chat). */
const templates: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    schema: { tags: ['chat'], response: { 200: Templates, ...errorResponses(400, 401, 404, 500, 502) } }
  }, async (request) => fastify.chat.listTemplates(await fastify.chatAccountFor(request)))
}

export default templates
