import { createHmac, randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import { load, quantile, type LoadResult } from '../lib/load.ts'
import { stampedBody } from '../lib/pipeline.ts'
import { failureNote, metric, type ScenarioResult } from '../lib/report.ts'
import { measureRuns, nowMs, waitForFinished } from '../lib/runs.ts'
import { serveOnLoopback, startStack, type BenchContext, type Stack } from '../lib/stack.ts'
import { createWorkflow, oneSetNode } from '../lib/workflows.ts'

const DRAIN_TIMEOUT_MS = 180_000
/** How long the wait for deliveries goes on with none arriving (a worker that died, a queue nobody consumes). */
const STALLED_MS = 30_000

/** One POST the subscriber received. */
interface Received {
  webhookId: string
  runId: string
  workflowId: string
  at: number
  /** Its webhook-signature holds the HMAC of its id, timestamp and body with the secret (README, Event subscriptions). */
  signed: boolean
}

/**
 * The subscriber: an HTTP server on loopback in this process that answers 200 at once, then
 * records the delivery and checks its Standard Webhooks signature with `key` (the secret's bytes).
 */
async function startSubscriber (ctx: BenchContext, key: Buffer): Promise<{ url: string, received: Received[] }> {
  const received: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => { chunks.push(chunk) })
    req.on('end', () => {
      const at = nowMs()
      res.writeHead(200).end()
      const body = Buffer.concat(chunks).toString('utf8')
      const [webhookId, timestamp, signatures] = ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => req.headers[name])
      const expected = `v1,${createHmac('sha256', key).update(`${String(webhookId)}.${String(timestamp)}.${body}`).digest('base64')}`
      const { data } = JSON.parse(body) as { data: { runId: string, workflowId: string } }
      received.push({
        webhookId: String(webhookId),
        runId: data.runId,
        workflowId: data.workflowId,
        at,
        signed: typeof webhookId === 'string' && typeof timestamp === 'string' && typeof signatures === 'string' && signatures.split(' ').includes(expected)
      })
    })
  })
  return { url: `${await serveOnLoopback(ctx, server)}/events`, received }
}

/** Fires `count` webhook runs of `workflowId` and waits for them to finish; the load's result. */
async function fire (ctx: BenchContext, stack: Stack, workflowId: string, count: number): Promise<LoadResult> {
  const fired = await load({
    baseUrl: stack.baseUrl,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections: ctx.connections,
    amount: count,
    request: () => ({ path: `/api/automation/webhook/${workflowId}`, body: stampedBody() })
  })
  await waitForFinished(stack.sql, { table: 'runs', workflowId }, fired.requests, DRAIN_TIMEOUT_MS)
  return fired
}

/** Waits until `received` holds a delivery for `runs` runs of `workflowId`, or none came for STALLED_MS. */
async function waitForDeliveries (received: Received[], workflowId: string, runs: number): Promise<void> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS
  let progress = { count: -1, at: Date.now() }
  for (;;) {
    const count = new Set(received.filter((r) => r.workflowId === workflowId).map((r) => r.runId)).size
    if (count >= runs) return
    if (count !== progress.count) progress = { count, at: Date.now() }
    if (Date.now() > deadline || Date.now() - progress.at > STALLED_MS) return
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/**
 * Runs of a one-`set` workflow whose owner subscribed to `workflow.run.succeeded`: each success writes
 * its event in the run's own statement, the dispatch makes a delivery, a job POSTs it signed to the
 * subscriber. Deliveries/s and the lag from the run's completed_at to the delivery's arrival are
 * the subscriber's; the runs/s beside them (against A's, where nobody listens) is what a listener costs.
 */
export async function eventDeliveries (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const secret = randomBytes(32)
  const subscriber = await startSubscriber(ctx, secret)
  // The subscriber is on loopback, which deliveries refuse unless private targets are allowed (README, Event subscriptions).
  const stack = await startStack(ctx, 'L', { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
  const token = await stack.adminToken()
  const subscribed = await stack.client.call('POST', '/api/automation/subscriptions', {
    token,
    body: { url: subscriber.url, events: ['workflow.run.succeeded'], secret: `whsec_${secret.toString('base64')}` }
  })
  if (subscribed.status !== 201) throw new Error(`subscription refused: ${subscribed.status} ${JSON.stringify(subscribed.body)}`)
  const warmId = await createWorkflow(stack, 'bench L warm-up', 'WEBHOOK', oneSetNode())
  const measuredId = await createWorkflow(stack, 'bench L', 'WEBHOOK', oneSetNode())
  const warmRuns = ctx.quick ? 100 : 500
  const runs = ctx.quick ? 500 : 5000

  const warm = await fire(ctx, stack, warmId, warmRuns)
  await waitForDeliveries(subscriber.received, warmId, warm.requests)
  const fired = await fire(ctx, stack, measuredId, runs)
  const measured = await measureRuns(stack.sql, { table: 'runs', workflowId: measuredId })
  await waitForDeliveries(subscriber.received, measuredId, measured.runs - measured.unfinished - measured.notSuccess)

  const deliveries = subscriber.received.filter((r) => r.workflowId === measuredId).sort((a, b) => a.at - b.at)
  const firstArrival = new Map<string, number>()
  for (const delivery of deliveries) if (!firstArrival.has(delivery.runId)) firstArrival.set(delivery.runId, delivery.at)
  const completed = await stack.sql<Array<{ id: string, done: number }>>`
    select id, (extract(epoch from completed_at) * 1000)::float8 as done from runs where workflow_id = ${measuredId} and status = 'SUCCESS'`
  const lags = completed.flatMap((run) => firstArrival.has(run.id) ? [firstArrival.get(run.id)! - run.done] : [])
  const undelivered = completed.length - lags.length
  const events = new Set(deliveries.map((d) => d.webhookId)).size
  const unsigned = deliveries.filter((d) => !d.signed).length
  const span = deliveries.length < 2 ? Number.NaN : (deliveries[deliveries.length - 1]!.at - deliveries[0]!.at) / 1000
  return {
    id: 'L',
    title: `event deliveries (${runs.toLocaleString('en-US')} runs, one subscriber)`,
    metrics: [
      metric('deliveries/s at the subscriber', (deliveries.length - 1) / span, 'deliveries/s'),
      metric('run completed → delivery received p50', quantile(lags, 0.5), 'ms'),
      metric('run completed → delivery received p99', quantile(lags, 0.99), 'ms'),
      metric('events delivered (unique webhook-ids)', events, 'events', { op: '>=', value: completed.length }),
      metric('deliveries without a valid signature', unsigned, 'deliveries', { op: '<', value: 1 }),
      metric('completed runs/s, with the listener', measured.runsPerSecond, 'runs/s')
    ],
    notes: [
      `one subscription of the runs' owner to workflow.run.succeeded, a subscriber on loopback in the bench process answering 200 at once; ${warm.requests} warm-up runs of a workflow of their own first; EVENT_DELIVERY_CONCURRENCY at its default; deliveries/s = (deliveries − 1) ÷ (last arrival − first); runs/s = runs ÷ (last completed_at − first send), as in A, which has no listener`,
      ...(deliveries.length > events ? [`${deliveries.length - events} deliveries repeated a webhook-id`] : []),
      ...(undelivered > 0 ? [`${undelivered} of ${completed.length} successful runs had no delivery when the wait ended`] : []),
      ...(measured.unfinished + measured.notSuccess > 0 ? [`${measured.unfinished} runs unfinished, ${measured.notSuccess} not SUCCESS`] : []),
      ...failureNote('webhook load', fired)
    ]
  }
}
