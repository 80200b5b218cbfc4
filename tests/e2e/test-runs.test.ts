import t from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'

/** A loopback service whose answer the test sets; it echoes the request's headers and counts calls per path. */
let status = 200
const sink = await startDeliverySink(t, { answer: ({ path, headers }) => ({ status, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ path, headers }) }) })
const callsTo = (path: string): number => sink.deliveries.filter((call) => call.path === path).length

const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
const token = await stack.adminToken()
const { client, call } = stack

const chain = [
  { id: 'a', type: 'set', config: { values: { order: '{{triggerData.order}}' } }, next: 'b' },
  { id: 'b', type: 'set', config: { values: { step: 'b' } }, next: 'c' },
  { id: 'c', type: 'set', config: { values: { step: 'c' } } }
]

t.test('positions are kept, and a change of positions only makes no new version', async (t) => {
  const id = await client.createWorkflow(token, { nodes: chain })
  const placed = chain.map((node, i) => ({ ...node, position: { x: i * 200, y: 40.5 } }))
  const moved = await call('PATCH', `/api/automation/workflows/${id}`, { token, body: { nodes: placed } })
  t.equal(moved.status, 200)
  t.equal(moved.body.version, 1, 'positions only: the same version')
  t.same(moved.body.nodes, placed, 'stored as drawn')
  const versions = await call('GET', `/api/automation/workflows/${id}/versions`, { token })
  t.equal(versions.body.length, 1)
  const changed = await call('PATCH', `/api/automation/workflows/${id}`, { token, body: { nodes: placed.map((node) => node.id === 'b' ? { ...node, config: { values: { step: 'B' } } } : node) } })
  t.equal(changed.body.version, 2, 'a change of config: a new version')
  const bad = await call('PATCH', `/api/automation/workflows/${id}`, { token, body: { nodes: [{ ...chain[2], position: { x: 'left', y: 0 } }] } })
  t.equal(bad.status, 400)
  t.match(bad.body.message, /position\.x/)
})

t.test('a test run uses the pinned data, runs an inactive workflow, is marked and filtered; real triggers never use the pin', async (t) => {
  const id = await client.createWorkflow(token, { nodes: chain, isActive: false })
  const pinned = await call('PATCH', `/api/automation/workflows/${id}`, { token, body: { pinnedData: { order: 7 } } })
  t.equal(pinned.status, 200)
  t.same(pinned.body.pinnedData, { order: 7 })
  t.equal(pinned.body.version, 1, 'pinning data makes no version')

  t.equal((await call('POST', `/api/automation/workflows/${id}/fire`, { token, body: {} })).status, 400, 'fire: inactive')
  const tested = await call('POST', `/api/automation/workflows/${id}/test`, { token })
  t.equal(tested.status, 202)
  const run = await client.runReaching(token, tested.body.runId)
  t.equal(run.status, 'SUCCESS')
  t.same(run.triggerData, { order: 7 }, 'the pinned data')
  t.equal((run as unknown as { test: boolean }).test, true)

  const given = await call('POST', `/api/automation/workflows/${id}/test`, { token, body: { triggerData: { order: 8 } } })
  t.same((await client.runReaching(token, given.body.runId)).triggerData, { order: 8 }, 'given data wins over the pin')

  await call('PATCH', `/api/automation/workflows/${id}`, { token, body: { isActive: true } })
  const fired = await client.fire(token, id, { order: 1 })
  const real = await client.runReaching(token, fired)
  t.same(real.triggerData, { order: 1 }, 'a fire uses its own body')
  t.equal((real as unknown as { test: boolean }).test, false)

  const tests = await call('GET', `/api/automation/runs?workflowId=${id}&test=true`, { token })
  t.same(tests.body.map((r: { id: string }) => r.id).sort(), [tested.body.runId, given.body.runId].sort())
  const others = await call('GET', `/api/automation/runs?workflowId=${id}&test=false`, { token })
  t.same(others.body.map((r: { id: string }) => r.id), [fired])
  t.equal((await call('GET', `/api/automation/runs?workflowId=${id}`, { token })).body.length, 3, 'both without the filter')
})

