import postgres from 'postgres'
import t from 'tap'
import { deliver, fakeChatEnv, messagesDelivery, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/**
 * 1,000 conversations waiting at an `ask` (README, Conversations), answered in a burst, every
 * answer delivered twice at once (the platform repeating its webhook), on two workers, one of them
 * SIGKILLed while the answers are being taken: each run resumes once and ends with its own
 * customer's answer, the reconciler waking those whose wake died with the worker.
 */
const PHONE_NUMBER_ID = '106540352242988'
const APP_SECRET = 'reliability-ask-burst-secret'
const CONVERSATIONS = 1000
const PER_DELIVERY = 50

const fake = await startFakeChatPlatform()
t.teardown(async () => { await fake.close() })
const stack = await startStack(t, {
  workers: 2,
  env: { ...fakeChatEnv(fake, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }), RECONCILER_INTERVAL_MS: '1000', RECONCILER_GRACE_MS: '2000' }
})
const token = await stack.adminToken()
const sql = postgres(stack.env.DATABASE_URL!, { max: 2, onnotice: () => {} })
t.teardown(async () => { await sql.end() })

const customerOf = (n: number): string => `1555${String(4_000_000 + n)}`
const batches = Array.from({ length: CONVERSATIONS / PER_DELIVERY }, (_, b) => Array.from({ length: PER_DELIVERY }, (_, i) => b * PER_DELIVERY + i))

t.test('1,000 asks answered in a burst, twice, while a worker is killed: each run resumes once with its own answer', async (t) => {
  await stack.client.createWorkflow(token, {
    name: 'quote',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['quote'] },
    nodes: [
      { id: 'amount', type: 'ask', config: { text: 'How many do you need?', expect: 'number' }, next: 'noted' },
      { id: 'noted', type: 'set', config: { values: { amount: '{{amount.value}}' } } }
    ]
  })
  const asked = await Promise.all(batches.map(async (batch) =>
    await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, batch.map((n) => ({ from: customerOf(n), text: 'quote' }))), APP_SECRET)))
  t.ok(asked.every((res) => res.status === 200), 'every keyword delivery accepted')
  await waitFor(async () => {
    const [{ waiting }] = await sql<Array<{ waiting: number }>>`select count(*)::int as waiting from chat_asks where status = 'waiting' and asked = 1`
    return waiting === CONVERSATIONS ? true : undefined
  }, { what: 'every run waiting at its ask', timeoutMs: 120_000 })

  const answers = batches.map((batch) => messagesDelivery(PHONE_NUMBER_ID, batch.map((n) => ({ from: customerOf(n), text: String(n), wamid: `wamid.ask.burst.${n}` }))))
  const sends = answers.flatMap((payload) => [payload, payload]).map(async (payload) => await deliver(`${stack.baseUrl}/webhook/chat`, payload, APP_SECRET))
  await waitFor(async () => {
    const [{ answered }] = await sql<Array<{ answered: number }>>`select count(*)::int as answered from chat_asks where status <> 'waiting'`
    return answered >= CONVERSATIONS / 4 ? true : undefined
  }, { what: 'a quarter of the answers taken', intervalMs: 10 })
  await stack.workers[1]!.stop('SIGKILL')
  t.ok((await Promise.all(sends)).every((res) => res.status === 200), 'every delivery accepted')

  await waitFor(async () => {
    const [{ ended }] = await sql<Array<{ ended: number }>>`select count(*)::int as ended from runs where status in ('SUCCESS', 'FAILED', 'CANCELLED')`
    return ended === CONVERSATIONS ? true : undefined
  }, { what: 'every run ended', timeoutMs: 150_000 })
  const runs = await sql<Array<{ phone: string, status: string, amount: unknown }>>`
    select trigger_data->>'phone' as phone, status, result->'noted'->'amount' as amount from runs`
  t.equal(runs.filter((run) => run.status === 'SUCCESS').length, CONVERSATIONS, 'every run succeeded')
  t.equal(runs.filter((run) => String(run.amount) !== String(Number(run.phone) - 15554_000_000)).length, 0, 'each with its own customer\'s answer')
  const [{ done, attempts }] = await sql<Array<{ done: number, attempts: number }>>`select count(*) filter (where status = 'done')::int as done, max(attempts)::int as attempts from chat_asks`
  t.equal(done, CONVERSATIONS, 'every ask took its answer')
  t.equal(attempts, 1, 'and read it once: the repeated deliveries took nothing more')
  const [{ inbound }] = await sql<Array<{ inbound: number }>>`select count(*)::int as inbound from messages where direction = 'inbound'`
  t.equal(inbound, 2 * CONVERSATIONS, 'each message stored once')
})

t.test('1,000 messages in a burst to one conversation with a waiting ask: one answer taken, every message stored', async (t) => {
  const customer = '15554999999'
  await stack.client.createWorkflow(token, {
    name: 'one question',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['question'] },
    nodes: [
      { id: 'answer', type: 'ask', config: { text: 'Your question?' }, next: 'noted' },
      { id: 'noted', type: 'set', config: { values: { text: '{{answer.value}}' } } }
    ]
  })
  const asked = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: customer, text: 'a question' }]), APP_SECRET)
  t.equal(asked.status, 200)
  const [run] = await waitFor(async () => {
    const rows = await sql<Array<{ id: string }>>`select run_id as id from chat_asks join conversations c on c.id = chat_asks.conversation_id where c.phone = ${customer} and asked = 1`
    return rows.length === 1 ? rows : undefined
  }, { what: 'the run waiting at its ask', timeoutMs: 30_000 })
  const burst = messagesDelivery(PHONE_NUMBER_ID, Array.from({ length: 1000 }, (_, i) => ({ from: customer, text: `part ${i}`, wamid: `wamid.one.burst.${i}` })))
  t.equal((await deliver(`${stack.baseUrl}/webhook/chat`, burst, APP_SECRET)).status, 200)
  await waitFor(async () => {
    const [{ stored }] = await sql<Array<{ stored: number }>>`select count(*)::int as stored from messages m join conversations c on c.id = m.conversation_id where c.phone = ${customer} and m.direction = 'inbound'`
    return stored === 1001 ? true : undefined
  }, { what: 'every message of the burst stored', timeoutMs: 120_000 })
  const [ended] = await waitFor(async () => {
    const rows = await sql<Array<{ status: string, text: unknown }>>`select status, result->'noted'->'text' as text from runs where id = ${run!.id} and status in ('SUCCESS', 'FAILED')`
    return rows.length === 1 ? rows : undefined
  }, { what: 'the run ended' })
  t.same(ended, { status: 'SUCCESS', text: 'part 0' }, 'the first message of the burst was the answer, taken once')
  const [{ attempts }] = await sql<Array<{ attempts: number }>>`select attempts from chat_asks where run_id = ${run!.id}`
  t.equal(attempts, 1)
})
