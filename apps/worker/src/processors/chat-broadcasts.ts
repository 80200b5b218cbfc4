import { DelayedError } from 'bullmq'
import { broadcastSender, createSendRate } from '@switchboard/core/chat'
import type { ProcessorFactory } from '../context.ts'

/**
 * Broadcast sends (README, Broadcasts): one job per broadcast works its recipients at its rate;
 * a broadcast waiting (its sendAt, a backoff) is a delayed job, never a held worker slot.
 */
export const chatBroadcastsProcessor: ProcessorFactory<'chat-broadcasts'> = (context) => {
  const { config, logger, redis, chat } = context
  const sender = broadcastSender({
    db: context.database.db,
    chat,
    sendRate: createSendRate(redis, `${config.queuePrefix}:rate-limit:`),
    logger
  })
  return async (job, token, signal) => {
    const next = await sender.run(job.data.broadcastId, signal)
    if (next === undefined) return
    await job.moveToDelayed(Date.now() + next.delayMs, token)
    throw new DelayedError()
  }
}
