import { and, asc, eq, sql } from 'drizzle-orm'
import type { UsableChatAccount } from '../chat/accounts.ts'
import { notifyChange } from '../chat/changes.ts'
import { addressOf } from '../chat/phone.ts'
import type { ChatService } from '../chat/sending.ts'
import { assertInsideWindow } from '../chat/window.ts'
import type { DbOrTx } from '../db/client.ts'
import { storableText } from '../db/storable.ts'
import { conversations, messages, type Message } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import { assistantDrafts } from '../observability/metrics.ts'

const draftNotFound = (): DomainError => new DomainError('DRAFT_NOT_FOUND', 'Draft not found')
const draftDecided = (status: string | null): DomainError =>
  new DomainError('DRAFT_NOT_PENDING', `Draft is no longer pending approval (it is ${status ?? 'unknown'})`)

export interface DraftDecider {
  userId: string
  /** Shown in the inbox as who sent it. */
  name: string
}

/**
 * Staff decisions on the assistant's drafts (README, The assistant). Each decision is one guarded
 * change of a `pending_approval` message, so of two decisions at once one wins and the other is
 * told the draft is no longer pending; `pending_approval_count` moves, and the inbox hears of it, in the same statement.
 */
export function draftsService ({ db, chat }: { db: DbOrTx, chat: ChatService }) {
  /** Takes a pending draft out of `pending_approval` into `status`, with the turn's decision; null when it was not pending. */
  async function decide (conversationId: string, messageId: string, change: { status: 'sent' | 'rejected', decision: 'approved' | 'edited' | 'rejected', content?: string, by: DraftDecider }): Promise<Message | null> {
    const [row] = await db.execute<{ id: string }>(sql`
      with decided as (
        update messages set status = ${change.status}, content = coalesce(${change.content ?? null}::text, content),
          agent_id = ${change.by.userId}, agent_name = ${change.by.name},
          sent_at = case when ${change.status} = 'sent' then now() end
        where id = ${messageId} and conversation_id = ${conversationId} and status = 'pending_approval'
        returning id, content
      ), counted as (
        update conversations set pending_approval_count = pending_approval_count - 1, updated_at = now(),
          last_message = case when ${change.status} = 'sent' then (select content from decided) else last_message end,
          last_message_at = case when ${change.status} = 'sent' then now() else last_message_at end
        where id = ${conversationId} and exists (select 1 from decided)
        returning ${notifyChange('message.updated', sql`phone_number_id`, sql`id`, sql`${messageId}`)}
      ), turn as (
        update assistant_turns set draft_decision = ${change.decision} where draft_message_id in (select id from decided)
      )
      select id from decided`)
    if (row === undefined) return null
    assistantDrafts.inc({ decision: change.decision })
    return find(conversationId, messageId)
  }

  async function find (conversationId: string, messageId: string): Promise<Message | null> {
    const [row] = await db.select().from(messages).where(and(eq(messages.id, messageId), eq(messages.conversationId, conversationId))).limit(1)
    return row ?? null
  }

  async function refusal (conversationId: string, messageId: string): Promise<DomainError> {
    const message = await find(conversationId, messageId)
    return message === null || message.agentName === null || message.direction !== 'outbound' ? draftNotFound() : draftDecided(message.status)
  }

  return {
    /** The conversation's drafts waiting for staff, oldest first. */
    async pending (conversationId: string): Promise<Message[]> {
      return db.select().from(messages)
        .where(and(eq(messages.conversationId, conversationId), eq(messages.status, 'pending_approval')))
        .orderBy(asc(messages.createdAt), asc(messages.id))
    },

    /**
     * Sends the draft as written or as edited (`text`). The send happens once: the approval that
     * takes the draft out of pending sends it; if the platform refuses, the draft is pending again.
     */
    async approve (account: UsableChatAccount, conversationId: string, messageId: string, by: DraftDecider, text?: string): Promise<Message> {
      const [conversation] = await db.select({ phone: conversations.phone, platformUserId: conversations.platformUserId, lastIncomingAt: conversations.lastIncomingAt }).from(conversations)
        .where(and(eq(conversations.id, conversationId), eq(conversations.phoneNumberId, account.phoneNumberId))).limit(1)
      if (conversation === undefined) throw new DomainError('CONVERSATION_NOT_FOUND', 'Conversation not found')
      const original = await find(conversationId, messageId)
      if (original === null || original.status !== 'pending_approval') throw await refusal(conversationId, messageId)
      assertInsideWindow(conversation.lastIncomingAt)
      const content = text === undefined ? undefined : storableText(text)
      const edited = content !== undefined && content !== original.content
      const sent = await decide(conversationId, messageId, { status: 'sent', decision: edited ? 'edited' : 'approved', content, by })
      if (sent === null) throw await refusal(conversationId, messageId)
      let delivered: Awaited<ReturnType<typeof chat.deliverText>>
      try {
        delivered = await chat.deliverText(account, addressOf(conversation), sent.content)
      } catch (err) {
        await db.execute(sql`
          with restored as (
            update messages set status = 'pending_approval', content = ${original.content}, agent_id = null, agent_name = ${original.agentName}, sent_at = null
            where id = ${messageId} and status = 'sent' and wamid is null
            returning id
          ), turn as (
            update assistant_turns set draft_decision = null where draft_message_id in (select id from restored)
          )
          update conversations set pending_approval_count = pending_approval_count + 1 where id = ${conversationId} and exists (select 1 from restored)`)
        throw err
      }
      const [stored] = await db.update(messages).set(delivered).where(eq(messages.id, messageId)).returning()
      return stored ?? sent
    },

    async reject (account: UsableChatAccount, conversationId: string, messageId: string, by: DraftDecider): Promise<Message> {
      const [conversation] = await db.select({ id: conversations.id }).from(conversations)
        .where(and(eq(conversations.id, conversationId), eq(conversations.phoneNumberId, account.phoneNumberId))).limit(1)
      if (conversation === undefined) throw new DomainError('CONVERSATION_NOT_FOUND', 'Conversation not found')
      const rejected = await decide(conversationId, messageId, { status: 'rejected', decision: 'rejected', by })
      if (rejected === null) throw await refusal(conversationId, messageId)
      return rejected
    }
  }
}

export type DraftsService = ReturnType<typeof draftsService>
