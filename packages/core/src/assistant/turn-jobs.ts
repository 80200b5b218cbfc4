import { eq } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { assistantTurns } from '../db/schema/index.ts'
import { ASSISTANT_TURN_JOB, type Queues } from '../queues/catalog.ts'

/**
 * The jobs that work a conversation's turns (README, The assistant): one per conversation at a
 * time (one more kept while it is active), whether a message came (`delayMs`: the number's debounce,
 * before which its turn would not start) or a tool run ended (`wake`); and, for a turn waiting for
 * its tool runs, one job at its time limit, in case no wake comes.
 */
export async function enqueueTurns (queues: Queues, conversationId: string, { wake = false, delayMs = 0 } = {}): Promise<void> {
  await queues['assistant-main'].add(ASSISTANT_TURN_JOB, { conversationId, ...(wake && { wake }) }, {
    deduplication: { id: `turns:${conversationId}`, keepLastIfActive: true },
    ...(delayMs > 0 && { delay: delayMs })
  })
}

/** Wakes the turn `turnId` once one of its tool runs ended (the engine's `wakeAssistantTurn`, a cancel): its conversation's job works it now. */
export async function wakeTurn ({ db, queues }: { db: DbOrTx, queues: Queues }, turnId: string): Promise<void> {
  const [turn] = await db.select({ conversationId: assistantTurns.conversationId }).from(assistantTurns).where(eq(assistantTurns.id, turnId)).limit(1)
  if (turn !== undefined) await enqueueTurns(queues, turn.conversationId, { wake: true })
}

/** The job that looks at a waiting turn at its time limit `at` (epoch ms): its tool runs are then given up. */
export async function recheckTurnAt (queues: Queues, turn: { id: string, conversationId: string }, at: number): Promise<void> {
  await queues['assistant-main'].add(ASSISTANT_TURN_JOB, { conversationId: turn.conversationId }, { jobId: `turn:${turn.id}:deadline`, delay: Math.max(0, at - Date.now()) })
}
