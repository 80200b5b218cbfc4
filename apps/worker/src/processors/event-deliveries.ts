import { DelayedError } from 'bullmq'
import { eventDeliveryAttempts } from '@switchboard/core/observability'
import { createFairShare, fairShareOn } from '@switchboard/core/queues'
import type { ProcessorFactory } from '../context.ts'
import { withinFairShare } from './fair-share-job.ts'

/**
 * Subscription deliveries (README, Event subscriptions): one job per delivery, one attempt per
 * run of the job; the wait before the next attempt is the job delayed, never a held slot. Each
 * attempt is admitted first (the owner's fair share of this worker's delivery slots, README,
 * Quotas), or held back while it is not: a subscriber that hangs holds its owner's slots only.
 */
export const eventDeliveriesProcessor: ProcessorFactory<'event-deliveries'> = ({ deliverer, config, queues }) => {
  const fairShare = createFairShare({ concurrency: config.eventSubscriptions.concurrency, share: config.workerUserShare, ...fairShareOn(queues['event-deliveries']) })
  return async (job, token) => {
    const { deliveryId, userId } = job.data
    await withinFairShare(fairShare, job, token, userId, async () => {
      const { outcome, delayMs } = await deliverer.deliver(deliveryId)
      eventDeliveryAttempts.inc({ outcome })
      if (delayMs === undefined) return
      await job.moveToDelayed(Date.now() + delayMs, token)
      throw new DelayedError()
    })
  }
}
