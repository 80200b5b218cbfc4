import { DelayedError, type Job } from 'bullmq'
import type { createFairShare } from '@switchboard/core/queues'

type FairShare = ReturnType<typeof createFairShare>

/**
 * Works a job within its owner's fair share of this worker's slots (README, Quotas), or holds it
 * back (moved to delayed, woken when one of the owner's jobs ends here) while it is not admitted.
 * A job without an owner (one the reconciler queued before owners were recorded) is worked at once.
 */
export async function withinFairShare<T> (fairShare: FairShare, job: Job, token: string | undefined, userId: string | undefined, work: () => Promise<T>): Promise<T> {
  const admission = typeof userId === 'string' ? await fairShare.admit(userId, job.id ?? '') : undefined
  if (admission?.admitted === false) {
    await job.moveToDelayed(Date.now() + admission.retryInMs, token)
    throw new DelayedError()
  }
  try {
    return await work()
  } finally {
    admission?.release()
  }
}
