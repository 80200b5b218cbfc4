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

/**
 * `ensureJob` for many jobs of one queue, cheap when most are there: each job is read by id
 * (one hash each, all sent at once; BullMQ's state check searches the wait list, which is long
 * in a backlog), the missing ones added by one addBulk, and only the finished ones checked one
 * by one. Returns how many it added, retried or replaced.
 */
export async function ensureJobs (queue: Queue, name: string, jobs: ReadonlyArray<{ jobId: string, data: object }>, maxAttempts = Infinity): Promise<number> {
  const found = await Promise.all(jobs.map(async ({ jobId }) => await queue.getJob(jobId)))
  const missing = jobs.filter((_job, i) => found[i] === undefined)
  let ensured = 0
  for (const [i, job] of found.entries()) {
    if (job?.finishedOn !== undefined && await ensureJob(queue, name, jobs[i]!.data, jobs[i]!.jobId, maxAttempts)) ensured++
  }
  if (missing.length > 0) await queue.addBulk(missing.map(({ jobId, data }) => ({ name, data, opts: { jobId } })))
  return ensured + missing.length
}
