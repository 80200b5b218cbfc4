import { UnrecoverableError } from 'bullmq'
import type { ProcessorFactory } from '../context.ts'

/**
 * Executes the run named by the job. Node failures end the run FAILED and the
 * job completes; a database or Redis failure throws, so BullMQ retries the job
 * and the run is taken over from the node that was running.
 */
export const runProcessor: ProcessorFactory<'workflow-runs' | 'agent-execution'> = ({ engine, logger }) => {
  // Three parameters: BullMQ passes the abort signal (fired when the job's lock is lost) only then.
  return async (job, _token, signal) => {
    const runId = job.data?.runId
    if (typeof runId !== 'string' || runId === '') throw new UnrecoverableError('job data has no runId')
    const outcome = await engine.executeRun(runId, signal)
    logger.debug({ runId, jobId: job.id, outcome }, 'run job done')
    return { outcome }
  }
}
