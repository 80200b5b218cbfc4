/**
 * A run executes the version of its workflow it started with, to its end: edited while it
 * waits, the workflow's new definition is for the runs that start after.
 */
import t from 'tap'
import { startStack } from '@switchboard/testing/processes'

const stack = await startStack(t)
const token = await stack.adminToken()
const { client, call } = stack

t.test('a run WAITING at a wait node finishes SUCCESS on its version after PATCH removes that node; the next run uses the new one', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    nodes: [
      { id: 'greet', type: 'set', config: { values: { text: 'hello {{triggerData.name}}' } }, next: 'pause' },
      { id: 'pause', type: 'wait', config: { seconds: 2 }, next: 'after' },
      { id: 'after', type: 'set', config: { values: { said: '{{greet.text}}', version: 'first' } } }
    ]
  })
  const waitingId = await client.fire(token, workflowId, { name: 'Ana' })
  const waiting = await client.runReaching(token, waitingId, ['WAITING', 'SUCCESS', 'FAILED'])
  t.equal(waiting.status, 'WAITING')
  t.equal(waiting.workflowVersion, 1)

  // The wait node and the node after it go; a different graph takes their place.
  const patched = await call('PATCH', `/api/automation/workflows/${workflowId}`, {
    token,
    body: { nodes: [{ id: 'greet', type: 'set', config: { values: { text: 'bye {{triggerData.name}}' } }, next: 'renamed' }, { id: 'renamed', type: 'set', config: { values: { version: 'second' } } }] }
  })
  t.equal(patched.status, 200)
  t.equal(patched.body.version, 2)

  const done = await client.runReaching(token, waitingId)
  t.equal(done.status, 'SUCCESS', done.error ?? '')
  t.equal(done.workflowVersion, 1)
  t.same(done.result.after, { said: 'hello Ana', version: 'first' }, 'the rest of version 1 ran')
  t.notOk('renamed' in done.result)
  t.ok(done.logs.some((line) => line.message === 'Run resumed'))

  const nextId = await client.fire(token, workflowId, { name: 'Ben' })
  const next = await client.runReaching(token, nextId)
  t.equal(next.status, 'SUCCESS', next.error ?? '')
  t.equal(next.workflowVersion, 2)
  t.same(next.result.greet, { text: 'bye Ben' })
  t.same(next.result.renamed, { version: 'second' })
})

t.test('a restore while a run waits does not move it either: each run keeps the version it started with', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    nodes: [
      { id: 'pause', type: 'wait', config: { seconds: 2 }, next: 'end' },
      { id: 'end', type: 'set', config: { values: { from: 'v1' } } }
    ]
  })
  await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { nodes: [{ id: 'pause', type: 'wait', config: { seconds: 2 }, next: 'end' }, { id: 'end', type: 'set', config: { values: { from: 'v2' } } }] } })
  const onTwo = await client.fire(token, workflowId, {})
  t.equal((await client.runReaching(token, onTwo, ['WAITING'])).workflowVersion, 2)
  const restored = await call('POST', `/api/automation/workflows/${workflowId}/versions/1/restore`, { token })
  t.equal(restored.body.version, 3)
  const onThree = await client.fire(token, workflowId, {})

  const [second, third] = [await client.runReaching(token, onTwo), await client.runReaching(token, onThree)]
  t.same([second.status, second.workflowVersion, second.result.end], ['SUCCESS', 2, { from: 'v2' }])
  t.same([third.status, third.workflowVersion, third.result.end], ['SUCCESS', 3, { from: 'v1' }])
})
