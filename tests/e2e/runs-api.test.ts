import { createHmac } from 'node:crypto'
import t from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { TERMINAL_RUN_STATUSES } from '@switchboard/testing/client'

/** A sink that holds every request until the test releases it: keeps a run RUNNING on purpose. */
const slowSink = await startDeliverySink(t, { held: () => true })
const slowUrl = `${slowSink.url}/slow`

const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
const token = await stack.adminToken()
const { client } = stack

/** The worker has nothing in hand and nothing scheduled on workflow-runs. */
async function workflowRunsIdle (): Promise<void> {
  await waitFor(async () => {
    const { body } = await stack.call('GET', '/api/automation/queues', { token })
    const runs = body.queues.find((queue: { name: string }) => queue.name === 'workflow-runs')
    return runs.waiting + runs.active + runs.delayed === 0 ? true : undefined
  }, { what: 'workflow-runs to be idle' })
}

async function postWebhook (workflowId: string, body: string, headers: Record<string, string> = {}, query = '') {
  const res = await fetch(`${stack.baseUrl}/api/automation/webhook/${workflowId}${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body
  })
  return { status: res.status, body: await res.json() as { status: string, runId?: string } }
}

const sign = (secret: string, body: string): string => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`

t.test('HMAC-verified webhook: a valid signature runs to SUCCESS, a tampered body FAILS with Invalid signature', async (t) => {
  const secret = 'shared-webhook-secret'
  const workflowId = await client.createWorkflow(token, {
    triggerType: 'WEBHOOK',
    nodes: [
      { id: 'verify', type: 'verify_signature', config: { secret, header: 'X-Signature', prefix: 'sha256=' }, next: 'record' },
      { id: 'record', type: 'set', config: { values: { event: '{{triggerData.body.event}}', amount: '{{triggerData.body.amount}}' } } }
    ]
  })
  // Spacing and key order a re-serialisation would change: the HMAC is over the exact bytes.
  const body = '{ "event":"order.paid",\n  "amount":  42 }'

  const valid = await postWebhook(workflowId, body, { 'x-signature': sign(secret, body) })
  t.same(valid, { status: 200, body: { status: 'received', runId: valid.body.runId } })
  const succeeded = await client.runReaching(token, valid.body.runId!)
  t.equal(succeeded.status, 'SUCCESS', succeeded.error ?? '')
  t.same(succeeded.result.verify, { valid: true })
  t.same(succeeded.result.record, { event: 'order.paid', amount: 42 })

  const tampered = await postWebhook(workflowId, body.replace('42', '43'), { 'x-signature': sign(secret, body) })
  t.equal(tampered.body.status, 'received')
  const failed = await client.runReaching(token, tampered.body.runId!)
  t.equal(failed.status, 'FAILED')
  t.equal(failed.error, 'Invalid signature')
  t.notOk('record' in failed.result, 'no node after the failed check ran')

  const unsigned = await client.runReaching(token, (await postWebhook(workflowId, body)).body.runId!)
  t.equal(unsigned.error, 'Invalid signature')

  const form = 'event=order.refunded&amount=5'
  const formRun = await postWebhook(workflowId, form, { 'content-type': 'application/x-www-form-urlencoded', 'x-signature': sign(secret, form) })
  const formDone = await client.runReaching(token, formRun.body.runId!)
  t.equal(formDone.status, 'SUCCESS', formDone.error ?? '')
  t.same(formDone.result.record, { event: 'order.refunded', amount: '5' })
})

t.test('webhook: received with {body, headers, query}; ignored in all four cases; idempotent redelivery', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    triggerType: 'WEBHOOK',
    nodes: [{ id: 'pick', type: 'set', config: { values: { source: '{{triggerData.headers.x-source}}', ref: '{{triggerData.query.ref}}', event: '{{triggerData.body.event}}' } } }]
  })
  const received = await postWebhook(workflowId, '{"event":"ping"}', { 'X-Source': 'crm' }, '?ref=r-1')
  t.equal(received.body.status, 'received')
  const run = await client.runReaching(token, received.body.runId!)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.pick, { source: 'crm', ref: 'r-1', event: 'ping' })

  const inactive = await client.createWorkflow(token, { triggerType: 'WEBHOOK', isActive: false, nodes: [{ id: 'n', type: 'set', config: { values: {} } }] })
  const manual = await client.createWorkflow(token, { triggerType: 'MANUAL', nodes: [{ id: 'n', type: 'set', config: { values: {} } }] })
  for (const [what, id] of [['missing', 'clxxxxxxxxxxxxxxxxxxxxxxx'], ['malformed', 'not-a-cuid!'], ['inactive', inactive], ['not WEBHOOK', manual]]) {
    t.same(await postWebhook(id!, '{}'), { status: 200, body: { status: 'ignored' } }, what)
  }
  for (const id of [inactive, manual]) {
    t.match((await stack.call('GET', `/api/automation/workflows/${id}`, { token })).body, { runCount: 0, runs: [] })
  }

  const headers = { 'idempotency-key': 'delivery-77' }
  const first = await postWebhook(workflowId, '{"event":"again"}', headers)
  const second = await postWebhook(workflowId, '{"event":"again"}', headers)
  t.equal(second.body.runId, first.body.runId)
  await client.runReaching(token, first.body.runId!)
  t.match((await stack.call('GET', `/api/automation/workflows/${workflowId}`, { token })).body, { runCount: 2 })
})

