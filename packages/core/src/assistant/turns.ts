import { createId } from '@paralleldrive/cuid2'
import { and, desc, eq, sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { storableJson } from '../db/storable.ts'
import { assistantTurns, type AssistantLogEntry, type AssistantToolCall, type AssistantTurn, type AssistantTurnOutcome } from '../db/schema/index.ts'
import { sameCustomer } from '../chat/phone.ts'
import { DEFAULT_DEBOUNCE_MS } from './settings.ts'

/** Lines one turn's log keeps; later lines replace the last (a turn is bounded, its log too). */
const MAX_LOG_LINES = 50

export const logEntry = (event: string, detail?: Record<string, unknown>): AssistantLogEntry =>
  ({ at: new Date().toISOString(), event, ...(detail !== undefined && { detail }) })

/** A claimed turn: `attempt` fences every later write, so a turn taken over by another worker is written by that one only. */
export type ClaimedTurn = AssistantTurn & { attempt: number }

export type TurnClaim =
  | { turn: ClaimedTurn }
  /**
   * The conversation's oldest unfinished turn is held by a live claim (another worker, or one that died), or
   * (`debounced`) is not started yet and its burst of messages may still grow: look again then.
   */
  | { retryAt: Date, debounced: boolean }
  | null

export interface TurnProgress {
  state?: unknown
  toolCalls?: AssistantToolCall[]
  log?: AssistantLogEntry[]
  model?: string
  tokensIn?: number
  tokensOut?: number
}

/** The conversation of a turn as the turn finds it (`context`). */
export interface TurnContext {
  phoneNumberId: string
  /** "" when the platform withholds it: then `platformUserId` names the customer (README, Customers known by username). */
  phone: string
  platformUserId: string | null
  name: string | null
  aiMode: 'OFF' | 'HYBRID' | 'AUTO'
  paused: boolean
  /** The customer opted out (README, Contacts and consent): the assistant does not answer them. */
  optedOut: boolean
  lastIncomingAt: Date | null
  /** A customer message newer than the one this turn answers: the turn is superseded. */
  newer: boolean
}

/**
 * Every statement on `assistant_turns` but the draft decisions (drafts.ts): a turn is created
 * once per inbound message, claimed in message order per conversation, and written by its claim.
 */
export function assistantTurnsRepository (db: DbOrTx) {
  const fenced = (turn: ClaimedTurn) => and(eq(assistantTurns.id, turn.id), eq(assistantTurns.attempts, turn.attempt))

  return {
    /**
     * The turn of an inbound message, when the assistant answers it: the conversation's aiMode is
     * not OFF and it is not paused, a model is configured, and no KEYWORD workflow matched unless
     * the number's assistant answers always. Returns null when the conversation has no turn to work, else
     * the number's debounceMs: how long its turn waits for the customer to go quiet (`claim`).
     */
    async create (message: { conversationId: string, messageId: string, keywordMatched: boolean }, defaultModel: string | undefined): Promise<{ debounceMs: number } | null> {
      const [row] = await db.execute<{ created: boolean, debounceMs: number }>(sql`
        with candidate as (
          select c.id from conversations c left join chat_assistants s on s.phone_number_id = c.phone_number_id
          where c.id = ${message.conversationId} and c.ai_mode <> 'OFF' and not c.assistant_paused
            and (${defaultModel ?? null}::text is not null or s.model is not null)
            and (not ${message.keywordMatched} or coalesce(s.answer_always, false))
        ), created as (
          insert into assistant_turns (id, conversation_id, message_id)
          select ${createId()}, candidate.id, ${message.messageId} from candidate
          on conflict (message_id) do nothing
          returning id
        )
        select exists (select 1 from created)
          or exists (select 1 from assistant_turns where message_id = ${message.messageId} and status in ('queued', 'running', 'waiting')) as created,
          coalesce((select s.debounce_ms from conversations c join chat_assistants s on s.phone_number_id = c.phone_number_id
            where c.id = ${message.conversationId}), ${DEFAULT_DEBOUNCE_MS})::int as "debounceMs"`)
      return row?.created === true ? { debounceMs: row.debounceMs } : null
    },

    /**
     * The conversation's oldest unfinished turn, claimed for `leaseMs` when no live claim holds
     * it. Turns are worked strictly in message order: a later one waits for the earlier to end.
     * A turn not started yet waits for its burst of messages to end (README, The assistant: bursts):
     * the burst is the latest turns each created within `debounceMs` of the one before, and it has
     * ended once its newest is `debounceMs` old, or its first `3 × debounceMs` old. The burst's earlier
     * turns are then superseded at once, and its newest asks the model for all of them. Only the turns
     * of the last `4 × debounceMs` are read: a burst that began before them is past its 3 × bound.
     */
    async claim (conversationId: string, leaseMs: number): Promise<TurnClaim> {
      const rows = await db.execute<AssistantTurn & { attempt: number, retry_at: string | null, debounced: boolean | null }>(sql`
        with oldest as (
          select id, status, lease_until from assistant_turns
          where conversation_id = ${conversationId} and status in ('queued', 'running', 'waiting')
          order by created_at, id limit 1
        ), debounce as (
          select make_interval(secs => coalesce((select s.debounce_ms from conversations c join chat_assistants s on s.phone_number_id = c.phone_number_id
            where c.id = ${conversationId}), ${DEFAULT_DEBOUNCE_MS}) / 1000.0) as d
        ), recent as (
          select t.created_at, lag(t.created_at) over (order by t.created_at, t.id) as previous
          from assistant_turns t, debounce
          where t.conversation_id = ${conversationId}
            and t.created_at >= (select max(created_at) from assistant_turns where conversation_id = ${conversationId}) - 4 * debounce.d
        ), burst as (
          select max(created_at) filter (where previous is null or created_at - previous >= debounce.d) as first_at, max(created_at) as last_at
          from recent, debounce group by debounce.d
        ), due as (
          select least(burst.last_at + debounce.d, burst.first_at + 3 * debounce.d) as at from burst, debounce
        ), claimed as (
          update assistant_turns t set status = 'running', attempts = t.attempts + 1,
            lease_until = now() + make_interval(secs => ${leaseMs / 1000})
          from oldest, due
          where t.id = oldest.id and (t.status <> 'running' or t.lease_until < now())
            and (t.status <> 'queued' or due.at <= now())
          returning t.*
        )
        select claimed.id, null as retry_at, null as debounced from claimed
        union all
        select null, (case when oldest.status = 'queued' then due.at else oldest.lease_until end)::text, oldest.status = 'queued'
        from oldest, due where not exists (select 1 from claimed)`)
      const [row] = rows
      if (row === undefined) return null
      if (row.id === null) return { retryAt: new Date(row.retry_at!), debounced: row.debounced === true }
      const [turn] = await db.select().from(assistantTurns).where(eq(assistantTurns.id, row.id)).limit(1)
      return turn === undefined ? null : { turn: { ...turn, attempt: turn.attempts } }
    },

    /**
     * The turn's conversation as it is now (null when it or its message is gone), in one statement
     * (`executor`: the transaction that writes the draft). A message is newer than the turn's when
     * the platform stamped it later, or, within the same second (its stamps are whole seconds),
     * when its turn was created after this one, or when it is not dispatched yet: a delivery's
     * messages are stored and dispatched one after the other, so such a message came after this
     * turn's, and its turn (created by its dispatch) answers both.
     */
    async context (turnId: string, executor: DbOrTx = db): Promise<TurnContext | null> {
      const [row] = await executor.execute<Omit<TurnContext, 'lastIncomingAt'> & { lastIncomingAt: string | null }>(sql`
        select c.phone_number_id as "phoneNumberId", c.phone, c.platform_user_id as "platformUserId", c.name, c.ai_mode as "aiMode", c.assistant_paused as paused,
          c.last_incoming_at as "lastIncomingAt",
          exists (select 1 from chat_contacts k where k.phone_number_id = c.phone_number_id and ${sameCustomer('k', 'c')} and k.opted_out) as "optedOut",
          exists (select 1 from messages n where n.conversation_id = c.id and n.direction = 'inbound' and n.created_at > m.created_at)
            or exists (select 1 from assistant_turns o join messages om on om.id = o.message_id
              where o.conversation_id = c.id and om.created_at = m.created_at and (o.created_at, o.id) > (t.created_at, t.id))
            or exists (select 1 from messages u where u.conversation_id = c.id and u.direction = 'inbound' and u.created_at = m.created_at
              and u.id <> m.id and u.dispatched_at is null) as newer
        from assistant_turns t join conversations c on c.id = t.conversation_id join messages m on m.id = t.message_id
        where t.id = ${turnId}`)
      return row === undefined ? null : { ...row, lastIncomingAt: row.lastIncomingAt === null ? null : new Date(row.lastIncomingAt) }
    },

    /** Writes what the turn did so far; false when its claim was lost. */
    async progress (turn: ClaimedTurn, changes: TurnProgress, status: 'running' | 'waiting', leaseMs: number): Promise<boolean> {
      const updated = await db.update(assistantTurns).set({
        status,
        ...(changes.state !== undefined && { state: sql`${storableJson(changes.state)}::jsonb` }),
        ...(changes.toolCalls !== undefined && { toolCalls: changes.toolCalls }),
        ...(changes.log !== undefined && { log: changes.log.slice(-MAX_LOG_LINES) }),
        ...(changes.model !== undefined && { model: changes.model }),
        ...(changes.tokensIn !== undefined && { tokensIn: changes.tokensIn }),
        ...(changes.tokensOut !== undefined && { tokensOut: changes.tokensOut }),
        leaseUntil: sql`now() + make_interval(secs => ${leaseMs / 1000})`
      }).where(fenced(turn)).returning({ id: assistantTurns.id })
      return updated.length > 0
    },

    /** Ends the turn (in `tx` when its draft is written with it); false when its claim was lost. */
    async finish (turn: ClaimedTurn, outcome: AssistantTurnOutcome, changes: TurnProgress & { error?: string, draftMessageId?: string }, tx: DbOrTx = db): Promise<boolean> {
      const updated = await tx.update(assistantTurns).set({
        status: outcome === 'failed' ? 'failed' : 'done',
        outcome,
        state: null,
        leaseUntil: null,
        finishedAt: new Date(),
        ...(changes.toolCalls !== undefined && { toolCalls: changes.toolCalls }),
        ...(changes.log !== undefined && { log: changes.log.slice(-MAX_LOG_LINES) }),
        ...(changes.model !== undefined && { model: changes.model }),
        ...(changes.tokensIn !== undefined && { tokensIn: changes.tokensIn }),
        ...(changes.tokensOut !== undefined && { tokensOut: changes.tokensOut }),
        ...(changes.error !== undefined && { error: changes.error.slice(0, 1000) }),
        ...(changes.draftMessageId !== undefined && { draftMessageId: changes.draftMessageId })
      }).where(fenced(turn)).returning({ id: assistantTurns.id })
      return updated.length > 0
    },

    /** The latest turns of a conversation, newest first: what the assistant did and why. */
    async recent (conversationId: string, limit: number): Promise<AssistantTurn[]> {
      return db.select().from(assistantTurns).where(eq(assistantTurns.conversationId, conversationId))
        .orderBy(desc(assistantTurns.createdAt), desc(assistantTurns.id)).limit(limit)
    },

    /** A number's assistant since `since`: turns by outcome, tokens, tool calls, draft decisions and turn latency. */
    async usage (phoneNumberId: string, since: Date): Promise<AssistantUsage> {
      const [row] = await db.execute<AssistantUsage & Record<string, unknown>>(sql`
        select count(*)::int as turns,
          coalesce(jsonb_object_agg(outcome, n) filter (where outcome is not null), '{}'::jsonb) as "byOutcome",
          coalesce(sum(tokens_in), 0)::bigint::float8 as "tokensIn", coalesce(sum(tokens_out), 0)::bigint::float8 as "tokensOut",
          coalesce(sum(tool_calls), 0)::int as "toolCalls",
          coalesce(jsonb_object_agg(decision, d) filter (where decision is not null), '{}'::jsonb) as drafts,
          percentile_cont(0.5) within group (order by latency_ms) as "latencyP50Ms",
          percentile_cont(0.95) within group (order by latency_ms) as "latencyP95Ms"
        from (
          select t.outcome, t.tokens_in, t.tokens_out, jsonb_array_length(t.tool_calls) as tool_calls,
            case when t.draft_message_id is not null then coalesce(t.draft_decision, 'pending') end as decision,
            extract(epoch from t.finished_at - t.created_at) * 1000 as latency_ms,
            count(*) over (partition by t.outcome) as n,
            count(*) over (partition by case when t.draft_message_id is not null then coalesce(t.draft_decision, 'pending') end) as d
          from assistant_turns t join conversations c on c.id = t.conversation_id
          where c.phone_number_id = ${phoneNumberId} and t.created_at >= ${since.toISOString()}::timestamptz
        ) t`)
      return {
        turns: row?.turns ?? 0,
        byOutcome: row?.byOutcome ?? {},
        tokensIn: row?.tokensIn ?? 0,
        tokensOut: row?.tokensOut ?? 0,
        toolCalls: row?.toolCalls ?? 0,
        drafts: row?.drafts ?? {},
        latencyP50Ms: row?.latencyP50Ms === null || row?.latencyP50Ms === undefined ? null : Math.round(row.latencyP50Ms),
        latencyP95Ms: row?.latencyP95Ms === null || row?.latencyP95Ms === undefined ? null : Math.round(row.latencyP95Ms)
      }
    },

    /** Conversations with an unfinished turn untouched for `graceMs`: their job may be gone (Redis lost it). */
    async stalledConversations (graceMs: number, limit: number): Promise<string[]> {
      const rows = await db.execute<{ id: string }>(sql`
        select distinct conversation_id as id from (
          select conversation_id from assistant_turns
          where status in ('queued', 'running', 'waiting') and created_at < now() - make_interval(secs => ${graceMs / 1000})
            and (lease_until is null or lease_until < now())
          order by created_at limit ${limit}
        ) t`)
      return rows.map((row) => row.id)
    }
  }
}

export interface AssistantUsage {
  turns: number
  byOutcome: Record<string, number>
  tokensIn: number
  tokensOut: number
  toolCalls: number
  /** Drafts by decision (approved, edited, rejected, stale) and `pending`. */
  drafts: Record<string, number>
  /** From the message's turn created to the turn ended, over finished turns. */
  latencyP50Ms: number | null
  latencyP95Ms: number | null
}

export type AssistantTurnsRepository = ReturnType<typeof assistantTurnsRepository>
