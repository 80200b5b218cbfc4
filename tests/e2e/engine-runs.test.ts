import { createHmac } from 'node:crypto'
import t from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'

/** The local sink http_request nodes post to. */
const sink = await startDeliverySink(t, { answer: () => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ticket: 'T-42' }) }) })
const received = sink.deliveries

const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
const token = await stack.adminToken()
const { client } = stack

t.test('fire → SUCCESS: templates from triggerData and earlier nodes reach the sink; result and logs are recorded', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    nodes: [
      { id: 'vars', type: 'set', config: { values: { subject: 'Order {{triggerData.order.id}}' } }, next: 'post' },
      { id: 'post', type: 'http_request', config: { method: 'POST', url: `${sink.url}/tickets`, body: { subject: '{{vars.subject}}', qty: '{{triggerData.order.qty}}' } }, next: 'check' },
      { id: 'check', type: 'condition', config: { field: 'post.body.ticket', operator: 'startsWith', value: 'T-', then: 'done', else: 'odd' } },
      { id: 'done', type: 'set', config: { values: { ticket: '{{post.body.ticket}}' } } },
      { id: 'odd', type: 'set', config: { values: { ticket: 'none' } } }
    ]
  })
  const runId = await client.fire(token, workflowId, { order: { id: 'A7', qty: 3 } })
  const run = await client.runReaching(token, runId, ['SUCCESS', 'FAILED'])

  t.equal(run.status, 'SUCCESS', run.error ?? '')
  const request = received.find((item) => item.path === '/tickets')
  t.same(JSON.parse(request?.body ?? 'null'), { subject: 'Order A7', qty: 3 })
  t.same(run.result.triggerData, { order: { id: 'A7', qty: 3 } })
  t.same(run.result.done, { ticket: 'T-42' })
  t.notOk('odd' in run.result)
  t.type(run.durationMs, 'number')
  t.same(run.logs.at(0), { ...run.logs.at(0), nodeId: null, level: 'INFO', message: 'Run started' })
  t.match(run.logs.at(-1), { nodeId: null, level: 'INFO', message: /^Run succeeded in \d+ms$/ })
  t.ok(run.logs.some((line) => line.nodeId === 'post' && /^Node post completed in \d+ms$/.test(line.message)))

  const workflow = await stack.call('GET', `/api/automation/workflows/${workflowId}`, { token })
  t.match(workflow.body, { runCount: 1, successCount: 1, failureCount: 0 })
})

t.test('a wait puts the run in WAITING; the delayed job brings it to SUCCESS', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    nodes: [
      { id: 'pause', type: 'wait', config: { seconds: 2 } },
      { id: 'after', type: 'set', config: { values: { done: 'yes' } } }
    ]
  })
  const runId = await client.fire(token, workflowId, {})
  const waiting = await client.runReaching(token, runId, ['WAITING', 'SUCCESS', 'FAILED'])
  t.equal(waiting.status, 'WAITING')
  t.type(waiting.result.pause.until, 'string')
  t.notOk('after' in waiting.result)

  const done = await client.runReaching(token, runId, ['SUCCESS', 'FAILED'])
  t.equal(done.status, 'SUCCESS', done.error ?? '')
  t.type(done.result.pause.resumedAt, 'string')
  t.ok(Date.parse(done.result.pause.resumedAt) >= Date.parse(done.result.pause.until))
  t.same(done.result.after, { done: 'yes' })
  t.ok(done.logs.some((line) => line.message === 'Run resumed'))
})

t.test('an AGENT workflow runs on the agent-execution queue', async (t) => {
  const created = await stack.call('POST', '/api/automation/workflows', {
    token,
    body: { name: 'agent', triggerType: 'AGENT', isActive: true, nodes: [{ id: 'reply', type: 'set', config: { values: { said: '{{triggerData.prompt}}' } } }] }
  })
  t.equal(created.status, 201)
  const runId = await client.fire(token, created.body.id, { prompt: 'hello' })
  const run = await client.runReaching(token, runId, ['SUCCESS', 'FAILED'])
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.reply, { said: 'hello' })
  const queues = await stack.call('GET', '/api/automation/queues', { token })
  t.ok(queues.body.queues.find((queue: { name: string }) => queue.name === 'agent-execution').completed >= 1)
})

t.test('a failing node ends the run FAILED with the error', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    nodes: [
      { id: 'call', type: 'http_request', config: { url: 'http://127.0.0.1:1/unreachable', timeoutMs: 2000 } }
    ]
  })
  const runId = await client.fire(token, workflowId, {})
  const run = await client.runReaching(token, runId, ['SUCCESS', 'FAILED'])
  t.equal(run.status, 'FAILED')
  t.match(run.error, /^Request failed: .*ECONNREFUSED/)
  t.match(run.logs.at(-1), { level: 'ERROR', message: /^Run failed: / })
})

t.test('an inbound webhook verified with verify_signature: the valid signature passes, a tampered body fails', async (t) => {
  const secret = 'shared-secret'
  const created = await stack.call('POST', '/api/automation/workflows', {
    token,
    body: {
      name: 'signed hook',
      triggerType: 'WEBHOOK',
      isActive: true,
      nodes: [
        { id: 'verify', type: 'verify_signature', config: { secret, header: 'x-hub-signature-256', prefix: 'sha256=' }, next: 'route' },
        { id: 'route', type: 'condition', config: { field: 'triggerData.body.event', cases: { 'invoice.paid': 'paid' }, default: 'other' } },
        { id: 'paid', type: 'set', config: { values: { amount: '{{triggerData.body.amount}}' } } },
        { id: 'other', type: 'set', config: { values: { ignored: true } } }
      ]
    }
  })
  t.equal(created.status, 201)
  const body = { event: 'invoice.paid', amount: 120 }
  const signature = `sha256=${createHmac('sha256', secret).update(JSON.stringify(body)).digest('hex')}`

  const valid = await stack.call('POST', `/api/automation/webhook/${created.body.id}`, { body, headers: { 'x-hub-signature-256': signature } })
  t.equal(valid.body.status, 'received')
  const passed = await client.runReaching(token, valid.body.runId, ['SUCCESS', 'FAILED'])
  t.equal(passed.status, 'SUCCESS', passed.error ?? '')
  t.same(passed.result.verify, { valid: true })
  t.same(passed.result.paid, { amount: 120 })

  const tampered = await stack.call('POST', `/api/automation/webhook/${created.body.id}`, { body: { ...body, amount: 999 }, headers: { 'x-hub-signature-256': signature } })
  const failed = await client.runReaching(token, tampered.body.runId, ['SUCCESS', 'FAILED'])
  t.equal(failed.status, 'FAILED')
  t.equal(failed.error, 'Invalid signature')
  t.notOk('paid' in failed.result)
})
