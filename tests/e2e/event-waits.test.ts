/**
 * Events and waits (README, Events and waits; issue 45 item 1) through the real api and worker:
 * `wait_for_event` resumed by a matching posted event and not by others, its timeout, an event
 * of the service's own catalogue, an event committed before the wait was written, one event
 * resuming 1,000 waiting runs, and a workflow's `cancelOn` cancelling a waiting run and racing a
 * run's end.
 */
import postgres from 'postgres'
import t from 'tap'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

t.setTimeout(180_000)

type Body = Record<string, any>

const stack = await startStack(t, { env: { RECONCILER_INTERVAL_MS: '1000', RECONCILER_GRACE_MS: '2000' } })
const token = await stack.adminToken()
const { call, client } = stack
const sql = postgres(stack.env.DATABASE_URL!, { max: 2, onnotice: () => {} })
t.teardown(async () => { await sql.end() })

async function createWorkflow (body: Body): Promise<string> {
  const res = await call('POST', '/api/automation/workflows', { token, body: { triggerType: 'MANUAL', isActive: true, ...body } })
  if (res.status !== 201) throw new Error(`create workflow: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.id
}

async function fire (workflowId: string, triggerData: unknown): Promise<string> {
  const res = await call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: { triggerData } })
  if (res.status !== 202) throw new Error(`fire: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.runId
}

const post = async (name: string, payload: unknown): Promise<Body> => {
  const res = await call('POST', '/api/automation/events', { token, body: { name, payload } })
  if (res.status !== 202) throw new Error(`event: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

const getRun = async (runId: string): Promise<Body> => (await call('GET', `/api/automation/runs/${runId}`, { token })).body
const waitingAt = async (runId: string): Promise<Body> =>
  await waitFor(async () => { const run = await getRun(runId); return run.status === 'WAITING' ? run : undefined }, { what: `run ${runId} WAITING` })

const paymentWait = {
  name: 'Wait for the payment',
  nodes: [
    { id: 'paid', type: 'wait_for_event', config: { event: 'order.paid', match: { 'order.id': '{{triggerData.orderId}}' }, timeoutMinutes: 60, timedOut: 'late' }, next: 'thanks' },
    { id: 'thanks', type: 'set', config: { values: { amount: '{{paid.payload.order.amount}}' } } },
    { id: 'late', type: 'set', config: { values: { late: true } } }
  ]
}

t.test('a save checks the node and cancelOn, and returns cancelOn', async (t) => {
  const badPath = await call('POST', '/api/automation/workflows', {
    token, body: { name: 'bad', triggerType: 'MANUAL', nodes: [{ id: 'w', type: 'wait_for_event', config: { event: 'x', match: { 'a..b': '1' } } }] }
  })
  t.equal(badPath.status, 400)
  t.match(badPath.body.message, /match path "a\.\.b"/)
  const noEvent = await call('POST', '/api/automation/workflows', { token, body: { name: 'bad', triggerType: 'MANUAL', nodes: [{ id: 'w', type: 'wait_for_event', config: {} }] } })
  t.equal(noEvent.status, 400)
  const badRule = await call('POST', '/api/automation/workflows', { token, body: { name: 'bad', triggerType: 'MANUAL', nodes: [], cancelOn: [{ match: {} }] } })
  t.equal(badRule.status, 400)
  t.match(badRule.body.message, /^cancelOn must be a list/)
  const badTemplate = await call('POST', '/api/automation/workflows', { token, body: { name: 'bad', triggerType: 'MANUAL', nodes: [], cancelOn: [{ event: 'x', match: { id: '{{triggerData.id' } }] } })
  t.equal(badTemplate.status, 400)
  t.match(badTemplate.body.message, /^cancelOn\[0\]\.match: /)
  const id = await createWorkflow({ name: 'rules', nodes: [{ id: 's', type: 'set', config: { values: { a: 1 } } }], cancelOn: [{ event: 'order.cancelled', match: { id: '{{triggerData.orderId}}' } }] })
  const got = await call('GET', `/api/automation/workflows/${id}`, { token })
  t.same(got.body.cancelOn, [{ event: 'order.cancelled', match: { id: '{{triggerData.orderId}}' } }])
  const cleared = await call('PATCH', `/api/automation/workflows/${id}`, { token, body: { cancelOn: null } })
  t.equal(cleared.body.cancelOn, null)
  t.equal(cleared.body.version, got.body.version, 'a setting: no new version')
})

t.test('a matching event resumes the wait with it; another order\'s does not', async (t) => {
  const workflowId = await createWorkflow(paymentWait)
  const runId = await fire(workflowId, { orderId: 'A-1' })
  const waiting = await waitingAt(runId)
  t.match(waiting.result.paid, { status: 'waiting', event: 'order.paid', match: { 'order.id': 'A-1' } }, 'the run shows what it waits for')
  await post('order.paid', { order: { id: 'A-2', amount: 5 } })
  await new Promise((resolve) => setTimeout(resolve, 1000))
  t.equal((await getRun(runId)).status, 'WAITING', 'another order\'s event leaves it waiting')
  await post('order.paid', { order: { id: 'A-1', amount: 42 } })
  const done = await client.runReaching(token, runId, ['SUCCESS', 'FAILED'], { timeoutMs: 20_000 })
  t.equal(done.status, 'SUCCESS')
  t.match(done.result.paid, { name: 'order.paid', payload: { order: { id: 'A-1', amount: 42 } } })
  t.match(done.result.paid.id, /\S/)
  t.ok(Number.isFinite(Date.parse(done.result.paid.receivedAt)), 'receivedAt is a time')
  t.equal(done.result.thanks.amount, 42)
  t.notOk('late' in done.result)
})

t.test('no event in time: the timedOut branch', async (t) => {
  const workflowId = await createWorkflow({
    ...paymentWait,
    name: 'Short wait',
    nodes: paymentWait.nodes.map((node) => node.id === 'paid' ? { ...node, config: { ...node.config, timeoutMinutes: 0.05 } } : node)
  })
  const runId = await fire(workflowId, { orderId: 'T-1' })
  const done = await client.runReaching(token, runId, ['SUCCESS', 'FAILED'], { timeoutMs: 30_000 })
  t.equal(done.status, 'SUCCESS')
  t.match(done.result.paid, { reason: 'timeout' })
  t.same(done.result.late, { late: true })
  t.notOk('thanks' in done.result)
})

t.test('an event of the service\'s own catalogue: another workflow\'s run succeeding', async (t) => {
  const otherId = await createWorkflow({ name: 'Other', nodes: [{ id: 's', type: 'set', config: { values: { ok: true } } }] })
  const workflowId = await createWorkflow({
    name: 'Wait for the other',
    nodes: [{ id: 'other', type: 'wait_for_event', config: { event: 'workflow.run.succeeded', match: { workflowId: otherId }, timeoutMinutes: 5 } }]
  })
  const runId = await fire(workflowId, {})
  await waitingAt(runId)
  const otherRun = await fire(otherId, {})
  const done = await client.runReaching(token, runId, ['SUCCESS', 'FAILED'], { timeoutMs: 20_000 })
  t.match(done.result.other, { name: 'workflow.run.succeeded', payload: { runId: otherRun, workflowId: otherId } })
})

t.test('a posted event is stored while a workflow waits for its name', async (t) => {
  const count = async (): Promise<number> => (await sql<Array<{ count: number }>>`select count(*)::int as count from events where name = 'order.paid'`)[0]!.count
  const before = await count()
  await post('order.paid', { order: { id: 'nobody-yet' } })
  t.equal(await count(), before + 1, 'stored: workflows name order.paid in a wait, so a run about to wait finds it')
})

t.test('an event nobody waits for is not stored', async (t) => {
  await post('nobody.waits', { a: 1 })
  const [{ count }] = await sql<Array<{ count: number }>>`select count(*)::int as count from events where name = 'nobody.waits'`
  t.equal(count, 0)
})

t.test('one event resumes 1,000 waiting runs', async (t) => {
  const workflowId = await createWorkflow({
    name: 'Many waits',
    nodes: [{ id: 'go', type: 'wait_for_event', config: { event: 'sale.started', match: { region: 'eu' }, timeoutMinutes: 10 } }]
  })
  for (let batch = 0; batch < 10; batch++) await Promise.all(Array.from({ length: 100 }, async () => await fire(workflowId, {})))
  const countOf = async (status: string): Promise<number> =>
    (await sql<Array<{ count: number }>>`select count(*)::int as count from runs where workflow_id = ${workflowId} and status = ${status}`)[0]!.count
  await waitFor(async () => await countOf('WAITING') === 1000 || undefined, { timeoutMs: 60_000, intervalMs: 250, what: '1,000 runs WAITING' })
  await post('sale.started', { region: 'us' })
  await post('sale.started', { region: 'eu' })
  await waitFor(async () => await countOf('SUCCESS') === 1000 || undefined, { timeoutMs: 60_000, intervalMs: 250, what: '1,000 runs resumed' })
  const [{ regions }] = await sql<Array<{ regions: string[] }>>`
    select array_agg(distinct result->'go'->'payload'->>'region') as regions from runs where workflow_id = ${workflowId}`
  t.same(regions, ['eu'], 'each took the matching event, not the other')
})

t.test('cancelOn cancels a waiting run of the matching order only', async (t) => {
  const workflowId = await createWorkflow({
    ...paymentWait,
    name: 'Cancellable',
    cancelOn: [{ event: 'order.cancelled', match: { orderId: '{{triggerData.orderId}}' } }]
  })
  const kept = await fire(workflowId, { orderId: 'C-1' })
  const cancelled = await fire(workflowId, { orderId: 'C-2' })
  await waitingAt(kept)
  await waitingAt(cancelled)
  await post('order.cancelled', { orderId: 'C-2' })
  const run = await client.runReaching(token, cancelled, ['CANCELLED', 'SUCCESS', 'FAILED'], { timeoutMs: 20_000 })
  t.equal(run.status, 'CANCELLED')
  t.equal((await getRun(kept)).status, 'WAITING', 'the other order\'s run waits on')
  await post('order.paid', { order: { id: 'C-1', amount: 1 } })
  t.equal((await client.runReaching(token, kept, ['SUCCESS', 'FAILED', 'CANCELLED'], { timeoutMs: 20_000 })).status, 'SUCCESS')
})

t.test('a cancelOn event racing the run\'s end: one outcome', async (t) => {
  const workflowId = await createWorkflow({
    name: 'Race',
    nodes: [{ id: 'pause', type: 'wait', config: { seconds: 1 } }, { id: 'after', type: 'set', config: { values: { done: true } } }],
    cancelOn: [{ event: 'race.stop', match: { n: '{{triggerData.n}}' } }]
  })
  const runIds = await Promise.all(Array.from({ length: 20 }, async (_, n) => await fire(workflowId, { n })))
  await new Promise((resolve) => setTimeout(resolve, 900))
  await Promise.all(runIds.map(async (_, n) => await post('race.stop', { n })))
  const outcomes = new Set<string>()
  for (const runId of runIds) {
    const run = await client.runReaching(token, runId, ['SUCCESS', 'FAILED', 'CANCELLED'], { timeoutMs: 20_000 })
    outcomes.add(run.status)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const again = await getRun(runId)
    t.equal(again.status, run.status, `run ${runId} stays ${run.status}`)
    if (run.status === 'SUCCESS') t.same(run.result.after, { done: true }, 'a run that won ran to its end')
    else t.equal(run.status, 'CANCELLED')
  }
  t.comment(`outcomes: ${[...outcomes].join(', ')}`)
})
