import { sql } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { assistantTurnsRepository } from '../src/assistant/turns.ts'
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
