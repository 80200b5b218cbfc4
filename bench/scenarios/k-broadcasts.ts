import { fakeChatEnv, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { metric, type ScenarioResult } from '../lib/report.ts'
import { nowMs } from '../lib/runs.ts'
import { startStack, type BenchContext } from '../lib/stack.ts'

const PHONE_NUMBER_ID = '106540352242922'
/** The platform's standard throughput per number (packages/core/src/chat/broadcasts.ts), the rate a large account asks for. */
const RATE = 80
/** The window of the rate limiter (packages/core/src/chat/send-rate.ts): RATE sends a window, so RATE ÷ 1.2 a second over a long broadcast. */
const LIMITER_WINDOW_SECONDS = 1.2
const LABEL = 'bench'
const BROADCAST_TIMEOUT_MS = 180_000

/** The most of `times` (ms, sorted) that fall within any one second. */
function busiestSecond (times: number[]): number {
  let most = 0
  for (let start = 0, end = 0; end < times.length; end++) {
    while (times[end]! - times[start]! >= 1000) start++
    most = Math.max(most, end - start + 1)
  }
  return most
}

interface Broadcast { id: string, status: string, total: number, repeated: number, counts: Record<string, number> }

/**
 * One broadcast of a template to every contact of a label, at the platform's standard rate, through
 * the fake chat platform in this process: the rate and the busiest second from the times its sends
 * reached the platform (left unlimited, so that it shows what the service sent, not what it let
 * through), and the worker's CPU over the broadcast from /proc.
 */
export async function broadcasts (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const arrivals: number[] = []
  const platform = await startFakeChatPlatform({
    onRequest: (request) => {
      if (request.method === 'POST' && (request.body as { type?: string } | undefined)?.type === 'template') arrivals.push(nowMs())
    }
  })
  ctx.teardown(platform.close)
  const stack = await startStack(ctx, 'K', { env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID }) })
  const worker = stack.worker!
  const token = await stack.adminToken()
  const contacts = ctx.quick ? 300 : 3000
  // Contacts as an account brings them: a CSV import over HTTP, each consenting (optedOut false, README, Contacts and consent).
  const csv = `phone,labels,optedOut\n${Array.from({ length: contacts }, (_, n) => `1557${String(n).padStart(7, '0')},${LABEL},false`).join('\n')}\n`
  const imported = await fetch(`${stack.baseUrl}/api/chat/contacts/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
    body: csv
  })
  const { imported: count } = await imported.json() as { imported: number }
  if (imported.status !== 200 || count !== contacts) throw new Error(`contacts import: ${imported.status}, ${count} of ${contacts} imported`)

  const cpuBefore = worker.cpuSeconds()
  const began = nowMs()
  const created = await stack.client.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'hello_world', label: LABEL, ratePerSecond: RATE } })
  if (created.status !== 201) throw new Error(`broadcast refused: ${created.status} ${JSON.stringify(created.body)}`)
  const { id } = created.body as Broadcast
  let broadcast: Broadcast
  for (;;) {
    broadcast = (await stack.client.call('GET', `/api/chat/broadcasts/${id}`, { token })).body as Broadcast
    if (broadcast.status === 'done' || broadcast.status === 'cancelled') break
    if (nowMs() - began > BROADCAST_TIMEOUT_MS) throw new Error(`broadcast still ${broadcast.status} after ${BROADCAST_TIMEOUT_MS / 1000}s: ${JSON.stringify(broadcast.counts)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const cpu = worker.cpuSeconds() - cpuBefore
  const wallSeconds = (nowMs() - began) / 1000

  arrivals.sort((a, b) => a - b)
  const sends = arrivals.length
  const sendsPerSecond = (sends - 1) / ((arrivals[sends - 1]! - arrivals[0]!) / 1000)
  const { sent, failed, skipped } = broadcast.counts
  return {
    id: 'K',
    title: `broadcast (${contacts.toLocaleString('en-US')} contacts at ${RATE}/s)`,
    metrics: [
      metric('sends/s at the platform', sendsPerSecond, 'sends/s'),
      metric('most sends in any one second', busiestSecond(arrivals), 'sends', { op: '<', value: RATE + 1 }),
      metric('worker CPU', (cpu / wallSeconds) * 100, '% of a core'),
      metric('worker CPU per 1,000 sends', (cpu / sends) * 1000 * 1000, 'CPU ms')
    ],
    notes: [
      `one broadcast of hello_world to a label of ${contacts.toLocaleString('en-US')} imported contacts, ratePerSecond ${RATE}: the limiter admits ${RATE} sends a ${LIMITER_WINDOW_SECONDS} s window, ${(RATE / LIMITER_WINDOW_SECONDS).toFixed(1)} sends/s over a long broadcast (a short one's first and last windows weigh more); sends/s = (sends − 1) ÷ (last arrival − first), the busiest second over a sliding window`,
      `worker CPU (user + system, /proc/<pid>/stat) ${cpu.toFixed(1)} s over ${wallSeconds.toFixed(1)} s from the create request to the broadcast seen done`,
      ...(broadcast.status !== 'done' || sent !== contacts || sends !== contacts
        ? [`broadcast ${broadcast.status}: ${sent} sent, ${failed} failed, ${skipped} skipped, ${broadcast.repeated} repeated; ${sends} sends reached the platform for ${contacts} contacts`]
        : [])
    ]
  }
}
