import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { createdAt, id, nullableTimestamp } from './_columns.ts'
import { conversations, messages } from './chat.ts'
import { credentials } from './credentials.ts'
import { users } from './users.ts'

/**
 * The assistant of one platform number (README, The assistant), keyed like conversations: the
 * users who linked the number share it, and the installation's default account, which has no
 * row in chat_accounts, has one here too. No row: no instructions, the provider from the environment.
 */
export const chatAssistants = pgTable('chat_assistants', {
  phoneNumberId: text('phone_number_id').primaryKey(),
  instructions: text('instructions').notNull().default(''),
  // Answer even when a KEYWORD workflow matched the message (README, Inbound messages).
  answerAlways: boolean('answer_always').notNull().default(false),
  // A turn starts once the conversation has been quiet this long (README, The assistant: bursts).
  debounceMs: integer('debounce_ms').notNull().default(1500),
  // Hand the conversation to a person when the knowledge has nothing relevant, instead of answering (README, Knowledge).
  answerFromKnowledgeOnly: boolean('answer_from_knowledge_only').notNull().default(false),
  model: text('model'),
  // A bearer credential whose token is the provider key for this number, instead of AI_API_KEY.
  apiKeyCredentialId: text('api_key_credential_id').references(() => credentials.id, { onDelete: 'set null' }),
  updatedBy: text('updated_by').references(() => users.id, { onDelete: 'set null' }),
  updatedAt: nullableTimestamp('updated_at').notNull().defaultNow()
})

export const ASSISTANT_TURN_STATUSES = ['queued', 'running', 'waiting', 'done', 'failed'] as const
export type AssistantTurnStatus = typeof ASSISTANT_TURN_STATUSES[number]
/** How a finished turn ended; `handed_over`: to a person, the knowledge having nothing relevant (answerFromKnowledgeOnly). */
export const ASSISTANT_TURN_OUTCOMES = ['drafted', 'sent', 'superseded', 'skipped', 'failed', 'handed_over'] as const
export type AssistantTurnOutcome = typeof ASSISTANT_TURN_OUTCOMES[number]
/** What staff did with a turn's draft. */
export const DRAFT_DECISIONS = ['approved', 'edited', 'rejected', 'stale'] as const
export type DraftDecision = typeof DRAFT_DECISIONS[number]

/** One tool call of a turn, as the turn's log and the inbox show it. */
export interface AssistantToolCall {
  id: string
  name: string
  workflowId: string | null
  runId: string | null
  /** `invalid`: refused before any run (unknown tool, arguments not matching the schema). */
  status: 'running' | 'succeeded' | 'failed' | 'timed_out' | 'invalid'
  error?: string
}

/** A line of a turn's log: what the assistant did, in order. */
export interface AssistantLogEntry {
  at: string
  event: string
  detail?: Record<string, unknown>
}

/**
 * An assistant turn: one per inbound customer message it answers, worked one at a time per
 * conversation in message order (README, The assistant). `state` holds the model conversation
 * while the turn waits for tool runs, so a turn resumes where it stopped, on any worker.
 */
export const assistantTurns = pgTable('assistant_turns', {
  id: id(),
  conversationId: text('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
  messageId: text('message_id').notNull().references(() => messages.id, { onDelete: 'cascade' }),
  status: text('status', { enum: ASSISTANT_TURN_STATUSES }).notNull().default('queued'),
  outcome: text('outcome', { enum: ASSISTANT_TURN_OUTCOMES }),
  attempts: integer('attempts').notNull().default(0),
  // Until when the worker that claimed the turn owns it; past it, another worker takes it over.
  leaseUntil: nullableTimestamp('lease_until'),
  state: jsonb('state').$type<unknown>(),
  toolCalls: jsonb('tool_calls').$type<AssistantToolCall[]>().notNull().default(sql`'[]'::jsonb`),
  log: jsonb('log').$type<AssistantLogEntry[]>().notNull().default(sql`'[]'::jsonb`),
  model: text('model'),
  tokensIn: integer('tokens_in').notNull().default(0),
  tokensOut: integer('tokens_out').notNull().default(0),
  error: text('error'),
  draftMessageId: text('draft_message_id'),
  draftDecision: text('draft_decision', { enum: DRAFT_DECISIONS }),
  createdAt: createdAt(),
  finishedAt: nullableTimestamp('finished_at')
}, (t) => [
  uniqueIndex('assistant_turns_message_key').on(t.messageId),
  index('assistant_turns_conversation_idx').on(t.conversationId, t.createdAt, t.id),
  index('assistant_turns_unfinished_idx').on(t.createdAt).where(sql`${t.status} in ('queued', 'running', 'waiting')`)
])

export type ChatAssistant = typeof chatAssistants.$inferSelect
export type AssistantTurn = typeof assistantTurns.$inferSelect
