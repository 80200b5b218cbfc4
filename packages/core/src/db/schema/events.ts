import { sql } from 'drizzle-orm'
import { index, jsonb, pgTable, text } from 'drizzle-orm/pg-core'
import { createdAt, nullableTimestamp } from './_columns.ts'
import { users } from './users.ts'

/**
 * The outbox (events/outbox.ts): an event the service emits, written by the statement of the
 * change it describes, then dispatched to its listeners (the owner's EVENT workflows) by its
 * writer right after the commit or by the reconciler. Its id is stable: the key of what it starts.
 */
export const events = pgTable('events', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** Whose listeners receive it: the owner of what changed. */
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  payload: jsonb('payload').notNull(),
  createdAt: createdAt(),
  /** When its listeners were started; null while it waits for dispatch. */
  dispatchedAt: nullableTimestamp('dispatched_at')
}, (t) => [
  index('events_created_idx').on(t.createdAt),
  index('events_undispatched_idx').on(t.createdAt).where(sql`${t.dispatchedAt} is null`)
])
