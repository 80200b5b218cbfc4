import { sql } from 'drizzle-orm'
import { index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { runs } from './runs.ts'

const RUN_KEY_STATES = ['waiting', 'holding'] as const
type RunKeyState = typeof RUN_KEY_STATES[number]

const timestampColumn = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

/**
 * The runs of workflows with a `flowControl.concurrency` (engine/flow-control.ts), one row each, written
 * with the run: `waiting` for a slot of its key (valid while the run is PENDING), then `holding` one
 * (valid while the run is RUNNING or WAITING: a run at a wait keeps its key's slot). Rows no longer valid
 * are ignored by every read and deleted by the next admission to their key.
 */
export const runKeys = pgTable('run_keys', {
  runId: text('run_id').primaryKey().references(() => runs.id, { onDelete: 'cascade' }),
  workflowId: text('workflow_id').notNull(),
  key: text('key').notNull(),
  // Its place in the key's line: its creation time, earlier by its priority (README, Flow control).
  place: timestampColumn('place').notNull(),
  state: text('state', { enum: RUN_KEY_STATES }).$type<RunKeyState>().notNull(),
  // Its priority key (README, Flow control): the runs of one take turns with the others' in the line.
  fairKey: text('fair_key')
}, (t) => [
  index('run_keys_line_idx').on(t.workflowId, t.key, t.state, t.place, t.runId),
  index('run_keys_fair_idx').on(t.workflowId, t.key, t.fairKey, t.place).where(sql`${t.state} = 'waiting' and ${t.fairKey} is not null`)
])

/**
 * The rate limits' schedules (engine/flow-control.ts): per workflow and key, the theoretical time
 * of the next start (GCRA), moved on by each start it reserves.
 */
export const flowRates = pgTable('flow_rates', {
  workflowId: text('workflow_id').notNull(),
  key: text('key').notNull(),
  nextAt: timestampColumn('next_at').notNull()
}, (t) => [
  primaryKey({ columns: [t.workflowId, t.key] })
])

/**
 * The debounced runs still waiting (runs/start.ts writes them, engine/flow-control.ts deletes one
 * when its run starts): a start of the same key replaces the run's trigger data and moves `dueAt`,
 * never past `latestAt` (maxWaitSeconds after the burst's first start).
 */
export const runDebounces = pgTable('run_debounces', {
  workflowId: text('workflow_id').notNull(),
  key: text('key').notNull(),
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  dueAt: timestampColumn('due_at').notNull(),
  latestAt: timestampColumn('latest_at'),
  // How long a start of the key moves dueAt on, in ms: the workflow's periodSeconds when the burst began.
  periodMs: integer('period_ms').notNull()
}, (t) => [
  primaryKey({ columns: [t.workflowId, t.key] }),
  uniqueIndex('run_debounces_run_idx').on(t.runId)
])