t.test('fire: idempotent, and an inactive workflow answers 400 with no run created', async (t) => {
  const workflowId = await client.createWorkflow(token, { triggerType: 'MANUAL', nodes: [{ id: 'n', type: 'set', config: { values: { ok: 'yes' } } }] })
  const headers = { 'idempotency-key': 'fire-once' }
  const first = await stack.call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: {}, headers })
  const second = await stack.call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: {}, headers })
  t.equal(first.status, 202)
  t.equal(second.body.runId, first.body.runId)
  t.equal((await client.runReaching(token, first.body.runId)).status, 'SUCCESS')
  t.match((await stack.call('GET', `/api/automation/workflows/${workflowId}`, { token })).body, { runCount: 1, successCount: 1 })

  const inactive = await client.createWorkflow(token, { triggerType: 'MANUAL', isActive: false, nodes: [{ id: 'n', type: 'set', config: { values: {} } }] })
  const refused = await stack.call('POST', `/api/automation/workflows/${inactive}/fire`, { token, body: {} })
  t.equal(refused.status, 400)
  t.equal(refused.body.message, 'Workflow is not active')
  t.match((await stack.call('GET', `/api/automation/workflows/${inactive}`, { token })).body, { runCount: 0, runs: [] })
  t.same((await stack.call('GET', `/api/automation/runs?workflowId=${inactive}`, { token })).body, [])
})

t.test('counters and the latest-10 rule', async (t) => {
  // Fired runs carry no raw body, so the `bad` branch fails its signature check.
  const workflowId = await client.createWorkflow(token, {
    triggerType: 'MANUAL',
    nodes: [
      { id: 'route', type: 'condition', config: { field: 'triggerData.ok', then: 'good', else: 'bad' } },
      { id: 'good', type: 'set', config: { values: { n: '{{triggerData.n}}' } } },
      { id: 'bad', type: 'verify_signature', config: { secret: 'x', header: 'x-signature' } }
    ]
  })
  const runIds: string[] = []
  for (let n = 0; n < 12; n++) {
    const res = await stack.call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: { n, ok: n % 4 !== 3 } })
    runIds.push(res.body.runId)
  }
  const finished = await Promise.all(runIds.map(async (runId) => client.runReaching(token, runId)))
  t.same(finished.map((run) => run.status), runIds.map((_id, n) => n % 4 === 3 ? 'FAILED' : 'SUCCESS'))

  const workflow = (await stack.call('GET', `/api/automation/workflows/${workflowId}`, { token })).body
  t.match(workflow, { runCount: 12, successCount: 9, failureCount: 3 })
  const newest = finished.reduce((latest, run) => run.createdAt > latest.createdAt ? run : latest)
  t.equal(workflow.lastRunAt, newest.createdAt, 'lastRunAt is the latest run\'s creation time')

  const listed = (await stack.call('GET', `/api/automation/runs?workflowId=${workflowId}`, { token })).body
  t.equal(listed.length, 12)
  t.equal(workflow.runs.length, 10)
  t.same(workflow.runs.map((run: { id: string }) => run.id), listed.slice(0, 10).map((run: { id: string }) => run.id), 'the latest 10, newest first')
  for (const run of workflow.runs) {
    t.match(run, { id: String, status: /^(SUCCESS|FAILED)$/, durationMs: Number, startedAt: String, completedAt: String })
  }
})

t.test('cancel a RUNNING run: the node in flight is abandoned, no later node runs', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    triggerType: 'MANUAL',
    nodes: [
      { id: 'slow', type: 'http_request', config: { method: 'POST', url: slowUrl, timeoutMs: 30000 }, next: 'after' },
      { id: 'after', type: 'set', config: { values: { ran: 'yes' } } }
    ]
  })
  const { runId } = (await stack.call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: {} })).body
  await waitFor(async () => slowSink.inFlight() === 1 ? true : undefined, { what: 'the call to be held' })
  t.equal((await client.getRun(token, runId)).status, 'RUNNING')

  const cancelled = await stack.call('POST', `/api/automation/runs/${runId}/cancel`, { token })
  t.equal(cancelled.status, 200)
  t.equal(cancelled.body.status, 'CANCELLED')
  slowSink.release()
  await workflowRunsIdle()

  const run = await client.getRun(token, runId)
  t.equal(run.status, 'CANCELLED')
  t.notOk('after' in run.result)
  const again = await stack.call('POST', `/api/automation/runs/${runId}/cancel`, { token })
  t.equal(again.status, 409)
  t.equal(again.body.message, 'Run is already finished')
})

