import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { viewerOf } from '@switchboard/core/users'
import { errorResponses } from '../../../../schemas/common.ts'
import { EmitEventBody, EventRuns } from './schemas.ts'
import { keyScopes } from '../../key-scopes.ts'

/** POST /api/automation/events (README, Triggers): starts the caller's active EVENT workflows listening to `name` (an API key's: those of its workflowIds). */
const events: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRoute', keyScopes('events:write', 'events:write'))
  fastify.post('', {
    schema: {
      tags: ['runs'],
      body: EmitEventBody,
      response: { 202: EventRuns, ...errorResponses(400, 401, 413, 415) }
    }
  }, async (request, reply) => {
    const runIds = await fastify.triggers.emitEvent({
      viewer: viewerOf(request.user),
      name: request.body.name,
      payload: request.body.payload ?? {}
    })
    return reply.code(202).send({ runIds })
  })
}

export default events
