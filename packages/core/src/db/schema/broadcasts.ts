import { sql } from 'drizzle-orm'
import { index, integer, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { id, nullableTimestamp, timestamps } from './_columns.ts'
import type { ChatMessageError } from './chat.ts'
import { users } from './users.ts'

/** A broadcast's life (README, Broadcasts): scheduled until its `sendAt`, then sending until every recipient is done. */
export const BROADCAST_STATUSES = ['scheduled', 'sending', 'paused', 'cancelled', 'done'] as const
export type BroadcastStatus = typeof BROADCAST_STATUSES[number]

/**
 * A recipient's send: `queued` (waiting, or backing off until `notBefore`), `sending` (claimed under
 * a lease), `sent` (the platform took it: later statuses are its message's), `failed`, `skipped`.
 */
export const RECIPIENT_STATUSES = ['queued', 'sending', 'sent', 'failed', 'skipped'] as const
export type RecipientStatus = typeof RECIPIENT_STATUSES[number]

/** One template sent to many customers from one number, at a bounded rate. */
export const chatBroadcasts = pgTable('chat_broadcasts', {
  id: id(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  // The account it sends with: a linked account's id or `default`; its number keys the rate limit.
  accountId: text('account_id').notNull(),
  phoneNumberId: text('phone_number_id').notNull(),
  templateName: text('template_name').notNull(),
  lang: text('lang').notNull(),
  ratePerSecond: integer('rate_per_second').notNull(),
  sendAt: nullableTimestamp('send_at').notNull().defaultNow(),
  status: text('status', { enum: BROADCAST_STATUSES }).notNull().default('scheduled'),
  total: integer('total').notNull(),
  // Sends started again after a worker died during them: each may have reached the customer twice.
  repeated: integer('repeated').notNull().default(0),
  finishedAt: nullableTimestamp('finished_at'),
  ...timestamps()
}, (t) => [index('chat_broadcasts_user_idx').on(t.userId, t.createdAt)])

export const chatBroadcastRecipients = pgTable('chat_broadcast_recipients', {
  broadcastId: text('broadcast_id').notNull().references(() => chatBroadcasts.id, { onDelete: 'cascade' }),
  position: integer('position').notNull(),
  // The recipient's address: its phone, or its platform user id when the phone is withheld (chat/phone.ts).
  phone: text('phone').notNull(),
  components: jsonb('components').$type<unknown[]>(),
  status: text('status', { enum: RECIPIENT_STATUSES }).notNull().default('queued'),
  attempts: integer('attempts').notNull().default(0),
  // A recipient backing off (the platform's rate limits, a platform away) is not taken before this.
  notBefore: nullableTimestamp('not_before'),
  leaseUntil: nullableTimestamp('lease_until'),
  wamid: text('wamid'),
  error: jsonb('error').$type<ChatMessageError>(),
  sentAt: nullableTimestamp('sent_at')
}, (t) => [
  primaryKey({ columns: [t.broadcastId, t.position] }),
  index('chat_broadcast_recipients_pending_idx').on(t.broadcastId, t.position).where(sql`${t.status} in ('queued', 'sending')`),
  index('chat_broadcast_recipients_wamid_idx').on(t.wamid).where(sql`${t.wamid} is not null`)
])

export type ChatBroadcast = typeof chatBroadcasts.$inferSelect
export type ChatBroadcastRecipient = typeof chatBroadcastRecipients.$inferSelect