t.test('cancel a WAITING run: it never resumes', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    triggerType: 'MANUAL',
    nodes: [
      { id: 'pause', type: 'wait', config: { seconds: 1 } },
      { id: 'after', type: 'set', config: { values: { ran: 'yes' } } }
    ]
  })
  const { runId } = (await stack.call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: {} })).body
  const waiting = await client.runReaching(token, runId, ['WAITING', ...TERMINAL_RUN_STATUSES])
  t.equal(waiting.status, 'WAITING')
  const cancelled = await stack.call('POST', `/api/automation/runs/${runId}/cancel`, { token })
  t.equal(cancelled.body.status, 'CANCELLED')
  await workflowRunsIdle()

  const run = await client.getRun(token, runId)
  t.equal(run.status, 'CANCELLED')
  t.notOk('after' in run.result)
  t.notOk(run.logs.some((line) => line.message === 'Run resumed'))
})

t.test('cancel a PENDING run: the worker never starts it', async (t) => {
  const workflowId = await client.createWorkflow(token, { triggerType: 'MANUAL', nodes: [{ id: 'only', type: 'set', config: { values: { ran: 'yes' } } }] })
  await stack.workers[0]!.stop('SIGTERM')
  const { runId } = (await stack.call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: {} })).body
  t.equal((await client.getRun(token, runId)).status, 'PENDING')
  const cancelled = await stack.call('POST', `/api/automation/runs/${runId}/cancel`, { token })
  t.equal(cancelled.status, 200)
  t.equal(cancelled.body.status, 'CANCELLED')

  await stack.startWorker()
  const later = (await stack.call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: {} })).body.runId
  t.equal((await client.runReaching(token, later)).status, 'SUCCESS', 'the new worker runs later runs')
  await workflowRunsIdle()
  const run = await client.getRun(token, runId)
  t.equal(run.status, 'CANCELLED')
  t.same(Object.keys(run.result), [], 'no node ran')
})

t.test('queues: workflow-runs, scheduled-tasks, agent-execution and assistant-main in that order, then chat-broadcasts and event-deliveries, with counters', async (t) => {
  const res = await stack.call('GET', '/api/automation/queues', { token })
  t.equal(res.status, 200)
  t.same(res.body.queues.map((queue: { name: string }) => queue.name), ['workflow-runs', 'scheduled-tasks', 'agent-execution', 'assistant-main', 'chat-broadcasts', 'event-deliveries', 'knowledge-index'])
  for (const queue of res.body.queues) {
    t.same(Object.keys(queue).sort(), ['active', 'completed', 'delayed', 'failed', 'name', 'waiting'])
    for (const counter of ['waiting', 'active', 'completed', 'failed', 'delayed']) t.ok(Number.isInteger(queue[counter]), `${queue.name}.${counter}`)
  }
  t.ok(res.body.queues[0].completed > 0, 'workflow-runs counts the runs this file executed')
})

t.test('the worker indexes new runs for ?q= and ?tag= behind their starts (README, Finding runs), a failure with its error', async (t) => {
  const workflowId = await stack.client.createWorkflow(token, {
    name: 'partner call',
    runTags: 'partner:{{triggerData.partner}}',
    // Nothing listens on port 9: the call fails, and the run with it.
    nodes: [{ id: 'call', type: 'http_request', config: { url: 'http://127.0.0.1:9/{{triggerData.order}}' } }]
  })
  const runId = await stack.client.fire(token, workflowId, { partner: 'acme', order: 'ORD-5521' })
  await stack.client.runReaching(token, runId)
  const found = async (query: string): Promise<string[]> =>
    ((await stack.call('GET', `/api/automation/runs?${query}`, { token })).body as Array<{ id: string }>).map((run) => run.id)
  await waitFor(async () => (await found('q=ORD-5521')).includes(runId) ? true : undefined, { what: 'the run indexed by its trigger data', timeoutMs: 20_000, intervalMs: 250 })
  t.same(await found('tag=partner:acme'), [runId], 'and by its tag')
  const run = await stack.client.getRun(token, runId)
  t.equal(run.status, 'FAILED')
  const word = (run.error ?? '').match(/[A-Za-z]{5,}/)?.[0]
  t.ok(word !== undefined, run.error ?? '')
  t.ok((await found(`q=${encodeURIComponent(`ORD-5521 ${word!}`)}`)).includes(runId), `its error's words too (${word!})`)
})
