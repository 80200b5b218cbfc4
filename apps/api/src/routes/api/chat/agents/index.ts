import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { errorResponses } from '../../../../schemas/common.ts'
import { Agent, AgentsQuery } from './schemas.ts'

/**
 * The people a conversation of the selected account may be assigned to (README, The team inbox):
 * whoever can use the account, by email, for the inbox's picker and for checking `assignedAgentId`.
 */
const agents: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    schema: { tags: ['chat'], querystring: AgentsQuery, response: { 200: Type.Array(Agent), ...errorResponses(400, 401, 404) } }
  }, async (request) => fastify.chat.accounts.agents((await fastify.chatAccountFor(request)).phoneNumberId, request.query))
}

export default agents
