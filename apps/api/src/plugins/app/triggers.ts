import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { createTriggerTargets, emitEvent, type EmitEventInput, type TriggerTargets } from '@switchboard/core/triggers'

interface Triggers {
  /** The workflow a fire or an inbound webhook starts a run from; a viewer scopes it to its owner. */
  findTarget: TriggerTargets['find']
  /** Starts the event's listeners; the ids of the runs started. */
  emitEvent: (input: EmitEventInput) => Promise<string[]>
}

function createTriggers (fastify: FastifyInstance): Triggers {
  const { db, queues } = fastify
  return {
    findTarget: createTriggerTargets(db).find,
    emitEvent: async (input) => emitEvent({ db, queues, logger: fastify.log, eventFanoutMax: fastify.config.limits.eventFanoutMax }, input)
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    triggers: Triggers
  }
}

/** How a fire, an inbound webhook or an event finds its workflows (and, for events, starts their runs). */
async function triggers (fastify: FastifyInstance): Promise<void> {
  fastify.decorate('triggers', createTriggers(fastify))
}

export default fp(triggers, { name: 'triggers', dependencies: ['context'] })
