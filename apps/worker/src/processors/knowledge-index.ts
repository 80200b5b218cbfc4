import { DelayedError } from 'bullmq'
import { createFairShare, fairShareOn } from '@switchboard/core/queues'
import type { ProcessorFactory } from '../context.ts'

/**
 * Knowledge sources to index (README, Knowledge): one job per source and request. Each is admitted
 * first (its adder's fair share of this worker's slots, README, Quotas), or held back while it is
 * not: a member who adds a thousand sources at once delays their own, never another member's.
 */
export const knowledgeIndexProcessor: ProcessorFactory<'knowledge-index'> = ({ knowledge, config, queues }) => {
  const fairShare = createFairShare({ concurrency: config.ai.knowledgeIndexConcurrency, share: config.workerUserShare, ...fairShareOn(queues['knowledge-index']) })
  return async (job, token) => {
    const { sourceId, userId } = job.data
    const admission = typeof userId === 'string' ? await fairShare.admit(userId, job.id ?? sourceId) : undefined
    if (admission?.admitted === false) {
      await job.moveToDelayed(Date.now() + admission.retryInMs, token)
      throw new DelayedError()
    }
    try {
      await knowledge.index(sourceId, { lastAttempt: job.attemptsMade + 1 >= (job.opts.attempts ?? 1) })
    } finally {
      admission?.release()
    }
  }
}
