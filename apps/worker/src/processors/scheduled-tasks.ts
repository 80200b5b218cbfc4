import type { JobSchedulerJobOptions } from 'bullmq'
import { SCHEDULED_TASKS } from '@switchboard/core/queues'
import { createScheduleSync } from '@switchboard/core/schedules'
import { handleTick, type TickOutcome } from '@switchboard/core/triggers'
import type { ProcessorFactory } from '../context.ts'

/**
 * Cron ticks. BullMQ produces each tick of a job scheduler once however many
 * workers run: the tick's job id is `repeat:<workflowId>:<time>`, and only the
 * worker that takes the current tick may add the next one.
 */
export const scheduledTasksProcessor: ProcessorFactory<'scheduled-tasks'> = (context) => {
  const { db } = context.database
  const deps = { db, queues: context.queues, scheduleSync: createScheduleSync({ db, queue: context.queues[SCHEDULED_TASKS] }) }

  return async (job): Promise<TickOutcome> => {
    // A scheduler's jobs carry the schedule they were produced by, and their planned time.
    const { repeat, prevMillis } = job.opts as JobSchedulerJobOptions
    const outcome = await handleTick(deps, {
      workflowId: job.data.workflowId,
      scheduledAt: new Date(prevMillis ?? job.timestamp),
      cronExpression: repeat?.pattern,
      timezone: repeat?.tz
    })
    if ('skipped' in outcome) context.logger.info({ workflowId: job.data.workflowId, jobId: job.id }, 'stale cron tick skipped')
    return outcome
  }
}
