import { UnrecoverableError, type Job } from 'bullmq'
import { createRunEngine } from '@switchboard/core/engine/engine'
import type { RunJobData } from '@switchboard/core/queues/catalog'
import { emitEvent } from '@switchboard/core/triggers/event'
import type { WorkerContext } from '../context.ts'
import type { ProcessorFactory } from './index.ts'

/** The engine every run queue of this process shares. */
export function runEngine (context: WorkerContext) {
  const { database, queues, logger, config } = context
  return createRunEngine({
    db: database.db,
    queues,
    logger,
    nodeOutputMaxBytes: config.nodeOutputMaxBytes,
    runResultMaxBytes: config.runResultMaxBytes,
    nodes: { chat: context.chat, http: context.http },
    emitEvent: async (input) => await emitEvent({ db: database.db, queues, eventFanoutMax: config.limits.eventFanoutMax }, input)
  })
}

/**
 * Executes the run named by the job. Node failures end the run FAILED and the
 * job completes; a database or Redis failure throws, so BullMQ retries the job
 * and the run is taken over from the node that was running.
 */
export const runProcessor: ProcessorFactory = (context) => {
  const engine = runEngine(context)
  // Three parameters: BullMQ passes the abort signal (fired when the job's lock is lost) only then.
  return async (job: Job<RunJobData>, _token?: string, signal?: AbortSignal) => {
    const runId = job.data?.runId
    if (typeof runId !== 'string' || runId === '') throw new UnrecoverableError('job data has no runId')
    const outcome = await engine.executeRun(runId, signal)
    context.logger.debug({ runId, jobId: job.id, outcome }, 'run job done')
    return { outcome }
  }
}
