import { bigint, index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { nullableTimestamp } from './_columns.ts'
import { workflows } from './workflows.ts'

/**
 * Changes to a workflow's counters not yet folded into its row: run starts and ends append
 * here instead of updating `workflows`, so that no run waits on another's lock on its
 * workflow's row. The worker folds them in (workflows/counters.ts); reads add what is still here.
 */
export const workflowCounterDeltas = pgTable('workflow_counter_deltas', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  workflowId: text('workflow_id').notNull().references(() => workflows.id, { onDelete: 'cascade' }),
  /**
   * The first run it counts: a statement that starts or ends several runs of a workflow counts them
   * in one row, and a run withdrawn before its commit (runs/start.ts) has its statement's row
   * counted again without it. No foreign key: retention deletes runs.
   */
  runId: text('run_id').notNull(),
  runs: integer('runs').notNull().default(0),
  successes: integer('successes').notNull().default(0),
  failures: integer('failures').notNull().default(0),
  /** A start: the run's creation time. */
  lastRunAt: nullableTimestamp('last_run_at')
}, (t) => [
  // Reads sum a workflow's deltas; a withdrawal finds its runs' starts.
  index('workflow_counter_deltas_workflow_run_idx').on(t.workflowId, t.runId)
])
