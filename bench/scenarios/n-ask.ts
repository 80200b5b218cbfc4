import { deliver, fakeChatEnv, messagesDelivery, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { metric, type ScenarioResult } from '../lib/report.ts'
import { startStack, type BenchContext } from '../lib/stack.ts'

const PHONE_NUMBER_ID = '106540352242955'
const APP_SECRET = 'bench-ask-secret'
/** Messages a delivery carries (the platform batches a number's messages) and deliveries in flight. */
const PER_DELIVERY = 20
const IN_FLIGHT = 10
const TIMEOUT_MS = 180_000

const customerOf = (n: number): string => `1555${String(3_000_000 + n)}`

async function until (what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + TIMEOUT_MS
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`${what} not within ${TIMEOUT_MS / 1000}s`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * 1,000 conversations answering an `ask` (README, Conversations): each customer writes a keyword,
 * its run asks and waits (WAITING); once every run waits, every customer answers, 20 answers a
 * delivery, 10 deliveries at once. An answer's time is from its delivery's request to the end of its
 * run (the `set` after the ask): the inbound delivery, the ask taking the answer, the wake, the
 * resume and the next node.
 */
export async function askAnswers (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const platform = await startFakeChatPlatform()
  ctx.teardown(async () => { await platform.close() })
  const stack = await startStack(ctx, 'N', { env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }) })
  const token = await stack.adminToken()
  await stack.client.createWorkflow(token, {
    name: 'bench ask',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['quote'] },
    nodes: [
      { id: 'amount', type: 'ask', config: { text: 'How many do you need?', expect: 'number' }, next: 'noted' },
      { id: 'noted', type: 'set', config: { values: { amount: '{{amount.value}}' } } }
    ]
  })
  const conversations = ctx.quick ? 200 : 1000

  async function deliverAll (text: (n: number) => string, sentAt?: Map<string, number>): Promise<void> {
    let next = 0
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (next < conversations) {
        const first = next
        next += PER_DELIVERY
        const batch = Array.from({ length: Math.min(PER_DELIVERY, conversations - first) }, (_, i) => first + i)
        const at = Date.now()
        const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, batch.map((n) => ({ from: customerOf(n), text: text(n) }))), APP_SECRET)
        if (res.status !== 200) throw new Error(`delivery answered ${res.status}`)
        for (const n of batch) sentAt?.set(customerOf(n), at)
      }
    }))
  }

  await deliverAll(() => 'quote please')
  await until(`${conversations} runs waiting at their ask`, async () => {
    const [{ waiting }] = await stack.sql<Array<{ waiting: number }>>`select count(*)::int as waiting from chat_asks where status = 'waiting' and asked = 1`
    return waiting >= conversations
  })
  const sentAt = new Map<string, number>()
  await deliverAll((n) => String(n), sentAt)
  await until(`${conversations} runs ended`, async () => {
    const [{ ended }] = await stack.sql<Array<{ ended: number }>>`select count(*)::int as ended from runs where status in ('SUCCESS', 'FAILED')`
    return ended >= conversations
  })
  const runs = await stack.sql<Array<{ phone: string, status: string, amount: unknown, completedAt: string }>>`
    select trigger_data->>'phone' as phone, status, result->'noted'->'amount' as amount, completed_at as "completedAt" from runs`
  const wrong = runs.filter((run) => run.status !== 'SUCCESS' || String(run.amount) !== String(Number(run.phone) - 15553_000_000)).length
  if (wrong > 0) throw new Error(`${wrong} of ${conversations} runs did not end with their own customer's answer`)
  const latencies = runs.map((run) => new Date(run.completedAt).getTime() - sentAt.get(run.phone)!).sort((a, b) => a - b)
  const quantile = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!
  const first = Math.min(...sentAt.values())
  const last = Math.max(...runs.map((run) => new Date(run.completedAt).getTime()))
  return {
    id: 'N',
    title: `1,000 conversations answering an ask (${conversations} conversations, ${PER_DELIVERY} answers a delivery, ${IN_FLIGHT} deliveries at once)`,
    metrics: [
      metric('answers/s (first answer sent → last run ended)', conversations / ((last - first) / 1000), 'answers/s'),
      metric('answer → next node p50', quantile(0.5), 'ms'),
      metric('answer → next node p99', quantile(0.99), 'ms')
    ],
    notes: [`every run ended SUCCESS with its own customer's answer; ${platform.sends().length} questions sent`]
  }
}
