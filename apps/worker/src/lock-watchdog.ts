import type { Job, Processor } from 'bullmq'
import type { Logger } from '@switchboard/core/logger'

interface LockWatchdogOptions {
  queue: string
  /** The Worker's lockDuration: a lock not renewed for this long has expired in Redis. */
  lockDurationMs: number
  /** A job is stopped this long before its lock could expire: time for a late renewal answer and for its node to stop. */
  marginMs: number
  /** How often locks are checked. */
  checkEveryMs: number
  logger: Logger
}

interface WatchedJob {
  /** When the job's lock was last taken or renewed (local clock). */
  lockedAt: number
  controller: AbortController
}

/**
 * Stops the jobs of one Worker whose locks it cannot keep. BullMQ aborts a job
 * only when Redis answers that its lock is gone (`lockRenewalFailed`); while
 * Redis cannot be reached, renewals fail silently and the job would run on
 * after its lock expired and another worker took it over. So each job's signal
 * also aborts once its lock was last taken or renewed more than lockDuration
 * minus `marginMs` ago, before another worker can take the job. The run engine
 * then stops between nodes and aborts the node in flight.
 */
export function createLockWatchdog (options: LockWatchdogOptions) {
  const { lockDurationMs, marginMs, logger } = options
  const watched = new Map<string, WatchedJob>()

  const stop = (jobId: string, job: WatchedJob, reason: string): void => {
    if (job.controller.signal.aborted) return
    logger.warn({ queue: options.queue, jobId, reason }, 'job stopped: its lock cannot be kept')
    job.controller.abort(reason)
  }

  const timer = setInterval(() => {
    const now = Date.now()
    for (const [jobId, job] of watched) {
      const unrenewedMs = now - job.lockedAt
      if (unrenewedMs > lockDurationMs - marginMs) stop(jobId, job, `the job lock was not renewed for ${unrenewedMs} ms (it expires after ${lockDurationMs} ms)`)
    }
  }, options.checkEveryMs)
  timer.unref()

  return {
    /** The Worker's processor, given a signal that aborts on BullMQ's or on the watchdog's word. */
    wrap<D, R, N extends string> (processor: Processor<D, R, N>): Processor<D, R, N> {
      // Three parameters: BullMQ passes its signal only to a processor that declares it.
      return async (job: Job<D, R, N>, token?: string, signal?: AbortSignal) => {
        const jobId = job.id
        if (jobId === undefined) return await processor(job, token, signal)
        // The lock was taken when the job became active (processedOn, the worker's clock).
        const watchedJob: WatchedJob = { lockedAt: job.processedOn ?? Date.now(), controller: new AbortController() }
        watched.set(jobId, watchedJob)
        try {
          return await processor(job, token, signal === undefined ? watchedJob.controller.signal : AbortSignal.any([signal, watchedJob.controller.signal]))
        } finally {
          if (watched.get(jobId) === watchedJob) watched.delete(jobId)
        }
      }
    },
    /** Wire to the Worker's `locksRenewed` event. */
    renewed (jobIds: readonly string[]): void {
      const now = Date.now()
      for (const jobId of jobIds) {
        const job = watched.get(jobId)
        if (job !== undefined) job.lockedAt = now
      }
    },
    /** Wire to the Worker's `lockRenewalFailed` event: Redis says another worker may own these jobs. */
    lost (jobIds: readonly string[]): void {
      for (const jobId of jobIds) {
        const job = watched.get(jobId)
        if (job !== undefined) stop(jobId, job, 'the job lock was lost')
      }
    },
    close (): void {
      clearInterval(timer)
    }
  }
}

export type LockWatchdog = ReturnType<typeof createLockWatchdog>
