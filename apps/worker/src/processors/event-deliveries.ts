import { DelayedError } from 'bullmq'
import { eventDeliveryAttempts } from '@switchboard/core/observability'
import type { ProcessorFactory } from '../context.ts'

/**
 * Subscription deliveries (README, Event subscriptions): one job per delivery, one attempt per
 * run of the job; the wait before the next attempt is the job delayed, never a held slot.
 */
export const eventDeliveriesProcessor: ProcessorFactory<'event-deliveries'> = (context) => {
  const { deliverer } = context
  return async (job, token) => {
    const { outcome, delayMs } = await deliverer.deliver(job.data.deliveryId)
    eventDeliveryAttempts.inc({ outcome })
    if (delayMs === undefined) return
    await job.moveToDelayed(Date.now() + delayMs, token)
    throw new DelayedError()
  }
}
