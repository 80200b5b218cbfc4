import { sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { workflowCounterDeltas, workflows } from '../db/schema/index.ts'
import type { Logger } from '../logger.ts'
import { periodicPass } from '../periodic.ts'

/**
 * Exact counters of the workflow row in the query: its folded values plus its deltas not
 * folded yet. A fold deletes deltas and adds them to the row in one transaction, so one
 * statement sees every run once, before or after it. Each is an index probe on
 * workflow_counter_deltas_workflow_run_idx, which the fold keeps short.
 */
const unfolded = (aggregate: SQL): SQL => sql`(select ${aggregate} from ${workflowCounterDeltas} d where d.workflow_id = ${workflows}.id)`

export const exactCounters = {
  runCount: sql<number>`(${workflows.runCount} + coalesce(${unfolded(sql`sum(d.runs)`)}, 0))::int`.mapWith(Number),
  successCount: sql<number>`(${workflows.successCount} + coalesce(${unfolded(sql`sum(d.successes)`)}, 0))::int`.mapWith(Number),
  failureCount: sql<number>`(${workflows.failureCount} + coalesce(${unfolded(sql`sum(d.failures)`)}, 0))::int`.mapWith(Number),
  // greatest ignores nulls: a workflow that never ran has none.
  lastRunAt: sql<Date | null>`greatest(${workflows.lastRunAt}, ${unfolded(sql`max(d.last_run_at)`)})`.mapWith(workflows.lastRunAt)
}

/** Deltas per fold statement: its row locks and its transaction stay short. */
const FOLD_BATCH_SIZE = 5000
/** Statements per pass, so one pass ends even while runs keep coming (the next takes the rest). */
const FOLD_MAX_BATCHES = 20

/**
 * Folds the oldest deltas into their workflows' rows and returns how many. Several workers
 * fold at once without waiting for each other's deltas (SKIP LOCKED); the workflow rows are
 * locked in id order so that two folds never deadlock. A run start or end never waits for a
 * fold: the fold's row lock (FOR NO KEY UPDATE) does not conflict with the key-share lock
 * of their foreign-key checks.
 */
export async function foldCounterDeltas (db: DbOrTx, batchSize = FOLD_BATCH_SIZE): Promise<number> {
  const [row] = await db.execute<{ folded: number }>(sql`
    with batch as (
      select id from workflow_counter_deltas order by id limit ${batchSize} for update skip locked
    ), folded as (
      delete from workflow_counter_deltas d using batch where d.id = batch.id
      returning d.workflow_id, d.runs, d.successes, d.failures, d.last_run_at
    ), per_workflow as (
      select workflow_id, sum(runs)::int as runs, sum(successes)::int as successes, sum(failures)::int as failures,
        max(last_run_at) as last_run_at
      from folded group by workflow_id
    ), locked as (
      select id from workflows where id in (select workflow_id from per_workflow) order by id for no key update
    ), applied as (
      update workflows set run_count = run_count + p.runs, success_count = success_count + p.successes,
        failure_count = failure_count + p.failures, last_run_at = greatest(workflows.last_run_at, p.last_run_at)
      from per_workflow p where workflows.id = p.workflow_id and workflows.id in (select id from locked)
    )
    select count(*)::int as folded from folded
  `)
  return row?.folded ?? 0
}

/** Between two passes: how long a delta waits to be folded at most, when no pass falls behind. */
const FOLD_INTERVAL_MS = 1000

/** The worker's loop that folds counter deltas, batch after batch, until a batch comes back short. */
export function createCounterFolding ({ db, logger, intervalMs = FOLD_INTERVAL_MS }: { db: DbOrTx, logger: Logger, intervalMs?: number }) {
  async function fold (): Promise<number> {
    let total = 0
    for (let batch = 0; batch < FOLD_MAX_BATCHES; batch++) {
      const folded = await foldCounterDeltas(db)
      total += folded
      if (folded < FOLD_BATCH_SIZE) break
    }
    return total
  }
  const loop = periodicPass(fold, { intervalMs, firstDelayMs: intervalMs, logger, failureMessage: 'counter fold failed' })
  return { fold, start: loop.start, stop: loop.stop }
}
