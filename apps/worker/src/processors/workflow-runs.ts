import { DelayedError, UnrecoverableError } from 'bullmq'
import type { RunOutcome } from '@switchboard/core/engine'
import { createRunAdmission, type RunAdmission } from '@switchboard/core/runs'
import { fairShareOn, type QueueName } from '@switchboard/core/queues'
import type { ProcessorFactory } from '../context.ts'

/**
 * Executes the run named by the job. Node failures end the run FAILED and the
 * job completes; a database or Redis failure throws, so BullMQ retries the job
 * and, as the same owner, it claims the run again from the node that was
 * running (an infrastructure retry, not a takeover). A first delivery is
 * admitted first (runs/admission.ts: the owner's fair share of this worker's
 * slots and their in-flight quota), or held back while it is not.
 */
export const runProcessor: ProcessorFactory<'workflow-runs' | 'agent-execution'> = ({ engine, logger, config, database, queues }) => {
  // One admission per run queue: each has its own slots in this worker.
  const admissions = new Map<QueueName, RunAdmission>()
  const admissionOf = (name: 'workflow-runs' | 'agent-execution'): RunAdmission => {
    let admission = admissions.get(name)
    if (admission === undefined) {
      admission = createRunAdmission({
        db: database.db,
        concurrency: config.workerConcurrency,
        share: config.workerUserShare,
        quotas: config.quotas,
        ...fairShareOn(queues[name])
      })
      admissions.set(name, admission)
    }
    return admission
  }

  // Three parameters: BullMQ passes the abort signal (fired when the job's lock is lost) only then.
  return async (job, token, signal) => {
    const runId = job.data?.runId
    if (typeof runId !== 'string' || runId === '') throw new UnrecoverableError('job data has no runId')
    const requestId = typeof job.data.requestId === 'string' ? job.data.requestId : undefined
    const traceparent = typeof job.data.traceparent === 'string' ? job.data.traceparent : undefined
    // A retry or a takeover goes on with a run that is RUNNING already: it was admitted.
    const admission = typeof job.data.userId === 'string' && job.attemptsMade === 0 && job.stalledCounter === 0
      ? await admissionOf(job.queueName as 'workflow-runs' | 'agent-execution').admit(job.data.userId, job.id ?? runId, runId)
      : undefined
    if (admission?.admitted === false) {
      await job.moveToDelayed(Date.now() + admission.retryInMs, token)
      throw new DelayedError()
    }
    let outcome: RunOutcome | undefined
    try {
      // A run waiting for a slot of its workflow: its job is delayed, and woken when a slot frees.
      const hold = async (until: number): Promise<void> => { await job.moveToDelayed(until, token) }
      outcome = await engine.executeRun(runId, signal, { requestId, traceparent, job, hold, wake: job.data.wake === true, gated: job.data.gated === true })
      logger.debug({ runId, jobId: job.id, requestId, outcome }, 'run job done')
      if (outcome === 'HELD') throw new DelayedError()
      // The job's lock was lost or not renewed in time. Failing (not completing) the job: if this worker still
      // holds the lock after all, BullMQ retries it and the run goes on; if not, the job's new owner has it.
      if (outcome === 'ABANDONED') throw new Error(`stopped executing the run: ${String(signal?.reason ?? 'the job lock was lost')}`)
      return { outcome }
    } finally {
      // Retried (a store error) or taken over (the lock was lost), the run goes on under this admission.
      await admission?.release(outcome === undefined || outcome === 'ABANDONED')
    }
  }
}
