import { sql } from 'drizzle-orm'
import { index, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { createdAt, nullableTimestamp } from './_columns.ts'
import { runs } from './runs.ts'

/** One path into an event's payload and the text its value must equal (a listener's `match`, rendered). */
export interface EventMatch {
  path: string[]
  value: string
}

/** The event a wait took, as the wait_for_event node outputs it. */
export interface ReceivedEvent {
  id: string
  name: string
  payload: unknown
  receivedAt: string
}

/**
 * A run listening for an event (README, Events and waits): a `wait_for_event` node's wait
 * (`listener` its node id) or one of its workflow's `cancelOn` rules (`cancelOn:<index>`), with
 * its `match` rendered. The dispatch of a matching event sets `event` once (a wait) or cancels the
 * run (a rule); `closedAt` ends it without one (a wait's timeout, a rule of a run that ended), so
 * the first of the two wins the row.
 */
export const eventListens = pgTable('event_listens', {
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  listener: text('listener').notNull(),
  kind: text('kind', { enum: ['wait', 'cancel'] }).notNull(),
  userId: text('user_id').notNull(),
  eventName: text('event_name').notNull(),
  match: jsonb('match').$type<EventMatch[]>().notNull(),
  // Events committed from then on count (a wait: when its node started; a rule: when its run was created).
  since: nullableTimestamp('since').notNull(),
  // A wait's time-out; null for a rule, which lasts as long as its run.
  expiresAt: nullableTimestamp('expires_at'),
  event: jsonb('event').$type<ReceivedEvent>(),
  closedAt: nullableTimestamp('closed_at'),
  createdAt: createdAt()
}, (t) => [
  primaryKey({ columns: [t.runId, t.listener] }),
  // An event's dispatch finds the open listeners of its user and name in one index read.
  index('event_listens_open_idx').on(t.userId, t.eventName).where(sql`${t.event} is null and ${t.closedAt} is null`)
])