t.test('"run to here" ends the test run after the node', async (t) => {
  const id = await client.createWorkflow(token, { nodes: chain })
  const tested = await call('POST', `/api/automation/workflows/${id}/test`, { token, body: { triggerData: { order: 3 }, untilNodeId: 'b' } })
  const run = await client.runReaching(token, tested.body.runId)
  t.equal(run.status, 'SUCCESS')
  t.same(Object.keys(run.result).sort(), ['a', 'b', 'triggerData'], 'c never ran')
  const unknown = await call('POST', `/api/automation/workflows/${id}/test`, { token, body: { untilNodeId: 'zz' } })
  t.equal(unknown.status, 400)
  t.equal(unknown.body.message, 'untilNodeId names no node of the workflow: zz')
  const member = await client.newUser(token)
  t.equal((await call('POST', `/api/automation/workflows/${id}/test`, { token: member.token })).status, 404, 'another user\'s workflow')
})

t.test('retry from a node reuses the outputs before it and runs the rest once', async (t) => {
  const id = await client.createWorkflow(token, {
    nodes: [
      { id: 'prep', type: 'set', config: { values: { order: '{{triggerData.order}}' } }, next: 'call' },
      { id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/call`, body: { order: '{{prep.order}}' } }, next: 'after' },
      { id: 'after', type: 'set', config: { values: { done: true } } }
    ]
  })
  status = 500
  const failed = await client.runReaching(token, await client.fire(token, id, { order: 42 }))
  t.equal(failed.status, 'FAILED')
  const callsBefore = callsTo('/call')
  status = 200
  const retried = await call('POST', `/api/automation/runs/${failed.id}/retry`, { token, body: { fromNodeId: 'call' } })
  t.equal(retried.status, 202)
  t.equal(retried.body.retriedFrom, failed.id)
  const run = await client.runReaching(token, retried.body.runId)
  t.equal(run.status, 'SUCCESS')
  t.same(run.result.prep, { order: 42 }, 'prep\'s output, from the first run')
  t.same(run.result.after, { done: true })
  t.notOk(run.logs.some((line) => line.message.startsWith('Node prep')), 'prep did not run again')
  t.equal(callsTo('/call') - callsBefore, 1, 'the call ran once')

  const unknown = await call('POST', `/api/automation/runs/${failed.id}/retry`, { token, body: { fromNodeId: 'nope' } })
  t.equal(unknown.status, 400)
  t.equal(unknown.body.message, 'fromNodeId names no node of the workflow: nope')
})

t.test('retry from a node is refused when an output before it holds a masked credential value', async (t) => {
  const credential = await call('POST', '/api/automation/credentials', { token, body: { name: 'partner-token', type: 'bearer', data: { token: 'partner-secret-token-1' } } })
  t.equal(credential.status, 201)
  const id = await client.createWorkflow(token, {
    nodes: [
      { id: 'auth', type: 'http_request', config: { url: `${sink.url}/echo`, credential: 'partner-token' }, next: 'broken' },
      { id: 'broken', type: 'http_request', config: { url: `${sink.url}/broken` } }
    ]
  })
  status = 200
  const first = await client.fire(token, id, {})
  const run = await client.runReaching(token, first)
  t.equal(run.status, 'SUCCESS')
  t.match(JSON.stringify(run.result.auth), '[credential]', 'the echoed token is masked')
  const refused = await call('POST', `/api/automation/runs/${first}/retry`, { token, body: { fromNodeId: 'broken' } })
  t.equal(refused.status, 400)
  t.equal(refused.body.message, 'Cannot retry from broken: the output of auth holds a masked credential value; retry the whole run')
  const whole = await call('POST', `/api/automation/runs/${first}/retry`, { token, body: {} })
  t.equal(whole.status, 202, 'the whole run may be retried')
})
