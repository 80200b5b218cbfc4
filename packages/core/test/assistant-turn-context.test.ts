import { sql } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { assistantTurnsRepository } from '../src/assistant/turns.ts'
import { conversationsRepository } from '../src/chat/conversations.ts'
import { assistantTurns, conversations, messages } from '../src/db/schema/index.ts'

// When a turn is superseded (README, The assistant): a customer message newer than the turn's. The
// platform stamps whole seconds, so within one second the order comes from the turns, or from the
// dispatch: a delivery's messages are stored and dispatched one after the other.
const { db } = await createCoreTestContext(t)
const turns = assistantTurnsRepository(db)
const SECOND = new Date('2026-11-29T10:00:00Z')

async function conversationWith (phone: string): Promise<string> {
  const [conversation] = await db.insert(conversations).values({ phoneNumberId: '106540352242922', phone }).returning()
  return conversation!.id
}

async function inbound (conversationId: string, content: string, { at = SECOND, dispatched = true } = {}): Promise<string> {
  const [message] = await db.insert(messages).values({
    conversationId, direction: 'inbound', content, createdAt: at, ...(dispatched && { dispatchedAt: new Date() })
  }).returning()
  return message!.id
}

async function turnOf (conversationId: string, messageId: string): Promise<string> {
  const [turn] = await db.insert(assistantTurns).values({ conversationId, messageId }).returning()
  return turn!.id
}

const newer = async (turnId: string): Promise<boolean | undefined> => (await turns.context(turnId))?.newer

t.test('alone in its second, the turn answers', async (t) => {
  const conversation = await conversationWith('15557100001')
  const turn = await turnOf(conversation, await inbound(conversation, 'hello'))
  t.equal(await newer(turn), false)
})

t.test('a message of a later second supersedes the turn', async (t) => {
  const conversation = await conversationWith('15557100002')
  const turn = await turnOf(conversation, await inbound(conversation, 'first'))
  await inbound(conversation, 'second', { at: new Date(SECOND.getTime() + 1000) })
  t.equal(await newer(turn), true)
})

t.test('within one second: a message stored and not dispatched yet supersedes the turn; once dispatched without a turn, it does not', async (t) => {
  const conversation = await conversationWith('15557100003')
  const turn = await turnOf(conversation, await inbound(conversation, 'first'))
  const second = await inbound(conversation, 'second', { dispatched: false })
  t.equal(await newer(turn), true, 'its turn, not created yet, answers both')
  await db.update(messages).set({ dispatchedAt: new Date() }).where(sql`${messages.id} = ${second}`)
  t.equal(await newer(turn), false, 'dispatched without a turn (a keyword workflow answered it): the turn answers')
})

t.test('within one second: the message whose turn was created later supersedes; the earlier one\'s turn does not', async (t) => {
  const conversation = await conversationWith('15557100004')
  const first = await turnOf(conversation, await inbound(conversation, 'first'))
  const second = await turnOf(conversation, await inbound(conversation, 'second'))
  t.equal(await newer(first), true)
  t.equal(await newer(second), false)
})

t.test('a turn not started waits for its burst to end: quiet for debounceMs, or 3 × debounceMs after the burst\'s first message', async (t) => {
  const now = Date.now()
  const turnAt = async (conversationId: string, msAgo: number, outcome?: 'drafted'): Promise<string> => {
    const [turn] = await db.insert(assistantTurns).values({
      conversationId,
      messageId: await inbound(conversationId, `${msAgo} ms ago`),
      createdAt: new Date(now - msAgo),
      ...(outcome !== undefined && { status: 'done', outcome })
    }).returning()
    return turn!.id
  }

  // No chat_assistants row: the default debounceMs, 1500. The turn 8 s before the burst is not part of it.
  const quiet = await conversationWith('15557100011')
  await turnAt(quiet, 10_000, 'drafted')
  await turnAt(quiet, 2000)
  await turnAt(quiet, 600)
  const waiting = await turns.claim(quiet, 60_000)
  t.match(waiting, { debounced: true }, 'not started: the conversation is not quiet yet')
  const retryAt = (waiting as { retryAt: Date }).retryAt.getTime()
  t.ok(Math.abs(retryAt - (now + 900)) < 250, `looked at again 1500 ms after the latest message (${retryAt - now} ms from now)`)

  // Messages 1.2 s apart for 3.6 s: never quiet for 1.5 s, but the burst's first is more than 4.5 s old.
  const endless = await conversationWith('15557100012')
  const first = await turnAt(endless, 4600)
  for (const msAgo of [3400, 2200, 1000]) await turnAt(endless, msAgo)
  t.match(await turns.claim(endless, 60_000), { turn: { id: first } }, 'started at 3 × debounceMs after the first message')

  const [immediate] = await db.insert(conversations).values({ phoneNumberId: '106540352200000', phone: '15557100013' }).returning()
  await db.execute(sql`insert into chat_assistants (phone_number_id, debounce_ms) values ('106540352200000', 0)`)
  const now0 = await turnAt(immediate!.id, 0)
  t.match(await turns.claim(immediate!.id, 60_000), { turn: { id: now0 } }, 'debounceMs 0: at once')
})

t.test('the history of a burst within one second: every message of the second, in the order they were dispatched', async (t) => {
  const conversation = await conversationWith('15557100014')
  const dispatched = (ms: number): Date => new Date(SECOND.getTime() + ms)
  // Ids in the reverse order of the messages: they say nothing of it.
  const rows = [['m-zz', 'hi', 100], ['m-mm', 'I need help', 200], ['m-aa', 'with my order', 300]] as const
  for (const [id, content, ms] of rows) {
    await db.insert(messages).values({ id, conversationId: conversation, direction: 'inbound', content, createdAt: SECOND, dispatchedAt: dispatched(ms) })
  }
  const history = await conversationsRepository(db).history(conversation, { limit: 10, maxChars: 1000, upTo: 'm-aa' })
  t.same(history.map((message) => message.content), ['hi', 'I need help', 'with my order'])
})
