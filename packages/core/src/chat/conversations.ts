import { WINDOW_MS } from './window.ts'
import { createId } from '@paralleldrive/cuid2'
import { and, asc, desc, eq, getTableColumns, gt, inArray, isNull, sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { storableJson, storableText } from '../db/storable.ts'
import { DomainError } from '../errors.ts'
import { jsonb, textArray } from '../db/sql.ts'
import { CHAT_MESSAGE_FAILED, CHAT_MESSAGE_RECEIVED, CHAT_MESSAGE_STATUS, someoneListens } from '../events/outbox.ts'
import { notifyChange } from './changes.ts'
import { LABEL_BOUNDS, tooManyLabels } from './labels.ts'
import { notesRepository } from './notes.ts'
import { recordCustomer } from './customers.ts'
import { addressOf, customerIs, isPlatformUserId, sameCustomer } from './phone.ts'
import {
  conversations, messages,
  type AI_MODES, type ChatMessageDetails, type ChatMessageError, type ChatMessageMedia, type Conversation, type CONVERSATION_PRIORITIES, type Message, type MessageSender, type MESSAGE_STATUSES
} from '../db/schema/index.ts'

export const CONVERSATION_FILTERS = ['unread', 'active', 'archived'] as const
export const CONVERSATION_SORTS = ['newest', 'unread', 'oldest'] as const
type ConversationFilter = typeof CONVERSATION_FILTERS[number]
type ConversationSort = typeof CONVERSATION_SORTS[number]
export type MessageStatus = typeof MESSAGE_STATUSES[number]

/** The name the assistant's drafts and sends carry in the inbox: its turns' and the ai_reply node's. */
export const ASSISTANT_NAME = 'Assistant'

/** Messages embedded in each listed conversation (README, Chat: the latest 20, oldest first). */
const LATEST_MESSAGES = 20
type ConversationWithMessages = Conversation & { optedOut: boolean, messages: ListedMessage[] }

/** The message a message quotes, as the inbox shows it above the quote (README, Message kinds: quoted replies). */
export interface QuotedMessage {
  id: string
  content: string
  type: string
  direction: Message['direction']
}

/** A message as a list reads it: with the message it quotes, read by the same statement. */
export type ListedMessage = Message & { replyTo: QuotedMessage | null }

/**
 * The quoted message of `m`, in the statement that lists `m`: `reply_to_id` holds our id, or the
 * platform's wamid when the quoted message was not known when the reply was stored.
 */
const quotedOf = (alias: string): SQL => sql.raw(`(select json_build_object('id', q.id, 'content', q.content, 'type', q.type, 'direction', q.direction)
  from messages q where q.conversation_id = ${alias}.conversation_id and (q.id = ${alias}.reply_to_id or q.wamid = ${alias}.reply_to_id) limit 1)`)

/**
 * A message as the API returns it (README, Message kinds): its kind's details also as top-level fields (`details`
 * stays whole, a completed flow's answers in it: README, Flows), its reactions, and the message it quotes (null where
 * the read did not join it: drafts).
 */
export function messageView (message: Message & { replyTo?: QuotedMessage | null }) {
  const details = message.details
  return {
    ...message,
    location: details?.location ?? null,
    contacts: details?.contacts ?? null,
    reaction: details?.reaction ?? null,
    reactions: message.reactions ?? null,
    replyTo: message.replyTo ?? null
  }
}

/**
 * Whether the conversation's customer opted out (README, Contacts and consent): the inbox says so.
 * Qualified by hand: Drizzle writes a single-table select's columns unqualified, and inside this
 * subquery they would name chat_contacts' own.
 */
const optedOut = sql<boolean>`exists (select 1 from chat_contacts k
  where k.phone_number_id = conversations.phone_number_id and ${sameCustomer('k', 'conversations')} and k.opted_out)`

/** A list's filters beyond `filter`, and its order (README, The team inbox). */
interface ConversationsQuery {
  filter?: ConversationFilter
  sort?: ConversationSort
  /** The conversations assigned to this user; null: to nobody; absent: whoever. */
  assignedTo?: string | null
  /** Conversations carrying this label. */
  label?: string
  /** Conversations with a note mentioning this user (`mentions=me`). */
  mentioning?: string
  limit: number
  offset: number
}

interface ConversationChanges {
  isPinned?: boolean
  isArchived?: boolean
  priority?: ConversationPriority
  labels?: string[]
  assignedAgentId?: string | null
  aiMode?: typeof AI_MODES[number]
  assistantPaused?: boolean
}

type ConversationPriority = typeof CONVERSATION_PRIORITIES[number]

/** A handoff node's change of a conversation (README, Conversations: Handoff). */
interface HandoffChange {
  assignedAgentId: string
  /** Added to the conversation's own. */
  labels: readonly string[]
  priority?: ConversationPriority
  /** The workflow's note: its id from the node's idempotency key, so that it is stored once. */
  note?: { id: string, runId: string, text: string, mentions: readonly string[] }
}

/**
 * What a change does to the assistant (README, The assistant): assigning a person pauses it for the
 * conversation, as a staff reply does; setting aiMode (again) resumes it. The API's PATCH and the
 * handoff node both assign through it.
 */
export const withAssistantPause = <T extends ConversationChanges>(changes: T): T =>
  changes.aiMode !== undefined ? { ...changes, assistantPaused: false } : typeof changes.assignedAgentId === 'string' ? { ...changes, assistantPaused: true } : changes

interface OutboundMessageRecord {
  phoneNumberId: string
  /** The customer's phone, or their platform user id when the phone is withheld (chat/phone.ts). */
  address: string
  wamid: string | null
  /** `text`, `template`, `interactive` or a media kind (`image`…). */
  type: string
  content: string
  templateContent?: Record<string, unknown> | null
  media?: ChatMessageMedia
  agentId?: string | null
  agentName?: string | null
  /** A person's (`user`) pauses the conversation's assistant (README, The assistant). */
  sender: MessageSender
  replyToId?: string | null
  /** A location or contact cards (README, Message kinds). */
  details?: ChatMessageDetails
  /** `delivered`: a sandbox number's, delivered as it is stored (README, Sandbox numbers). */
  status?: 'sent' | 'delivered'
}

interface InboundMessageRecord {
  phoneNumberId: string
  /** "" when the platform withholds it: then `platformUserId` names the customer (README, Customers known by username). */
  phone: string
  platformUserId?: string
  parentPlatformUserId?: string
  username?: string
  /** The contact's profile name; absent on some deliveries, then the stored name stays. */
  name?: string
  wamid: string
  type: string
  content: string
  media?: ChatMessageMedia
  /** The platform's wamid of the quoted message (`context.id`): stored as our id when it is a message of the conversation. */
  replyToId?: string
  /** A reaction's target by wamid, resolved to our message of the conversation, and its emoji (README, Message kinds). */
  reaction?: { wamid: string, emoji: string }
  receivedAt: Date
  /** Who can use the number: those of them with a subscription to `chat.message.received` get the event. */
  userIds?: readonly string[]
  /** The tap an interactive answer carries, for the event's payload. */
  interactive?: unknown
  /** A completed flow (README, Flows), a shared location or contact cards (README, Message kinds). */
  details?: ChatMessageDetails
}

/**
 * What a message of a kind carries into `chat.message.received` and KEYWORD runs' triggerData (README, Message kinds):
 * `reaction` as `{messageId, emoji}` (our id of the message reacted to, null when it is not the conversation's), `location`,
 * `contacts`, a completed flow's `flowReply`.
 */
export function kindFields (details: ChatMessageDetails | null | undefined): Pick<ChatMessageDetails, 'location' | 'contacts' | 'flowReply'> & { reaction?: { messageId: string | null, emoji: string } } {
  if (details == null) return {}
  return {
    ...(details.reaction !== undefined && { reaction: { messageId: details.reaction.messageId, emoji: details.reaction.emoji } }),
    ...(details.location !== undefined && { location: details.location }),
    ...(details.contacts !== undefined && { contacts: details.contacts }),
    ...(details.flowReply !== undefined && { flowReply: details.flowReply })
  }
}

/** The platform's first error of a failed status, as the API returns it; a status without errors gets a generic one. */
function platformError (errors: unknown): ChatMessageError {
  const first = Array.isArray(errors) && typeof errors[0] === 'object' && errors[0] !== null ? errors[0] as Record<string, unknown> : {}
  const data = typeof first.error_data === 'object' && first.error_data !== null ? first.error_data as Record<string, unknown> : {}
  const text = (value: unknown, max: number): string | null => typeof value === 'string' && value !== '' ? storableText(value.slice(0, max)) : null
  return {
    code: typeof first.code === 'number' && Number.isSafeInteger(first.code) ? first.code : null,
    title: text(first.title, 200) ?? text(first.message, 200) ?? 'Failed',
    details: text(data.details, 1000)
  }
}

// Forward-only status order: a late `sent` never undoes `read`; `failed` yields only to proof of delivery.
const STATUS_RANK = sql`array['sent', 'failed', 'delivered', 'read']::text[]`

const filterCondition = (filter: ConversationFilter | undefined, now: Date): SQL | undefined => {
  switch (filter) {
    case 'archived': return eq(conversations.isArchived, true)
    case 'unread': return and(eq(conversations.isArchived, false), gt(conversations.unreadCount, 0))
    case 'active': return and(eq(conversations.isArchived, false), gt(conversations.lastIncomingAt, new Date(now.getTime() - WINDOW_MS)))
    default: return eq(conversations.isArchived, false)
  }
}

const sortOrder = (sort: ConversationSort | undefined): SQL[] => {
  switch (sort) {
    case 'unread': return [desc(conversations.unreadCount), sql`${conversations.lastMessageAt} desc nulls last`, desc(conversations.id)]
    case 'oldest': return [sql`${conversations.lastMessageAt} asc nulls first`, asc(conversations.id)]
    default: return [sql`${conversations.lastMessageAt} desc nulls last`, desc(conversations.id)]
  }
}

const optionalText = (text: string | null | undefined): string | null => text == null ? null : storableText(text)

/** Dates inside raw SQL fragments are bound as text, so they travel as ISO strings with an explicit type. */
const timestamptz = (date: Date): SQL => sql`${date.toISOString()}::timestamptz`

/** Raw rows of the lateral query come back with column names; map them like Drizzle would. */
const messageFromRow = (row: Record<string, unknown>): ListedMessage => ({
  id: row.id as string,
  conversationId: row.conversation_id as string,
  wamid: row.wamid as string | null,
  direction: row.direction as Message['direction'],
  type: row.type as string,
  content: row.content as string,
  templateContent: row.template_content as Message['templateContent'],
  media: row.media as Message['media'],
  status: row.status as Message['status'],
  error: row.error_details as Message['error'],
  agentId: row.agent_id as string | null,
  agentName: row.agent_name as string | null,
  sender: row.sender as Message['sender'],
  replyToId: row.reply_to_id as string | null,
  details: row.details as Message['details'],
  replyTo: row.reply_to as QuotedMessage | null,
  reactions: row.reactions as Message['reactions'],
  sentAt: row.sent_at === null ? null : new Date(row.sent_at as string),
  dispatchedAt: row.dispatched_at === null ? null : new Date(row.dispatched_at as string),
  createdAt: new Date(row.created_at as string)
})

/**
 * Conversations and their messages. Every read and change is scoped by the
 * platform number of the account the caller selected. Every change the inbox shows
 * is announced on CHAT_CHANGES_CHANNEL by the statement that makes it (chat/changes.ts).
 */
export function conversationsRepository (db: DbOrTx) {
  async function latestMessages (conversationIds: string[]): Promise<Map<string, ListedMessage[]>> {
    const byConversation = new Map<string, ListedMessage[]>(conversationIds.map((id) => [id, []]))
    if (conversationIds.length === 0) return byConversation
    // One query for every conversation of the page: the index on (conversation_id, created_at desc, id desc) serves each lateral.
    const rows = await db.execute<Record<string, unknown>>(sql`
      select m.* from unnest(array[${sql.join(conversationIds.map((id) => sql`${id}`), sql`, `)}]::text[]) as c(id)
      cross join lateral (
        select *, ${quotedOf('l')} as reply_to from messages l where l.conversation_id = c.id
        order by l.created_at desc, l.id desc limit ${LATEST_MESSAGES}
      ) m`)
    for (const row of rows) byConversation.get(row.conversation_id as string)?.push(messageFromRow(row))
    for (const list of byConversation.values()) list.reverse()
    return byConversation
  }

  async function get (id: string, phoneNumberId: string): Promise<Conversation | null> {
    const [row] = await db.select().from(conversations)
      .where(and(eq(conversations.id, id), eq(conversations.phoneNumberId, phoneNumberId))).limit(1)
    return row ?? null
  }

  return {
    async list (phoneNumberId: string, query: ConversationsQuery): Promise<ConversationWithMessages[]> {
      const rows = await db.select({ ...getTableColumns(conversations), optedOut }).from(conversations)
        .where(and(
          eq(conversations.phoneNumberId, phoneNumberId),
          filterCondition(query.filter, new Date()),
          query.assignedTo === undefined ? undefined : query.assignedTo === null ? isNull(conversations.assignedAgentId) : eq(conversations.assignedAgentId, query.assignedTo),
          query.label === undefined ? undefined : sql`${conversations.labels} @> array[${query.label}]::text[]`,
          // `@>` on mentions: what the notes' GIN index serves.
          query.mentioning === undefined ? undefined : sql`${conversations.id} in (select n.conversation_id from conversation_notes n where n.mentions @> array[${query.mentioning}]::text[])`
        ))
        .orderBy(...sortOrder(query.sort))
        .limit(query.limit)
        .offset(query.offset)
      const latest = await latestMessages(rows.map((row) => row.id))
      return rows.map((row) => ({ ...row, messages: latest.get(row.id) ?? [] }))
    },

    get,

    async update (id: string, phoneNumberId: string, changes: ConversationChanges & { unreadCount?: number }): Promise<Conversation | null> {
      const [row] = await db.update(conversations).set({ ...changes, updatedAt: new Date() })
        .where(and(eq(conversations.id, id), eq(conversations.phoneNumberId, phoneNumberId)))
        .returning({ ...getTableColumns(conversations), announced: notifyChange('conversation.updated', sql`${conversations.phoneNumberId}`, sql`${conversations.id}`) })
      if (row === undefined) return null
      const { announced, ...conversation } = row
      return conversation
    },

    /**
     * Adds `label` to the conversation's labels, at the end, in one statement: two people adding two labels at once
     * both keep theirs. One it carries changes nothing; one beyond LABEL_BOUNDS.perRecord is refused. Null when the
     * conversation is not the number's.
     */
    async addLabel (id: string, phoneNumberId: string, label: string): Promise<Conversation | null> {
      const [row] = await db.update(conversations).set({ labels: sql`array_append(${conversations.labels}, ${label}::text)`, updatedAt: new Date() })
        .where(and(
          eq(conversations.id, id), eq(conversations.phoneNumberId, phoneNumberId),
          sql`not ${conversations.labels} @> array[${label}]::text[]`, sql`cardinality(${conversations.labels}) < ${LABEL_BOUNDS.perRecord}`
        ))
        .returning({ ...getTableColumns(conversations), announced: notifyChange('conversation.updated', sql`${conversations.phoneNumberId}`, sql`${conversations.id}`) })
      if (row !== undefined) {
        const { announced, ...conversation } = row
        return conversation
      }
      const current = await get(id, phoneNumberId)
      if (current === null || current.labels.includes(label)) return current
      throw tooManyLabels('conversation')
    },

    /** Removes `label` from the conversation's labels in one statement; one it does not carry changes nothing. Null when the conversation is not the number's. */
    async removeLabel (id: string, phoneNumberId: string, label: string): Promise<Conversation | null> {
      const [row] = await db.update(conversations).set({ labels: sql`array_remove(${conversations.labels}, ${label}::text)`, updatedAt: new Date() })
        .where(and(eq(conversations.id, id), eq(conversations.phoneNumberId, phoneNumberId), sql`${conversations.labels} @> array[${label}]::text[]`))
        .returning({ ...getTableColumns(conversations), announced: notifyChange('conversation.updated', sql`${conversations.phoneNumberId}`, sql`${conversations.id}`) })
      if (row === undefined) return get(id, phoneNumberId)
      const { announced, ...conversation } = row
      return conversation
    },

    /**
     * A handoff, in one transaction: the conversation assigned (pausing the assistant, withAssistantPause),
     * `labels` added to its own, `priority` set, and the workflow's note stored once. Run again, it
     * changes nothing more. Null when the conversation is not the number's.
     */
    async handoff (id: string, phoneNumberId: string, change: HandoffChange): Promise<{ conversation: Conversation, noteId: string | null } | null> {
      return db.transaction(async (tx) => {
        const [current] = await tx.select({ labels: conversations.labels }).from(conversations)
          .where(and(eq(conversations.id, id), eq(conversations.phoneNumberId, phoneNumberId))).for('update')
        if (current === undefined) return null
        const labels = [...new Set([...current.labels, ...change.labels])]
        if (labels.length > LABEL_BOUNDS.perRecord) throw new DomainError('VALIDATION_ERROR', `labels: the conversation would carry ${labels.length} labels, at most ${LABEL_BOUNDS.perRecord}`)
        const conversation = await conversationsRepository(tx).update(id, phoneNumberId, withAssistantPause({
          assignedAgentId: change.assignedAgentId,
          labels,
          ...(change.priority !== undefined && { priority: change.priority })
        }))
        const noteId = change.note === undefined ? null : await notesRepository(tx).insert({ ...change.note, conversationId: id, authorId: null })
        return { conversation: conversation!, noteId }
      })
    },

    /** A page of history strictly older than `before` (a message id), oldest first. */
    async messagesBefore (conversationId: string, limit: number, before?: Message): Promise<ListedMessage[]> {
      const rows = await db.select({ ...getTableColumns(messages), replyTo: sql<QuotedMessage | null>`${quotedOf('messages')}` }).from(messages)
        .where(and(
          eq(messages.conversationId, conversationId),
          before === undefined ? undefined : sql`(${messages.createdAt}, ${messages.id}) < (${timestamptz(before.createdAt)}, ${before.id})`
        ))
        .orderBy(desc(messages.createdAt), desc(messages.id))
        .limit(limit)
      return rows.reverse()
    },

    /** A message of any conversation of the platform number: another number's message is not found. */
    async messageOfNumber (phoneNumberId: string, id: string): Promise<Message | null> {
      const [row] = await db.select({ message: messages }).from(messages)
        .innerJoin(conversations, eq(conversations.id, messages.conversationId))
        .where(and(eq(messages.id, id), eq(conversations.phoneNumberId, phoneNumberId))).limit(1)
      return row?.message ?? null
    },

    /** A message of the number to react to: its wamid and its customer's address (chat/phone.ts `addressOf`), and when the customer last wrote. */
    async reactionTarget (phoneNumberId: string, id: string): Promise<{ id: string, wamid: string | null, address: string, lastIncomingAt: Date | null } | null> {
      const [row] = await db.select({
        id: messages.id, wamid: messages.wamid, phone: conversations.phone, platformUserId: conversations.platformUserId, lastIncomingAt: conversations.lastIncomingAt
      }).from(messages)
        .innerJoin(conversations, eq(conversations.id, messages.conversationId))
        .where(and(eq(messages.id, id), eq(conversations.phoneNumberId, phoneNumberId))).limit(1)
      return row === undefined ? null : { id: row.id, wamid: row.wamid, address: addressOf(row), lastIncomingAt: row.lastIncomingAt }
    },

    /** The business's one reaction on a message: `emoji` replaces it, "" removes it; announced like any change of the message. */
    async setBusinessReaction (id: string, phoneNumberId: string, emoji: string): Promise<void> {
      await db.update(messages).set({
        reactions: emoji === ''
          ? sql`nullif(coalesce(${messages.reactions}, '{}'::jsonb) - 'business', '{}'::jsonb)`
          : sql`coalesce(${messages.reactions}, '{}'::jsonb) || ${jsonb({ business: emoji })}`
      }).where(eq(messages.id, id))
        .returning({ announced: notifyChange('message.updated', sql`${phoneNumberId}`, sql`${messages.conversationId}`, sql`${messages.id}`) })
    },

    /**
     * The wamid of the customer's latest message in a conversation of the number; `found` false when the conversation is not
     * the number's. Messages of one second (the platform stamps whole seconds) in the order they were dispatched, as `history`.
     */
    async latestInboundWamid (id: string, phoneNumberId: string): Promise<{ found: boolean, wamid: string | null }> {
      const [row] = await db.execute<{ wamid: string | null }>(sql`
        select (select m.wamid from messages m where m.conversation_id = c.id and m.direction = 'inbound'
          order by m.created_at desc, m.dispatched_at desc nulls first, m.id desc limit 1) as wamid
        from conversations c where c.id = ${id} and c.phone_number_id = ${phoneNumberId}`)
      return row === undefined ? { found: false, wamid: null } : { found: true, wamid: row.wamid }
    },

    async findMessage (conversationId: string, id: string): Promise<Message | null> {
      const [row] = await db.select().from(messages)
        .where(and(eq(messages.id, id), eq(messages.conversationId, conversationId))).limit(1)
      return row ?? null
    },

    /**
     * What a send needs before calling the platform: the customer's latest inbound time, and the wamid of a quoted message.
     * `address`: the customer's phone, or their platform user id (chat/phone.ts).
     */
    async sendContext (phoneNumberId: string, address: string, replyToId?: string): Promise<{ lastIncomingAt: Date | null, replyToWamid: string | null }> {
      const [row] = await db.execute<{ lastIncomingAt: string | null, replyToWamid: string | null }>(sql`
        select c.last_incoming_at as "lastIncomingAt",
          ${replyToId === undefined ? sql`null` : sql`(select m.wamid from messages m where m.id = ${replyToId} and m.conversation_id = c.id)`} as "replyToWamid"
        from conversations c where c.phone_number_id = ${phoneNumberId} and ${customerIs('c', address)} limit 1`)
      return row === undefined
        ? { lastIncomingAt: null, replyToWamid: null }
        : { lastIncomingAt: row.lastIncomingAt === null ? null : new Date(row.lastIncomingAt), replyToWamid: row.replyToWamid }
    },

    /** The conversation of the customer at `address` on a platform number, with the id and time of the customer's latest message; null when there is none. */
    async findByAddress (phoneNumberId: string, address: string): Promise<{ id: string, lastInboundId: string | null, lastIncomingAt: Date | null } | null> {
      const [row] = await db.execute<{ id: string, lastInboundId: string | null, lastIncomingAt: string | null }>(sql`
        select c.id, c.last_incoming_at as "lastIncomingAt", (select m.id from messages m where m.conversation_id = c.id and m.direction = 'inbound'
          order by m.created_at desc, m.id desc limit 1) as "lastInboundId"
        from conversations c where c.phone_number_id = ${phoneNumberId} and ${customerIs('c', address)}`)
      return row === undefined ? null : { ...row, lastIncomingAt: row.lastIncomingAt === null ? null : new Date(row.lastIncomingAt) }
    },

    /**
     * The latest `limit` messages the customer wrote or was sent (drafts are not part of it), up to
     * the second of the message `upTo` when given, oldest first, the newest kept within `maxChars` in
     * all (the newest alone is cut to it). The platform stamps whole seconds: messages of one second
     * are in the order they were dispatched (a burst of them is answered at once, README, The assistant).
     */
    async history (conversationId: string, bounds: { limit: number, maxChars: number, upTo?: string }): Promise<Array<{ direction: 'inbound' | 'outbound', content: string }>> {
      if (bounds.limit <= 0) return []
      const rows = await db.execute<{ direction: 'inbound' | 'outbound', content: string }>(sql`
        select h.direction, h.content from messages h
        where h.conversation_id = ${conversationId} and (h.direction = 'inbound' or h.status in ('sent', 'delivered', 'read'))
          ${bounds.upTo === undefined ? sql`` : sql`and h.created_at <= (select m.created_at from messages m where m.id = ${bounds.upTo})`}
        order by h.created_at desc, h.dispatched_at desc nulls first, h.id desc limit ${bounds.limit}`)
      const kept: Array<{ direction: 'inbound' | 'outbound', content: string }> = []
      let chars = 0
      for (const row of rows) {
        const content = row.content.slice(0, bounds.maxChars)
        if (kept.length > 0 && chars + content.length > bounds.maxChars) break
        chars += content.length
        kept.push({ direction: row.direction, content })
      }
      return kept.reverse()
    },

    /**
     * A reply the assistant wrote, waiting for staff (README, The assistant): a `pending_approval`
     * message and its conversation's `pending_approval_count`, in one statement. A draft of `id`
     * already stored (the same node run again) stays as it is and is counted once; `created` says
     * whether this call stored it.
     */
    async recordDraft (draft: { id?: string, conversationId: string, content: string, replyToId: string | null, sender: MessageSender, details?: ChatMessageDetails }): Promise<{ id: string, created: boolean }> {
      const id = draft.id ?? createId()
      const [row] = await db.execute<{ created: number }>(sql`
        with draft as (
          insert into messages (id, conversation_id, direction, type, content, status, agent_name, sender, reply_to_id, details, created_at)
          values (${id}, ${draft.conversationId}, 'outbound', 'text', ${storableText(draft.content)}, 'pending_approval', ${ASSISTANT_NAME}, ${jsonb(draft.sender)}, ${draft.replyToId}, ${draft.details === undefined ? null : jsonb(draft.details)}, now())
          on conflict (id) do nothing
          returning id
        ), counted as (
          update conversations set pending_approval_count = pending_approval_count + 1, updated_at = now()
          where id = ${draft.conversationId} and exists (select 1 from draft)
          returning ${notifyChange('message.created', sql`phone_number_id`, sql`id`, sql`${id}`)}
        )
        select count(*)::int as created from counted`)
      return { id, created: row!.created > 0 }
    },

    /**
     * Stores a sent message on its conversation, creating the conversation when new, in one statement.
     * The platform took the text as it was; what Postgres cannot hold (NUL, unpaired surrogates) is stored as U+FFFD.
     */
    async recordOutbound (sent: OutboundMessageRecord): Promise<{ conversationId: string, messageId: string }> {
      const record = { ...sent, content: storableText(sent.content), agentId: optionalText(sent.agentId), agentName: optionalText(sent.agentName), replyToId: optionalText(sent.replyToId) }
      const now = timestamptz(new Date())
      // By the index of the address's kind: a customer known by phone, or by platform user id when it is withheld.
      const byUser = isPlatformUserId(record.address)
      const [row] = await db.execute<{ conversation_id: string, id: string }>(sql`
        with conversation as (
          insert into conversations (id, phone_number_id, phone, platform_user_id, last_message, last_message_at, assistant_paused)
          values (${createId()}, ${record.phoneNumberId}, ${byUser ? '' : record.address}, ${byUser ? record.address : null}, ${record.content}, ${now}, ${record.sender.type === 'user'})
          on conflict ${byUser ? sql`(phone_number_id, platform_user_id) where platform_user_id is not null` : sql`(phone_number_id, phone) where phone <> ''`} do update
            set last_message = excluded.last_message, last_message_at = excluded.last_message_at, updated_at = excluded.last_message_at,
              assistant_paused = conversations.assistant_paused or excluded.assistant_paused
          returning id
        )
        insert into messages (id, conversation_id, wamid, direction, type, content, template_content, media, details, status, agent_id, agent_name, sender, reply_to_id, sent_at, created_at)
        select ${createId()}, conversation.id, ${record.wamid}, 'outbound', ${record.type}, ${record.content},
          ${record.templateContent == null ? null : storableJson(record.templateContent)}::jsonb,
          ${record.media === undefined ? null : storableJson(record.media)}::jsonb,
          ${record.details === undefined ? null : storableJson(record.details)}::jsonb, ${record.status ?? 'sent'},
          ${record.agentId ?? null}, ${record.agentName ?? null}, ${jsonb(record.sender)}, ${record.replyToId ?? null}, ${now}, ${now}
        from conversation
        returning id, conversation_id, ${notifyChange('message.created', sql`${record.phoneNumberId}`, sql`conversation_id`, sql`id`)}`)
      return { conversationId: row.conversation_id, messageId: row.id }
    },

    /**
     * Stores a customer's message once (by wamid) and updates its conversation.
     * Returns the message while what it starts is still to be dispatched: when new
     * (`isNew`), or stored by an earlier attempt that stopped before dispatching.
     * Null for a duplicate whose dispatch is done, which changes nothing.
     */
    async recordInbound (record: InboundMessageRecord): Promise<{ conversationId: string, contactId: string, messageId: string, isNew: boolean, eventIds: string[], details: ChatMessageDetails | null } | null> {
      return db.transaction(async (tx) => {
        const customer = await recordCustomer(tx, {
          phoneNumberId: record.phoneNumberId,
          phone: record.phone,
          platformUserId: record.platformUserId ?? null,
          parentPlatformUserId: record.parentPlatformUserId ?? null,
          username: record.username ?? null,
          name: record.name ?? null
        })
        const conversation = { id: customer.conversationId }
        // The quoted and the reacted-to messages by wamid: only the conversation's own, so that a wamid of
        // another number's (or another customer's) message never touches it.
        const wamids = [record.replyToId, record.reaction?.wamid].filter((wamid) => wamid !== undefined)
        const known = new Map(wamids.length === 0
          ? []
          : (await tx.select({ id: messages.id, wamid: messages.wamid }).from(messages)
              .where(and(eq(messages.conversationId, conversation.id), inArray(messages.wamid, wamids)))).map((row) => [row.wamid, row.id]))
        const reactedTo = record.reaction === undefined ? undefined : known.get(record.reaction.wamid)
        const details: ChatMessageDetails | null = record.reaction !== undefined
          ? { reaction: { messageId: reactedTo ?? null, ...record.reaction } }
          : record.details ?? null
        const [message] = await tx.insert(messages).values({
          conversationId: conversation.id,
          wamid: record.wamid,
          direction: 'inbound',
          type: record.type,
          content: record.content,
          media: record.media ?? null,
          details,
          replyToId: record.replyToId === undefined ? null : known.get(record.replyToId) ?? record.replyToId,
          sentAt: record.receivedAt,
          createdAt: record.receivedAt
        }).onConflictDoNothing({ target: messages.wamid }).returning({ id: messages.id })
        if (message === undefined) {
          const [undispatched] = await tx.select({ id: messages.id, conversationId: messages.conversationId, details: messages.details }).from(messages)
            .where(and(eq(messages.wamid, record.wamid), eq(messages.direction, 'inbound'), isNull(messages.dispatchedAt))).limit(1)
          // Its events were written with it: the reconciler dispatches them if that attempt did not.
          return undispatched === undefined ? null : { conversationId: undispatched.conversationId, contactId: customer.contactId, messageId: undispatched.id, isNew: false, eventIds: [], details: undispatched.details }
        }
        if (reactedTo !== undefined && record.reaction !== undefined) {
          // The customer's one reaction on the message, as the platform keeps it: a new one replaces it, "" removes it.
          await tx.update(messages).set({
            reactions: record.reaction.emoji === ''
              ? sql`nullif(coalesce(${messages.reactions}, '{}'::jsonb) - 'customer', '{}'::jsonb)`
              : sql`coalesce(${messages.reactions}, '{}'::jsonb) || ${jsonb({ customer: record.reaction.emoji })}`
          }).where(eq(messages.id, reactedTo))
            .returning({ announced: notifyChange('message.updated', sql`${record.phoneNumberId}`, sql`${messages.conversationId}`, sql`${messages.id}`) })
        }
        // Deliveries arrive out of order: the preview shows the newest message, whatever arrived last.
        const receivedAt = timestamptz(record.receivedAt)
        // A draft answers the messages before it: a later one (or one of the same second: stamps are whole seconds) makes it stale (README, The assistant).
        const [stale] = await tx.execute<{ count: number }>(sql`
          with stale as (
            update messages d set status = 'stale'
            from assistant_turns t join messages answered on answered.id = t.message_id
            where d.conversation_id = ${conversation.id} and d.status = 'pending_approval'
              and t.draft_message_id = d.id and answered.created_at <= ${receivedAt}
            returning d.id
          ), decided as (
            update assistant_turns set draft_decision = 'stale' where draft_message_id in (select id from stale)
          )
          select count(*)::int as count from stale`)
        await tx.update(conversations).set({
          unreadCount: sql`${conversations.unreadCount} + 1`,
          lastIncomingAt: sql`greatest(${conversations.lastIncomingAt}, ${receivedAt})`,
          lastMessage: sql`case when ${conversations.lastMessageAt} is null or ${conversations.lastMessageAt} <= ${receivedAt} then ${record.content} else ${conversations.lastMessage} end`,
          lastMessageAt: sql`greatest(${conversations.lastMessageAt}, ${receivedAt})`,
          pendingApprovalCount: sql`${conversations.pendingApprovalCount} - ${stale.count}`,
          updatedAt: new Date()
        }).where(eq(conversations.id, conversation.id))
          .returning({ announced: notifyChange('message.created', sql`${conversations.phoneNumberId}`, sql`${conversations.id}`, sql`${message.id}`) })
        // The outbox (events/outbox.ts), for subscriptions only: EVENT workflows of this event are
        // started with the message's KEYWORD runs (triggers/keyword.ts), under its idempotency keys.
        const emitted = record.userIds === undefined || record.userIds.length === 0
          ? []
          : await tx.execute<{ id: string }>(sql`
            insert into events (id, name, user_id, payload)
            select 'received:' || ${message.id}::text || ':' || u.id, ${CHAT_MESSAGE_RECEIVED}, u.id,
              ${jsonb({
                // The triggerData of chat.message.received EVENT workflows (triggers/keyword.ts): one payload per event name.
                phone: record.phone,
                ...(record.platformUserId !== undefined && { platformUserId: record.platformUserId }),
                ...(record.username !== undefined && { username: record.username }),
                contactId: customer.contactId,
                name: record.name ?? null,
                text: record.content,
                type: record.type,
                messageId: message.id,
                wamid: record.wamid,
                conversationId: conversation.id,
                ...(record.interactive !== undefined && { interactive: record.interactive }),
                ...(record.media !== undefined && { media: record.media }),
                ...kindFields(details),
                phoneNumberId: record.phoneNumberId
              })}
            from unnest(${textArray(record.userIds)}) as u(id)
            where ${someoneListens(CHAT_MESSAGE_RECEIVED, sql`u.id`, 'none')}
            returning id`)
        return { conversationId: conversation.id, contactId: customer.contactId, messageId: message.id, isNew: true, eventIds: emitted.map(({ id }) => id), details }
      })
    },

    /** Records that an inbound message's events and KEYWORD runs were started. */
    async markDispatched (messageId: string): Promise<void> {
      await db.update(messages).set({ dispatchedAt: new Date() }).where(eq(messages.id, messageId))
    },

    /**
     * Applies a platform status to a stored message when it moves the status forward; returns whether it did.
     * Only a message of the number that received the status: a delivery for one number never touches
     * another number's messages, whatever wamid it names. A message that becomes `failed` keeps the
     * platform's first error (a later proof of delivery clears it) and emits `chat.message.failed` to `userIds` (those who can use the
     * number) in the same statement (the outbox); any other status emits `chat.message.status` to those of them someone listens for
     * (events/outbox.ts, someoneListens). The events' ids are returned for dispatch.
     */
    async applyStatus (phoneNumberId: string, wamid: string, status: MessageStatus, errors: unknown, userIds: readonly string[]): Promise<{ applied: boolean, eventIds: string[] }> {
      const error = status === 'failed' ? platformError(errors) : null
      const [row] = await db.execute<{ applied: boolean, eventIds: string[] | null }>(sql`
        with applied as (
          update messages m set status = ${status}, error_details = ${error === null ? null : jsonb(error)}
          from conversations c
          where m.wamid = ${wamid} and c.id = m.conversation_id and c.phone_number_id = ${phoneNumberId}
            and (m.status is null or array_position(${STATUS_RANK}, m.status) < array_position(${STATUS_RANK}, ${status}::text))
          returning m.id, m.conversation_id, m.wamid, m.status, m.error_details, c.phone,
            ${notifyChange('message.updated', sql`c.phone_number_id`, sql`m.conversation_id`, sql`m.id`)}
        ), emitted as (
          insert into events (id, name, user_id, payload)
          select 'failed:' || a.id || ':' || u.id, ${CHAT_MESSAGE_FAILED}, u.id,
            jsonb_build_object('messageId', a.id, 'conversationId', a.conversation_id, 'wamid', a.wamid, 'phone', a.phone,
              'phoneNumberId', ${phoneNumberId}::text, 'error', a.error_details)
          from applied a, unnest(${textArray(userIds)}) as u(id)
          where a.status = 'failed'
          union all
          select 'status:' || a.id || ':' || a.status || ':' || u.id, ${CHAT_MESSAGE_STATUS}, u.id,
            jsonb_build_object('messageId', a.id, 'conversationId', a.conversation_id, 'wamid', a.wamid, 'phone', a.phone,
              'phoneNumberId', ${phoneNumberId}::text, 'status', a.status)
          from applied a, unnest(${textArray(userIds)}) as u(id)
          where a.status <> 'failed' and ${someoneListens(CHAT_MESSAGE_STATUS, sql`u.id`, 'any')}
          returning id
        )
        select exists (select 1 from applied) as applied, (select array_agg(id) from emitted) as "eventIds"`)
      return { applied: row?.applied === true, eventIds: row?.eventIds ?? [] }
    }
  }
}

export type ConversationsRepository = ReturnType<typeof conversationsRepository>
