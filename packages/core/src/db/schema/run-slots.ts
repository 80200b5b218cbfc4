import { sql } from 'drizzle-orm'
import { index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { runs } from './runs.ts'

const RUN_SLOT_STATES = ['waiting', 'holding'] as const
type RunSlotState = typeof RUN_SLOT_STATES[number]

/**
 * The runs of workflows with a `maxConcurrentRuns` that asked for a slot (engine/slots.ts):
 * `holding` one (valid while the run is RUNNING), or `waiting` for one (valid while the run is
 * still PENDING or WAITING under the claim it had when it asked). Rows no longer valid are
 * ignored by every read and deleted by the next admission to their workflow. Runs of
 * workflows without a limit never have a row.
 */
export const runSlots = pgTable('run_slots', {
  runId: text('run_id').primaryKey().references(() => runs.id, { onDelete: 'cascade' }),
  workflowId: text('workflow_id').notNull(),
  // The run's place: its creation time, earlier by its priority (runs/flow-control.ts); waiting runs are admitted by it, first first.
  runCreatedAt: timestamp('run_created_at', { withTimezone: true, mode: 'date' }).notNull(),
  state: text('state', { enum: RUN_SLOT_STATES }).$type<RunSlotState>().notNull(),
  // The run's claim when it asked: a later claim (it started after all, or resumed) means it no longer waits.
  claim: integer('claim').notNull(),
  // The run's priority key (README, Flow control): the runs of one take turns with the others' in the line.
  fairKey: text('fair_key')
}, (t) => [
  index('run_slots_workflow_idx').on(t.workflowId, t.state, t.runCreatedAt, t.runId),
  index('run_slots_fair_idx').on(t.workflowId, t.fairKey, t.runCreatedAt).where(sql`${t.state} = 'waiting' and ${t.fairKey} is not null`)
])
