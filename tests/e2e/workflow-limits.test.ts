/**
 * Limits per workflow through the real api and two worker processes: maxConcurrentRuns holds
 * runs PENDING beyond it (never failed, never re-enqueued in a storm by the reconciler, which
 * passes every second here) and starts them oldest first as slots free; a PATCH raising or
 * removing it lets them go; the inbound webhook's rate limit refuses with 429 and creates nothing.
 */
import t from 'tap'
import { startDeliverySink, type Delivery } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const sink = await startDeliverySink(t, {
  // `/<test>/<n>/<hold ms>`: each call says how long it is held.
  delayMs: (path) => Number(path.split('/')[3] ?? 0)
})
const stack = await startStack(t, { workers: 2, env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true', RECONCILER_INTERVAL_MS: '1000' } })
const token = await stack.adminToken()
const { client, call } = stack

type Body = Record<string, any>

/** A workflow whose one node posts to the sink at `/<tag>/<triggerData.n>/<triggerData.holdMs>`. */
async function slowWorkflow (tag: string, maxConcurrentRuns: number): Promise<string> {
  return await client.createWorkflow(token, {
    name: `limited ${tag}`,
    maxConcurrentRuns,
    nodes: [{ id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/${tag}/{{triggerData.n}}/{{triggerData.holdMs}}`, timeoutMs: 60_000 } }]
  })
}

const deliveriesOf = (tag: string): Delivery[] => sink.deliveries.filter((delivery) => delivery.path.startsWith(`/${tag}/`))
const numberOf = (delivery: Delivery): number => Number(delivery.path.split('/')[2])
const waitForDeliveries = async (tag: string, count: number, timeoutMs = 15_000): Promise<void> => {
  await waitFor(async () => deliveriesOf(tag).length >= count ? true : undefined, { timeoutMs, intervalMs: 20, what: `${count} calls to /${tag}` })
}
const run = async (runId: string): Promise<Body> => (await call('GET', `/api/automation/runs/${runId}`, { token })).body
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

t.test('maxConcurrentRuns 2, ten runs fired one after the other, two workers: never more than 2 at once, all SUCCESS, started in creation order', async (t) => {
  const workflowId = await slowWorkflow('ten', 2)
  // One after the other, each answered before the next is sent: creation order is the order they were fired.
  const runIds: string[] = []
  for (let n = 1; n <= 10; n++) runIds.push(await client.fire(token, workflowId, { n, holdMs: 400 }))

  const ended = await Promise.all(runIds.map(async (runId) => await client.runReaching(token, runId, undefined, { timeoutMs: 60_000 })))
  t.same(ended.map((body) => body.status), Array(10).fill('SUCCESS'), 'every run succeeded: none failed or dropped for waiting')
  t.ok(sink.maxInFlight() <= 2, `never more than 2 calls at once (saw ${sink.maxInFlight()})`)
  t.equal(deliveriesOf('ten').length, 10, 'each run called once')

  const byCreation = ended.map((body) => ({ n: body.triggerData.n as number, createdAt: body.createdAt, startedAt: (body as Body).startedAt as string }))
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
  t.same(byCreation.map((row) => row.n), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  // Two runs that get their slots together (the first two, or two held ones when both slots free at once) race to
  // the sink, so each may be one place off; a run that overtook one created two or more places earlier took no slot in order.
  const creationOrder = byCreation.map((row) => row.n)
  const called = deliveriesOf('ten').map(numberOf)
  t.same([...called].sort((a, b) => a - b), creationOrder)
  t.ok(called.every((n, i) => Math.abs(creationOrder.indexOf(n) - i) < 2), `called in the order the runs were created, give or take runs started together (${called.join(', ')})`)
  const started = [...byCreation].sort((a, b) => a.startedAt.localeCompare(b.startedAt)).map((row) => row.n)
  t.ok(started.every((n, i) => Math.abs(creationOrder.indexOf(n) - i) < 2), `and started in that order (${started.join(', ')})`)
  for (const body of ended) {
    t.equal(body.logs.filter((line) => line.message === 'Run started').length, 1, 'one start per run: a held run is not restarted')
  }

  // A slot frees when a call is answered (its run ends right after); the i-th freed slot goes to the (i+2)-th run.
  const calls = deliveriesOf('ten')
  const freed = calls.map((delivery) => delivery.answeredAt!).sort((a, b) => a - b)
  const latencies = calls.slice(2).map((delivery, i) => delivery.receivedAt - freed[i]!)
  t.comment(`slot freed (call answered) → next held run's call: median ${median(latencies)} ms, max ${Math.max(...latencies)} ms`)
  t.ok(Math.max(...latencies) < 3000, 'each held run started soon after a slot freed')
})

t.test('held runs stay PENDING through many reconciler passes; a PATCH raising the limit, then removing it, lets them go at once', async (t) => {
  // What the workers log from here on: in the test above, a reconciler pass may find a slot freed and not yet handed on, and wake its run, as it should.
  const outputBefore = stack.workers.map((worker) => worker.output().length)
  const outputSince = (): string => stack.workers.map((worker, i) => worker.output().slice(outputBefore[i])).join('\n')
  const workflowId = await slowWorkflow('patch', 1)
  const first = await client.fire(token, workflowId, { n: 1, holdMs: 12_000 })
  await waitForDeliveries('patch', 1)
  const held = []
  for (const n of [2, 3, 4]) held.push(await client.fire(token, workflowId, { n, holdMs: 1000 }))

  // Past the reconciler's grace (5 s), with a pass every second: nothing re-enqueued, failed or started.
  await new Promise((resolve) => setTimeout(resolve, 7000))
  t.same((await Promise.all(held.map(run))).map((body) => body.status), ['PENDING', 'PENDING', 'PENDING'])
  t.equal(deliveriesOf('patch').length, 1)
  t.notMatch(outputSince(), /PENDING run had no job|runs waiting for a slot that was free/, 'the reconciler left the held runs alone')

  const raisedAt = Date.now()
  const raised = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { maxConcurrentRuns: 3 } })
  t.equal(raised.status, 200)
  t.equal(raised.body.maxConcurrentRuns, 3)
  await waitForDeliveries('patch', 3, 5000)
  // The two get their slots at once and race to the sink.
  const called = deliveriesOf('patch').map(numberOf)
  t.same([called[0], ...called.slice(1).sort((a, b) => a - b)], [1, 2, 3], `the two oldest held runs started beside the first (${called.join(', ')})`)
  t.comment(`PATCH raising the limit → held runs' calls: ${deliveriesOf('patch').slice(1).map((delivery) => delivery.receivedAt - raisedAt).join(', ')} ms`)
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(deliveriesOf('patch').length, 3, 'the fourth still waits: 3 are running')

  const removedAt = Date.now()
  await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { maxConcurrentRuns: null } })
  await waitForDeliveries('patch', 4, 5000)
  t.ok(deliveriesOf('patch')[3]!.answeredAt === undefined || deliveriesOf('patch')[0]!.answeredAt === undefined, 'while the others still ran')
  t.comment(`PATCH removing the limit → the last held run's call: ${deliveriesOf('patch')[3]!.receivedAt - removedAt} ms`)

  const ended = await Promise.all([first, ...held].map(async (runId) => await client.runReaching(token, runId, undefined, { timeoutMs: 30_000 })))
  t.same(ended.map((body) => body.status), ['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS'])
})

t.test('the inbound webhook beyond webhookRateLimit: 429 with Retry-After and no run; the next window is let through', async (t) => {
  const workflowId = await client.createWorkflow(token, { name: 'rate limited', triggerType: 'WEBHOOK', webhookRateLimit: { max: 2, windowSeconds: 2 } })
  const shown = (await call('GET', `/api/automation/workflows/${workflowId}`, { token })).body
  t.same(shown.webhookRateLimit, { max: 2, windowSeconds: 2 })
  const post = async () => await call('POST', `/api/automation/webhook/${workflowId}`, { body: { hello: 'world' } })

  const accepted = [await post(), await post()]
  t.same(accepted.map((res) => [res.status, res.body.status]), [[200, 'received'], [200, 'received']])
  const refused = await post()
  t.equal(refused.status, 429)
  t.equal(refused.body.code, 'TOO_MANY_REQUESTS')
  const retryAfter = Number(refused.headers.get('retry-after'))
  t.ok(retryAfter >= 1 && retryAfter <= 2, `Retry-After: ${retryAfter}`)
  t.equal((await client.runsOf(token, workflowId)).length, 2, 'no run for the refused request')

  await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 + 100))
  const later = await post()
  t.same([later.status, later.body.status], [200, 'received'])
  t.equal((await client.runReaching(token, later.body.runId)).status, 'SUCCESS')
  t.equal((await client.runsOf(token, workflowId)).length, 3)
})

t.test('validation: out-of-bounds limits are 400 VALIDATION_ERROR', async (t) => {
  const res = await call('POST', '/api/automation/workflows', { token, body: { name: 'bad', triggerType: 'MANUAL', maxConcurrentRuns: 0 } })
  t.same([res.status, res.body.code, res.body.message], [400, 'VALIDATION_ERROR', 'maxConcurrentRuns must be an integer from 1 to 1000, or null'])
  const rate = await call('POST', '/api/automation/workflows', { token, body: { name: 'bad', triggerType: 'WEBHOOK', webhookRateLimit: { max: 10, windowSeconds: 7200 } } })
  t.same([rate.status, rate.body.code, rate.body.message], [400, 'VALIDATION_ERROR', 'webhookRateLimit.windowSeconds must be an integer from 1 to 3600'])
})
