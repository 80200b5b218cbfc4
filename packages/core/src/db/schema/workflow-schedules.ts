import { pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { createdAt, id, nullableTimestamp } from './_columns.ts'
import { workflows } from './workflows.ts'

export const workflowSchedules = pgTable('workflow_schedules', {
  id: id(),
  workflowId: text('workflow_id').notNull().references(() => workflows.id, { onDelete: 'cascade' }),
  cronExpression: text('cron_expression').notNull(),
  timezone: text('timezone').notNull().default('UTC'),
  nextRunAt: nullableTimestamp('next_run_at'),
  lastRunAt: nullableTimestamp('last_run_at'),
  createdAt: createdAt()
}, (t) => [
  // An active CRON workflow has exactly one schedule (README, Triggers).
  uniqueIndex('workflow_schedules_workflow_key').on(t.workflowId)
])

export type WorkflowSchedule = typeof workflowSchedules.$inferSelect
