import type { Queue } from 'bullmq'
import { and, eq, isNull, lt, ne, or, sql } from 'drizzle-orm'
import type { Db, DbOrTx } from '../db/client.ts'
import { workflows, workflowSchedules, type Workflow } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import { TICK_JOB, type ScheduleJobData } from '../queues/catalog.ts'
import { withTimeout } from '../timeout.ts'
import type { DeletedWorkflow } from '../workflows/repository.ts'
import { cronTriggerOf, validateCronExpression, type CronTrigger } from '../workflows/validation.ts'

/** How many workflows the rebuild at worker start reconciles at once. */
const REBUILD_CONCURRENCY = 8

/**
 * BullMQ waits for a Redis connection that may never come back; a save that
 * needs the scheduler fails within this instead of hanging its request.
 */
const SCHEDULER_TIMEOUT_MS = 3000

/** The answer to a save that needs the scheduler while Redis is away: nothing was changed, a retry may succeed. */
const schedulerUnavailable = (): DomainError => new DomainError('SCHEDULER_UNAVAILABLE', 'Scheduler unavailable, retry later')

/** Runs one exchange with the scheduler queue within the time limit; any failure becomes `schedulerUnavailable`. */
async function onScheduler<T> (operation: () => Promise<T>, what: string): Promise<T> {
  try {
    return await withTimeout(operation(), SCHEDULER_TIMEOUT_MS, what)
  } catch (err) {
    throw Object.assign(schedulerUnavailable(), { cause: err })
  }
}

interface PlannedSchedule extends CronTrigger {
  nextRunAt: Date
}

type ScheduleFields = Pick<Workflow, 'isActive' | 'triggerType' | 'triggerConfig'>

/** The next time after `after` that a cron trigger fires, in its timezone; null when it never does or is invalid. @internal exported for its tests */
export function nextRunAt (trigger: CronTrigger, after: Date): Date | null {
  try {
    return validateCronExpression(trigger.cronExpression, trigger.timezone, after)
  } catch {
    return null
  }
}

/**
 * The schedule a workflow should have now, or null: only an active CRON
 * workflow with a valid expression is scheduled (README, Triggers; a CRON draft without one is not).
 */
export function plannedSchedule (workflow: ScheduleFields, now = new Date()): PlannedSchedule | null {
  if (!workflow.isActive) return null
  const trigger = cronTriggerOf(workflow.triggerType, workflow.triggerConfig)
  if (trigger === null) return null
  const next = nextRunAt(trigger, now)
  return next === null ? null : { ...trigger, nextRunAt: next }
}

/**
 * Serialises every change to one workflow's schedule (API saves, stale ticks,
 * rebuilds) for the rest of the transaction, so that the last writer always
 * acts on the committed state of the workflow.
 */
