import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { createdAt, id, nullableTimestamp, timestamps } from './_columns.ts'
import { AI_MODES, MESSAGE_SENDER_TYPES } from '../values.ts'
import { users } from './users.ts'

export const CONVERSATION_PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const
export { AI_MODES, MESSAGE_SENDER_TYPES }
export const MESSAGE_DIRECTIONS = ['inbound', 'outbound'] as const
export const MESSAGE_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const
/** An assistant's reply waiting for staff (README, Chat: message statuses); approved, it becomes `sent`. */
export const DRAFT_STATUSES = ['pending_approval', 'rejected', 'stale'] as const

/** Why the platform failed a message, as the API returns it: the platform's code, title and details. */
export interface ChatMessageError {
  code: number | null
  title: string
  details: string | null
}

/**
 * The media of an image, document, audio, video or sticker message: the platform's media id (or
 * the link it was sent from), and what came with it. `GET /api/chat/messages/:id/media` fetches it by id.
 */
export interface ChatMessageMedia {
  id?: string
  link?: string
  mimeType?: string
  caption?: string
  filename?: string
  sha256?: string
}

/** A message's kind data (README, Message kinds), one key set by its type. */
export interface ChatMessageDetails {
  location?: { latitude: number, longitude: number, name?: string, address?: string, url?: string }
  contacts?: Array<Record<string, unknown>>
  reaction?: { messageId: string | null, wamid: string, emoji: string }
  /** `unreadable`: the response was not kept (over its bounds, or not a JSON object), `response` is then `{}`. */
  flowReply?: { name?: string, body?: string, response: Record<string, unknown>, unreadable?: 'too_large' | 'too_deep' | 'not_json' }
  /** An assistant's draft: the knowledge passages its answer was based on (README, Knowledge). */
  sources?: KnowledgeCitation[]
}

/** A passage of the knowledge an answer used: its document, heading and page. */
export interface KnowledgeCitation { sourceId: string, title: string, heading: string, page: number | null }

/** The emoji each side put on a message; absent: none (README, Message kinds: reactions). */
export interface ChatMessageReactions {
  customer?: string
  business?: string
}

/**
 * Who sent an outbound message (README, The team inbox: who sent a message). `id`: the user's, the
 * assistant turn's, the workflow's, the broadcast's, or the consent keyword's kind (`optOut`, `optIn`);
 * a workflow's sends carry their run too.
 */
export type MessageSender =
  | { type: Exclude<typeof MESSAGE_SENDER_TYPES[number], 'workflow'>, id: string }
  | { type: 'workflow', id: string, runId: string }

