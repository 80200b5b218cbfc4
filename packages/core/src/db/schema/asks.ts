import { sql } from 'drizzle-orm'
import { integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { createdAt, nullableTimestamp } from './_columns.ts'
import { conversations, type ChatMessageDetails, type ChatMessageMedia } from './chat.ts'
import { runs } from './runs.ts'

/**
 * Where an `ask` stands (README, Conversations): `waiting` for the customer's next message;
 * `answered` holds it until the node reads it; then `done`, or `waiting` again after an invalid
 * answer. It ends `timeout`, `superseded` (a newer ask of the conversation took over) or
 * `exited` (an exit keyword, or the customer opted out).
 */
export const ASK_STATUSES = ['waiting', 'answered', 'done', 'timeout', 'superseded', 'exited'] as const
export type AskStatus = typeof ASK_STATUSES[number]

/** The customer message an ask took, as the node reads it. */
export interface AskAnswer {
  messageId: string
  wamid: string
  type: string
  text: string
  /** A tap on a button or list row: its kind, id and title. */
  interactive?: { type: string, id: string, title: string }
  media?: ChatMessageMedia
  /** A completed flow, a shared location: what `expect: flow` and `expect: location` read. */
  details?: ChatMessageDetails
}

/**
 * An `ask` node's wait for its customer (README, Conversations): one row per run and node; at most
 * one open (waiting or answered) per conversation, so that an inbound message finds its run in
 * one index read and two workers taking the same answer race on one row.
 */
export const chatAsks = pgTable('chat_asks', {
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  nodeId: text('node_id').notNull(),
  conversationId: text('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
  status: text('status', { enum: ASK_STATUSES }).notNull().default('waiting'),
  // Answers the node has read so far (valid or not).
  attempts: integer('attempts').notNull().default(0),
  // Questions sent so far: a node that runs again after a crash knows whether it asked.
  asked: integer('asked').notNull().default(0),
  answer: jsonb('answer').$type<AskAnswer>(),
  expiresAt: nullableTimestamp('expires_at').notNull(),
  createdAt: createdAt(),
  updatedAt: nullableTimestamp('updated_at').notNull().defaultNow()
}, (t) => [
  primaryKey({ columns: [t.runId, t.nodeId] }),
  uniqueIndex('chat_asks_open_key').on(t.conversationId).where(sql`${t.status} in ('waiting', 'answered')`)
])

export type ChatAsk = typeof chatAsks.$inferSelect