async function lockSchedule (tx: DbOrTx, workflowId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`workflow-schedule:${workflowId}`}, 0))`)
}

interface ScheduleSyncOptions {
  db: Db
  /** The `scheduled-tasks` queue. */
  queue: Queue<ScheduleJobData>
}

type ReconcileOutcome = 'scheduled' | 'unscheduled'

/**
 * Keeps each workflow's WorkflowSchedule row and its BullMQ job scheduler (id =
 * workflow id, on `scheduled-tasks`) in step with the workflow definition.
 */
export function createScheduleSync ({ db, queue }: ScheduleSyncOptions) {
  /** Whether Redis holds this scheduler with its next tick queued. */
  async function isRegistered (workflowId: string, trigger: CronTrigger): Promise<boolean> {
    const existing = await queue.getJobScheduler(workflowId)
    if (existing?.pattern !== trigger.cronExpression || existing.tz !== trigger.timezone || existing.next == null) return false
    return await queue.getJob(`repeat:${workflowId}:${existing.next}`) !== undefined
  }

  /** Registers the job scheduler unless Redis already holds the same one (re-upserting would drop a due tick). */
  async function register (workflowId: string, trigger: CronTrigger): Promise<void> {
    if (await isRegistered(workflowId, trigger)) return
    await queue.upsertJobScheduler(
      workflowId,
      { pattern: trigger.cronExpression, tz: trigger.timezone },
      // Ticks get the queue's retries; the run's idempotency key makes a retried tick start at most one run.
      { name: TICK_JOB, data: { workflowId } }
    )
  }

  async function unregister (workflowId: string): Promise<void> {
    await onScheduler(async () => await queue.removeJobScheduler(workflowId), `remove scheduler ${workflowId}`)
  }

  /**
   * Makes row and scheduler match `workflow` (null: deleted). The caller holds the schedule lock.
   * Unscheduling touches Redis only when a schedule row existed, unless `anyScheduler` (Redis
   * may hold a scheduler without a row: a stale tick, a rebuild), so saving a workflow that
   * never had a schedule does not depend on Redis.
   */
  async function apply (tx: DbOrTx, workflowId: string, workflow: ScheduleFields | null, anyScheduler: boolean): Promise<ReconcileOutcome> {
    const planned = workflow === null ? null : plannedSchedule(workflow)
    if (planned === null) {
      const removed = await tx.delete(workflowSchedules).where(eq(workflowSchedules.workflowId, workflowId))
        .returning({ id: workflowSchedules.id })
      if (removed.length > 0 || anyScheduler) await unregister(workflowId)
      return 'unscheduled'
    }
    // A changed expression or timezone is a new schedule: the old one is deleted (README, Triggers).
    await tx.delete(workflowSchedules).where(and(
      eq(workflowSchedules.workflowId, workflowId),
      or(ne(workflowSchedules.cronExpression, planned.cronExpression), ne(workflowSchedules.timezone, planned.timezone))
    ))
    await tx.insert(workflowSchedules)
      .values({ workflowId, cronExpression: planned.cronExpression, timezone: planned.timezone, nextRunAt: planned.nextRunAt })
      .onConflictDoUpdate({ target: workflowSchedules.workflowId, set: { nextRunAt: planned.nextRunAt } })
    await onScheduler(async () => { await register(workflowId, planned) }, `register scheduler ${workflowId}`)
    return 'scheduled'
  }

  /** Reads the committed workflow under the schedule lock and makes row and scheduler match it. */
  async function reconcile (workflowId: string): Promise<ReconcileOutcome> {
    return db.transaction(async (tx) => {
      await lockSchedule(tx, workflowId)
      const [workflow] = await tx
        .select({ isActive: workflows.isActive, triggerType: workflows.triggerType, triggerConfig: workflows.triggerConfig })
        .from(workflows).where(eq(workflows.id, workflowId)).limit(1)
      return apply(tx, workflowId, workflow ?? null, true)
    })
  }

  /**
   * At worker start, and when the reconciler finds schedulers missing: Redis may have lost
   * them, or kept some whose workflow is gone or changed. Every workflow that has, or should
   * have, a schedule on either side is reconciled with the database.
   */
  async function rebuild (): Promise<Record<ReconcileOutcome, number>> {
    const [active, rows, schedulers] = await Promise.all([
      db.select({ id: workflows.id }).from(workflows).where(and(eq(workflows.triggerType, 'CRON'), eq(workflows.isActive, true))),
      db.select({ id: workflowSchedules.workflowId }).from(workflowSchedules),
      queue.getJobSchedulers()
    ])
    const pending = [...new Set([...active.map((w) => w.id), ...rows.map((r) => r.id), ...schedulers.map((s) => s.key)])]
    const counts: Record<ReconcileOutcome, number> = { scheduled: 0, unscheduled: 0 }
    const lane = async (): Promise<void> => {
      for (let id = pending.pop(); id !== undefined; id = pending.pop()) counts[await reconcile(id)]++
    }
    await Promise.all(Array.from({ length: REBUILD_CONCURRENCY }, lane))
    return counts
  }

  return {
    /** The workflows service's hook: runs inside the transaction that saved the workflow. */
    async onSaved (workflow: Workflow, tx: DbOrTx): Promise<void> {
      await lockSchedule(tx, workflow.id)
      await apply(tx, workflow.id, workflow, false)
    },

    /** The workflows service's hook: the row went with the workflow (cascade), the scheduler is removed here. */
    async onDeleted (deleted: DeletedWorkflow, tx: DbOrTx): Promise<void> {
      await lockSchedule(tx, deleted.id)
      if (deleted.hadSchedule) await unregister(deleted.id)
    },

    reconcile,

    rebuild,

    /**
     * The reconciler's check, on each pass: when Redis holds another number of job schedulers
     * than there are schedule rows (Redis lost its data, or a failover lost recent writes), or
     * when `always` (Redis has just come back), every schedule is rebuilt. Returns how many
     * workflows were reconciled, 0 when the counts agreed.
     */
    async restoreLost (always: boolean): Promise<number> {
      if (!always) {
        const [[row], schedulers] = await Promise.all([
          db.select({ count: sql<number>`count(*)::int` }).from(workflowSchedules),
          queue.getJobSchedulersCount()
        ])
        if (row?.count === schedulers) return 0
      }
      const { scheduled, unscheduled } = await rebuild()
      return scheduled + unscheduled
    }
  }
}

export type ScheduleSync = ReturnType<typeof createScheduleSync>

/**
 * Records a tick on the schedule row. A retried or late tick never moves
 * lastRunAt backwards.
 */
export async function recordTick (db: DbOrTx, workflowId: string, scheduledAt: Date, next: Date | null): Promise<void> {
  await db.update(workflowSchedules)
    .set({ lastRunAt: scheduledAt, nextRunAt: next })
    .where(and(
      eq(workflowSchedules.workflowId, workflowId),
      or(isNull(workflowSchedules.lastRunAt), lt(workflowSchedules.lastRunAt, scheduledAt))
    ))
}
