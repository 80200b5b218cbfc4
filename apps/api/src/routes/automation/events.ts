import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { emitEvent } from '@switchboard/core/triggers'
import { errorResponses } from '../../schemas/common.ts'

const EmitEventBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200, errorMessage: 'name must be a string of 1 to 200 characters' }),
  payload: Type.Optional(Type.Unknown())
})

/** POST /api/automation/events (contract, Events): starts the caller's active EVENT workflows listening to `name`. */
const events: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/api/automation/events', {
    schema: {
      tags: ['runs'],
      body: EmitEventBody,
      response: { 202: Type.Object({ runIds: Type.Array(Type.String()) }), ...errorResponses(400, 401, 413, 415) }
    }
  }, async (request, reply) => {
    const runIds = await emitEvent({ db: fastify.db, queues: fastify.queues, eventFanoutMax: fastify.config.limits.eventFanoutMax }, {
      userId: request.user.sub,
      name: request.body.name,
      payload: request.body.payload ?? {}
    })
    return reply.code(202).send({ runIds })
  })
}

export default events
