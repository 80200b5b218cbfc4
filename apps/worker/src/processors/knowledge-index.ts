import { createFairShare, fairShareOn } from '@switchboard/core/queues'
import type { ProcessorFactory } from '../context.ts'
import { withinFairShare } from './fair-share-job.ts'

/**
 * Knowledge sources to index (README, Knowledge): one job per source and request, at
 * KNOWLEDGE_INDEX_CONCURRENCY, each within its adder's fair share of those slots: a member who adds
 * a thousand sources at once delays their own, never another member's.
 */
export const knowledgeIndexProcessor: ProcessorFactory<'knowledge-index'> = ({ knowledge, config, queues }) => {
  const fairShare = createFairShare({ concurrency: config.ai.knowledgeIndexConcurrency, share: config.workerUserShare, ...fairShareOn(queues['knowledge-index']) })
  return async (job, token) => {
    const { sourceId, userId } = job.data
    await withinFairShare(fairShare, job, token, userId, async () => {
      await knowledge.index(sourceId, { lastAttempt: job.attemptsMade + 1 >= (job.opts.attempts ?? 1) })
    })
  }
}
