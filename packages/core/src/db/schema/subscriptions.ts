import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { createdAt, id, nullableTimestamp, timestamps } from './_columns.ts'
import { users } from './users.ts'

/**
 * An outbound event subscription (README, Event subscriptions): the owner's events of the names
 * in `events` are POSTed to `url`, signed per Standard Webhooks with `secret`.
 */
export const eventSubscriptions = pgTable('event_subscriptions', {
  id: id(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  url: text('url').notNull(),
  events: text('events').array().notNull(),
  /** The signing secret (`whsec_…`), encrypted with the keyring (encryption.ts). */
  secretEncrypted: text('secret_encrypted').notNull(),
  enabled: boolean('enabled').notNull().default(true),
  /** Why it was disabled: the last failure, once deliveries kept failing past the bound. */
  disabledReason: text('disabled_reason'),
  /** Deliveries failed in a row (each after all its attempts); a success sets it back to 0. */
  consecutiveFailures: integer('consecutive_failures').notNull().default(0),
  ...timestamps()
}, (t) => [
  index('event_subscriptions_user_idx').on(t.userId, t.createdAt)
])

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const
export type DeliveryStatus = typeof DELIVERY_STATUSES[number]

/**
 * One event for one subscription. Its id is the `webhook-id` of every attempt and replay, so a
 * subscriber deduplicates on it; (subscription, event) is unique, so a dispatch repeated after a
 * crash makes no second delivery.
 */
export const eventDeliveries = pgTable('event_deliveries', {
  id: id(),
  subscriptionId: text('subscription_id').notNull().references(() => eventSubscriptions.id, { onDelete: 'cascade' }),
  eventId: text('event_id').notNull(),
  eventName: text('event_name').notNull(),
  payload: jsonb('payload').notNull(),
  status: text('status', { enum: DELIVERY_STATUSES }).notNull().default('pending'),
  attempts: integer('attempts').notNull().default(0),
  nextAttemptAt: nullableTimestamp('next_attempt_at'),
  createdAt: createdAt(),
  completedAt: nullableTimestamp('completed_at')
}, (t) => [
  uniqueIndex('event_deliveries_subscription_event_key').on(t.subscriptionId, t.eventId),
  index('event_deliveries_subscription_idx').on(t.subscriptionId, t.createdAt),
  index('event_deliveries_pending_idx').on(t.nextAttemptAt).where(sql`${t.status} = 'pending'`)
])

/** One POST of a delivery: what the subscriber answered, or why nothing was. */
export const eventDeliveryAttempts = pgTable('event_delivery_attempts', {
  id: id(),
  deliveryId: text('delivery_id').notNull().references(() => eventDeliveries.id, { onDelete: 'cascade' }),
  at: createdAt(),
  statusCode: integer('status_code'),
  latencyMs: integer('latency_ms').notNull(),
  /** The answer's first bytes, or the error that ended the attempt. */
  responseExcerpt: text('response_excerpt'),
  error: text('error')
}, (t) => [index('event_delivery_attempts_delivery_idx').on(t.deliveryId, t.at)])
