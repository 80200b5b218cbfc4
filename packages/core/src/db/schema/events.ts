import { sql } from 'drizzle-orm'
import { boolean, index, jsonb, pgTable, text } from 'drizzle-orm/pg-core'
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
  /**
   * Its EVENT workflows were started by its writer (`POST /api/automation/events` answers their run
   * ids): its dispatch only resolves the waits and cancelOn rules it matches (README, Events and waits).
   */
  startedByWriter: boolean('started_by_writer').notNull().default(false),
  createdAt: createdAt(),
  /** When its listeners were started; null while it waits for dispatch. */
  dispatchedAt: nullableTimestamp('dispatched_at')
}, (t) => [
  index('events_created_idx').on(t.createdAt),
  index('events_undispatched_idx').on(t.createdAt).where(sql`${t.dispatchedAt} is null`),
  // A wait written after its event was committed finds it (engine/event-waits.ts).
  index('events_user_name_created_idx').on(t.userId, t.name, t.createdAt)
])
