import { eq } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { workflows } from '../db/schema/index.ts'
import type { Queues } from '../queues/catalog.ts'
import { startRun } from '../runs/start.ts'
import { plannedSchedule, recordTick, type ScheduleSync } from '../schedules/sync.ts'

interface TickDeps {
  db: Db
  queues: Queues
  scheduleSync: ScheduleSync
}

/** One tick as its job scheduler produced it: the schedule it was registered with and its planned time. */
interface Tick {
  workflowId: string
  scheduledAt: Date
  cronExpression: string | undefined
  timezone: string | undefined
}

export type TickOutcome = { runId: string, created: boolean } | { skipped: 'stale' }

/**
 * Starts the run of one cron tick. A tick whose workflow no longer has this
 * schedule (deleted, deactivated, changed) starts nothing and puts the
 * scheduler right. The idempotency key `cron:<time>` makes a retried or
 * duplicated tick start at most one run.
 */
export async function handleTick ({ db, queues, scheduleSync }: TickDeps, tick: Tick): Promise<TickOutcome> {
  const [workflow] = await db
    .select({
      id: workflows.id,
      userId: workflows.userId,
      triggerType: workflows.triggerType,
      triggerConfig: workflows.triggerConfig,
      isActive: workflows.isActive,
      runTags: workflows.runTags,
      flowControl: workflows.flowControl,
      cancelOn: workflows.cancelOn
    })
    .from(workflows).where(eq(workflows.id, tick.workflowId)).limit(1)
  // The scheduler computes the next tick from now when a tick is late, and so does this.
  const after = new Date(Math.max(Date.now(), tick.scheduledAt.getTime()))
  const planned = workflow === undefined ? null : plannedSchedule(workflow, after)
  if (workflow === undefined || planned === null ||
    planned.cronExpression !== tick.cronExpression || planned.timezone !== tick.timezone) {
    await scheduleSync.reconcile(tick.workflowId)
    return { skipped: 'stale' }
  }

  const started = await startRun({ db, queues }, {
    workflow,
    triggerData: { scheduledAt: tick.scheduledAt.toISOString(), cronExpression: planned.cronExpression },
    idempotencyKey: `cron:${tick.scheduledAt.getTime()}`
  })
  await recordTick(db, tick.workflowId, tick.scheduledAt, planned.nextRunAt)
  return started
}
