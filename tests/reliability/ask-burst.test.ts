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
