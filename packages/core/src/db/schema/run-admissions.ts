import { index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { runs } from './runs.ts'

/**
 * The runs a worker admitted under their owner's `runsInFlight` quota (runs/admission.ts) before
 * they are RUNNING: a row counts while its run is still PENDING or WAITING under the claim it had
 * when admitted (its execution has not claimed it yet, or runs unclaimed in memory); once claimed
 * the run counts as RUNNING. Rows no longer valid are ignored and deleted by the owner's next
 * admission. Runs of owners without the quota never have a row.
 */
export const runAdmissions = pgTable('run_admissions', {
  runId: text('run_id').primaryKey().references(() => runs.id, { onDelete: 'cascade' }),
  userId: text('user_id').notNull(),
  claim: integer('claim').notNull()
}, (t) => [
  index('run_admissions_user_idx').on(t.userId)
])