export const chatAccounts = pgTable('chat_accounts', {
  id: id(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  phoneNumberId: text('phone_number_id').notNull(),
  businessAccountId: text('business_account_id'),
  displayPhoneNumber: text('display_phone_number'),
  // AES-256-GCM with ENCRYPTION_KEY; never returned by the API.
  accessTokenEncrypted: text('access_token_encrypted').notNull(),
  isDefault: boolean('is_default').notNull().default(false),
  // A number with no platform (README, Sandbox numbers): sends are stored as delivered, customers are played.
  isSandbox: boolean('is_sandbox').notNull().default(false),
  ...timestamps()
}, (t) => [
  uniqueIndex('chat_accounts_user_phone_key').on(t.userId, t.phoneNumberId),
  index('chat_accounts_phone_idx').on(t.phoneNumberId)
])

/**
 * A conversation is keyed by the platform phone number id that receives it, so
 * users linking the same number share one inbox and the installation's default
 * account (from the environment) needs no row of its own.
 */
export const conversations = pgTable('conversations', {
  id: id(),
  phoneNumberId: text('phone_number_id').notNull(),
  // As its contact's (chat_contacts): "" when the platform withholds it, then platformUserId is set.
  phone: text('phone').notNull(),
  platformUserId: text('platform_user_id'),
  username: text('username'),
  name: text('name'),
  lastMessage: text('last_message'),
  lastMessageAt: nullableTimestamp('last_message_at'),
  unreadCount: integer('unread_count').notNull().default(0),
  isPinned: boolean('is_pinned').notNull().default(false),
  isArchived: boolean('is_archived').notNull().default(false),
  priority: text('priority', { enum: CONVERSATION_PRIORITIES }).notNull().default('normal'),
  labels: text('labels').array().notNull().default(sql`'{}'::text[]`),
  assignedAgentId: text('assigned_agent_id'),
  aiMode: text('ai_mode', { enum: AI_MODES }).notNull().default('HYBRID'),
  pendingApprovalCount: integer('pending_approval_count').notNull().default(0),
  // A staff reply or an assignment to a person pauses the assistant until aiMode is set again.
  assistantPaused: boolean('assistant_paused').notNull().default(false),
  lastIncomingAt: nullableTimestamp('last_incoming_at'),
  ...timestamps()
}, (t) => [
  uniqueIndex('conversations_account_phone_key').on(t.phoneNumberId, t.phone).where(sql`${t.phone} <> ''`),
  uniqueIndex('conversations_account_user_key').on(t.phoneNumberId, t.platformUserId).where(sql`${t.platformUserId} is not null`),
  index('conversations_account_last_message_idx').on(t.phoneNumberId, t.isArchived, t.lastMessageAt.desc()),
  index('conversations_account_unread_idx').on(t.phoneNumberId, t.unreadCount.desc().nullsFirst(), t.lastMessageAt.desc()),
  index('conversations_account_incoming_idx').on(t.phoneNumberId, t.lastIncomingAt.desc()),
  // A person's own queue (`assigned=me`) in the list's order, without reading the number's other conversations;
  // only assigned rows, so that the unassigned majority never writes it.
  index('conversations_account_assigned_idx').on(t.phoneNumberId, t.assignedAgentId, t.isArchived, t.lastMessageAt.desc().nullsLast(), t.id.desc().nullsFirst())
    .where(sql`${t.assignedAgentId} is not null`)
])

export const messages = pgTable('messages', {
  id: id(),
  conversationId: text('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
  wamid: text('wamid'),
  direction: text('direction', { enum: MESSAGE_DIRECTIONS }).notNull(),
  type: text('type').notNull().default('text'),
  content: text('content').notNull().default(''),
  templateContent: jsonb('template_content').$type<Record<string, unknown>>(),
  media: jsonb('media').$type<ChatMessageMedia>(),
  status: text('status', { enum: [...MESSAGE_STATUSES, ...DRAFT_STATUSES] }),
  // Failed only: the platform's first error (README, Chat: failures).
  error: jsonb('error_details').$type<ChatMessageError>(),
  agentId: text('agent_id'),
  agentName: text('agent_name'),
  // Outbound only, set by the service when it stores the message; null on inbound messages and on those stored before it existed.
  sender: jsonb('sender').$type<MessageSender>(),
  replyToId: text('reply_to_id'),
  // What a message of a kind beyond text and media carries, as the API returns it (README, Message kinds):
  // `location`, `contacts` (cards), `reaction` (the message reacted to and the emoji) or `flowReply`.
  details: jsonb('details').$type<ChatMessageDetails>(),
  // The reactions shown on this message: the customer's and the business's, one each as the platform keeps them.
  reactions: jsonb('reactions').$type<ChatMessageReactions>(),
  sentAt: nullableTimestamp('sent_at'),
  // Inbound only: when the events and KEYWORD runs the message starts were dispatched. Null until
  // then, so that a delivery retried after a worker died in between still starts them.
  dispatchedAt: nullableTimestamp('dispatched_at'),
  createdAt: createdAt()
}, (t) => [
  uniqueIndex('messages_wamid_key').on(t.wamid),
  // DESC NULLS FIRST is what `order by created_at desc, id desc` means; only a matching index serves it without a sort.
  index('messages_conversation_created_idx').on(t.conversationId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst())
])

/**
 * A platform webhook delivery waiting for the assistant-main worker: the
 * webhook answers once the row is stored, the job carries only its id, and the
 * worker deletes the row when it has been processed.
 */
export const chatDeliveries = pgTable('chat_deliveries', {
  id: id(),
  payload: jsonb('payload').$type<unknown>().notNull(),
  createdAt: createdAt()
})

/**
 * A private note of staff on a conversation (README, Notes): never sent to the customer. `authorId`
 * null: written by a workflow (`runId`, a handoff node). `mentions`: the users named `@email` in it.
 */
export const conversationNotes = pgTable('conversation_notes', {
  id: id(),
  conversationId: text('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
  authorId: text('author_id').references(() => users.id, { onDelete: 'set null' }),
  runId: text('run_id'),
  text: text('text').notNull(),
  mentions: text('mentions').array().notNull().default(sql`'{}'::text[]`),
  createdAt: createdAt()
}, (t) => [
  index('conversation_notes_conversation_idx').on(t.conversationId, t.createdAt, t.id),
  index('conversation_notes_mentions_idx').using('gin', t.mentions)
])

export type ConversationNote = typeof conversationNotes.$inferSelect
export type ChatAccount = typeof chatAccounts.$inferSelect
export type Conversation = typeof conversations.$inferSelect
export type Message = typeof messages.$inferSelect
