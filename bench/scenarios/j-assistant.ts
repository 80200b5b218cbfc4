import { deliver, fakeChatEnv, messagesDelivery, newWamid, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { fakeModelEnv, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'
import { metric, type ScenarioResult } from '../lib/report.ts'
import { startStack, type BenchContext } from '../lib/stack.ts'

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'bench-assistant-secret'
/** Deliveries sent at once: each a customer of its own, so turns of different conversations run side by side. */
const IN_FLIGHT = 25
const TURNS_TIMEOUT_MS = 180_000

/**
 * Assistant turns without the model's own latency: the fake provider answers at once, so a turn's
 * time is the service's (claim, context, history, the model call's round trip on loopback, the
 * draft). Each message comes from a customer of its own; the figures are from the turns' rows.
 */
export async function assistantTurns (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const platform = await startFakeChatPlatform()
  const provider = await startFakeModelProvider({ defaultReply: { reply: 'Thanks for your message! A member of our team will confirm shortly.' } })
  ctx.teardown(async () => { await Promise.all([platform.close(), provider.close()]) })
  const stack = await startStack(ctx, 'J', {
    env: {
      ...fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }),
      ...fakeModelEnv(provider)
    }
  })
  const messages = ctx.quick ? 200 : 2000
  const send = async (n: number): Promise<void> => {
    const payload = messagesDelivery(PHONE_NUMBER_ID, [{ from: `1555${String(2_000_000 + n)}`, name: 'Bench', text: `question ${n}`, wamid: newWamid() }])
    const res = await deliver(`${stack.baseUrl}/webhook/chat`, payload, APP_SECRET)
    if (res.status !== 200) throw new Error(`delivery ${n} answered ${res.status}`)
  }
  let next = 0
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => { while (next < messages) await send(next++) }))
  const deadline = Date.now() + TURNS_TIMEOUT_MS
  for (;;) {
    const [{ ended }] = await stack.sql<Array<{ ended: number }>>`select count(*)::int as ended from assistant_turns where status in ('done', 'failed')`
    if (ended >= messages) break
    if (Date.now() > deadline) throw new Error(`${ended} of ${messages} turns ended within ${TURNS_TIMEOUT_MS / 1000}s`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  // Worked: from the turn's first log line (its claim) to its end, without the wait for a slot.
  const [turns] = await stack.sql<Array<{ drafted: number, p50: number, p95: number, workedP50: number, perSecond: number }>>`
    select count(*) filter (where outcome = 'drafted')::int as drafted,
      percentile_cont(0.5) within group (order by extract(epoch from finished_at - created_at) * 1000) as p50,
      percentile_cont(0.95) within group (order by extract(epoch from finished_at - created_at) * 1000) as p95,
      percentile_cont(0.5) within group (order by extract(epoch from finished_at - (log->0->>'at')::timestamptz) * 1000) as "workedP50",
      (count(*) / extract(epoch from max(finished_at) - min(created_at)))::float8 as "perSecond"
    from assistant_turns`
  if (turns!.drafted !== messages) throw new Error(`${turns!.drafted} of ${messages} turns drafted`)
  return {
    id: 'J',
    title: `assistant turns (${messages} messages, ${IN_FLIGHT} deliveries at once, the model answering at once)`,
    metrics: [
      metric('turn latency p50 (turn created → draft stored)', turns!.p50, 'ms'),
      metric('turn latency p95', turns!.p95, 'ms'),
      metric('turn worked p50 (claimed → draft stored)', turns!.workedP50, 'ms'),
      metric('turns/s', turns!.perSecond, 'turns/s')
    ],
    notes: [`${provider.requests.length} model calls for ${messages} turns; every turn drafted`]
  }
}
