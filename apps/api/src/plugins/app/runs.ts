import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { runService, type RunService } from '@switchboard/core/run-service'

/** What a closing api waits at most for the jobs of runs it committed: the reconciler queues the rest. */
const DRAIN_MS = 2000

declare module 'fastify' {
  interface FastifyInstance {
    runs: RunService
  }
}

/** Runs: the core's run service (starting, reading, cancelling, replaying, approvals), drained on close. */
async function runs (fastify: FastifyInstance): Promise<void> {
  const service = runService({ db: fastify.db, queues: fastify.queues, logger: fastify.log, eventFanoutMax: fastify.config.limits.eventFanoutMax })
  fastify.addHook('onClose', async () => { await service.drain(DRAIN_MS) })
  fastify.decorate('runs', service)
}

export default fp(runs, { name: 'runs', dependencies: ['context'] })
