import type { Queue } from 'bullmq'

/** A job that will still (or does now) run. */
export const LIVE_JOB_STATES = new Set(['active', 'waiting', 'delayed', 'prioritized', 'waiting-children'])

/**
 * Makes sure job `jobId` will run: added when missing (Redis lost it), retried when it failed
 * (while it has made fewer than `maxAttempts` attempts), replaced when it completed without
 * doing its work. Returns whether it did any of these.
 */
export async function ensureJob (queue: Queue, name: string, data: object, jobId: string, maxAttempts = Infinity): Promise<boolean> {
  const state = await queue.getJobState(jobId)
  if (LIVE_JOB_STATES.has(state)) return false
  if (state === 'failed') {
    const job = await queue.getJob(jobId)
    if (job === undefined || job.attemptsMade >= maxAttempts) return false
    await job.retry('failed')
    return true
  }
  if (state === 'completed') await queue.remove(jobId)
  await queue.add(name, data, { jobId })
  return true
}
