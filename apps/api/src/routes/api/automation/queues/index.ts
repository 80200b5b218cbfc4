import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger } from 'fastify'
import { QUEUE_NAMES, type Queues } from '@switchboard/core/queues'
import { TimeoutError, withTimeout } from '@switchboard/core/timeout'
import { errorResponses } from '../../../../schemas/common.ts'
import { QueueCounts, type QueueCounters } from './schemas.ts'
import { keyScopes } from '../../key-scopes.ts'

/**
 * Each queue gets this long to answer. The counters are read in parallel, so the whole
 * answer stays within its 2 seconds even when Redis hangs (README, Queues).
 */
const QUEUE_COUNTS_BUDGET_MS = 1500

async function countJobs (queue: Queues[keyof Queues], log: FastifyBaseLogger): Promise<QueueCounters> {
  try {
    const counts = await withTimeout(
      queue.getJobCounts('waiting', 'prioritized', 'active', 'completed', 'failed', 'delayed'),
      QUEUE_COUNTS_BUDGET_MS,
      'Queue counters'
    )
    return {
      name: queue.name,
      // Prioritized jobs wait too; BullMQ merely keeps them in a list of their own.
      waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
      active: counts.active ?? 0,
      completed: counts.completed ?? 0,
      failed: counts.failed ?? 0,
      delayed: counts.delayed ?? 0
    }
  } catch (err) {
    log.warn({ err, queue: queue.name }, 'queue counters unavailable')
    // Redis internals stay in the log; the client learns only which kind of failure it was.
    const error = err instanceof TimeoutError ? err.message : 'Queue unavailable'
    return { name: queue.name, error, waiting: 0, active: 0, completed: 0, failed: 0, delayed: 0 }
  }
}

/** GET /api/automation/queues (README, Queues): one failing queue is reported with `error` and zero counters. */
const queues: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRoute', keyScopes('queues:read', 'queues:read'))
  fastify.get('', {
    schema: {
      tags: ['queues'],
      response: { 200: QueueCounts, ...errorResponses(401) }
    }
  }, async (request) => ({
    queues: await Promise.all(QUEUE_NAMES.map(async (name) => countJobs(fastify.queues[name], request.log)))
  }))
}

export default queues
