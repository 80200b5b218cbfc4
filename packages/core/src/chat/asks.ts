import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { jsonb } from '../db/sql.ts'
import type { AskAnswer, AskStatus } from '../db/schema/asks.ts'
import type { QueueName } from '../queues/catalog.ts'
import type { InboundChatMessage } from './inbound.ts'

/**
 * The waits of `ask` nodes for their customer's next message (README, Conversations). One row per
 * run and node; at most one open (`waiting` or `answered`) per conversation. Every change is one
 * guarded statement on that row, so a repeated webhook, two workers taking messages of one
 * conversation at once, the timeout and a newer ask race on the row and exactly one wins.
 */

export interface Ask {
  conversationId: string
  status: AskStatus
  attempts: number
  asked: number
  answer: AskAnswer | null
  expiresAt: Date
}

/** A run to wake: its ask changed while it waits. */
export interface AskWake {
  runId: string
  queue: QueueName
}

/** What an inbound message found: no open ask (it goes on to KEYWORD workflows and the assistant), or an ask that took it. */
export type AskTake = { taken: false } | { taken: true, answered: boolean, wake: AskWake | null }

/** The runs whose ask may take a message: a cancelled or ended run's ask takes nothing. */
const LIVE_RUN = sql`runs.status in ('RUNNING', 'WAITING')`

export function chatAsks (db: DbOrTx) {
  return {
    async get (runId: string, nodeId: string): Promise<Ask | undefined> {
      const [row] = await db.execute<Ask & Record<string, unknown>>(sql`
        select conversation_id as "conversationId", status, attempts, asked, answer, expires_at as "expiresAt"
        from chat_asks where run_id = ${runId} and node_id = ${nodeId}`)
      return row === undefined ? undefined : { ...row, expiresAt: new Date(row.expiresAt) }
    },

    /**
     * Opens the ask of a run's node on a conversation, `waiting` until `expiresAt`; an open ask of
     * another run on the conversation ends `superseded` first (its run to wake is returned). Under
     * the conversation's advisory lock, so that two asks opening at once end with one open.
     * Opening again (the node ran again after a crash) changes nothing.
     */
    async open (runId: string, nodeId: string, conversationId: string, expiresAt: Date): Promise<{ superseded: AskWake[] }> {
      return await db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`ask:${conversationId}`}, 0))`)
        const superseded = await tx.execute<AskWake & Record<string, unknown>>(sql`
          with superseded as (
            update chat_asks set status = 'superseded', updated_at = now()
            where conversation_id = ${conversationId} and status in ('waiting', 'answered') and (run_id, node_id) <> (${runId}, ${nodeId})
            returning run_id
          )
          select runs.id as "runId", runs.queue from superseded join runs on runs.id = superseded.run_id where ${LIVE_RUN}`)
        await tx.execute(sql`
          insert into chat_asks (run_id, node_id, conversation_id, expires_at)
          values (${runId}, ${nodeId}, ${conversationId}, ${expiresAt.toISOString()}::timestamptz)
          on conflict (run_id, node_id) do nothing`)
        return { superseded: [...superseded] }
      })
    },

    /** The question of `attempt` was sent: a node that runs again does not send it again. */
    async markAsked (runId: string, nodeId: string, attempt: number): Promise<void> {
      await db.execute(sql`update chat_asks set asked = greatest(asked, ${attempt}), updated_at = now() where run_id = ${runId} and node_id = ${nodeId}`)
    },

    /** Ends a waiting ask past its time at `timeout`; the ask as it is then (an answer that came first wins). */
    async expire (runId: string, nodeId: string): Promise<Ask | undefined> {
      await db.execute(sql`
        update chat_asks set status = 'timeout', updated_at = now()
        where run_id = ${runId} and node_id = ${nodeId} and status = 'waiting' and expires_at <= now()`)
      return await this.get(runId, nodeId)
    },

    /** The node read its answer and goes on (`done`, counting it) or ends at `exited`. */
    async settle (runId: string, nodeId: string, status: 'done' | 'exited', attempts: number): Promise<void> {
      await db.execute(sql`
        update chat_asks set status = ${status}, attempts = ${attempts}, updated_at = now()
        where run_id = ${runId} and node_id = ${nodeId} and status = 'answered'`)
    },

    /**
     * An invalid answer with attempts left: `waiting` again for the next one, until `expiresAt`.
     * False when the ask was not `answered` (superseded meanwhile).
     */
    async reopen (runId: string, nodeId: string, attempts: number, expiresAt: Date): Promise<boolean> {
      const rows = await db.execute(sql`
        update chat_asks set status = 'waiting', attempts = ${attempts}, answer = null, expires_at = ${expiresAt.toISOString()}::timestamptz, updated_at = now()
        where run_id = ${runId} and node_id = ${nodeId} and status = 'answered'
        returning run_id`)
      return rows.length > 0
    },

    /**
     * An inbound message: the open ask of a live run on its conversation takes it. Waiting, it
     * becomes the ask's answer and its run is to be woken; already answered (the run has not read
     * that answer yet), it is only stored. The same message again (a repeated webhook, a retried
     * delivery) is taken again and wakes the run again, which reads its answer once.
     */
    async take (message: InboundChatMessage): Promise<AskTake> {
      const { conversationId } = message
      const answer: AskAnswer = {
        messageId: message.messageId,
        wamid: message.wamid,
        type: message.type,
        text: message.text,
        ...(message.interactive !== undefined && { interactive: message.interactive }),
        ...(message.media !== undefined && { media: message.media }),
        ...(message.details !== undefined && { details: message.details })
      }
      const [row] = await db.execute<{ answered: boolean, runId: string, queue: QueueName, ownAnswer: boolean }>(sql`
        with open as (
          select chat_asks.run_id, chat_asks.node_id, chat_asks.status, chat_asks.answer->>'messageId' as "answerId", runs.queue
          from chat_asks join runs on runs.id = chat_asks.run_id
          where chat_asks.conversation_id = ${conversationId} and chat_asks.status in ('waiting', 'answered')
            and chat_asks.expires_at > now() and ${LIVE_RUN}
          for update of chat_asks
        ), answered as (
          update chat_asks set status = 'answered', answer = ${jsonb(answer)}, updated_at = now()
          from open where chat_asks.run_id = open.run_id and chat_asks.node_id = open.node_id and open.status = 'waiting'
          returning chat_asks.run_id
        )
        select exists (select 1 from answered) as answered, open.run_id as "runId", open.queue,
          open."answerId" is not distinct from ${answer.messageId} as "ownAnswer"
        from open`)
      if (row === undefined) return { taken: false }
      const wakes = row.answered || row.ownAnswer
      return { taken: true, answered: row.answered, wake: wakes ? { runId: row.runId, queue: row.queue } : null }
    },

    /** The customer opted out: the conversation's open ask ends at `exited`; its run to wake. */
    async exit (conversationId: string): Promise<AskWake | null> {
      const [row] = await db.execute<AskWake & Record<string, unknown>>(sql`
        with exited as (
          update chat_asks set status = 'exited', answer = null, updated_at = now()
          where conversation_id = ${conversationId} and status in ('waiting', 'answered')
          returning run_id
        )
        select runs.id as "runId", runs.queue from exited join runs on runs.id = exited.run_id where ${LIVE_RUN}`)
      return row ?? null
    }
  }
}

export type ChatAsks = ReturnType<typeof chatAsks>
