import postgres from 'postgres'
import t from 'tap'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/**
 * Error workflows (README, Error workflows) through real api and worker processes: a run that
 * fails finally starts its workflow's error workflow once, with the failed run as its triggerData,
 * however often its workflow.run.failed event is dispatched; runs of an error workflow, child runs
 * and test runs start none, and a workflow without one starts nothing.
 */

// The reconciler dispatches an event left undispatched for half a second, every half second.
const stack = await startStack(t, { env: { RECONCILER_INTERVAL_MS: '500', RECONCILER_GRACE_MS: '500' } })
const token = await stack.adminToken()
const { client, call } = stack
const sql = postgres(stack.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
t.teardown(async () => { await sql.end() })

/** A node that fails at once: the http_request guard refuses a cloud metadata address without sending anything. */
const failing = { id: 'call', type: 'http_request', config: { url: 'http://169.254.169.254/' } }

async function setErrorWorkflow (workflowId: string, errorWorkflowId: string): Promise<void> {
  const res = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { errorWorkflowId } })
  if (res.status !== 200) throw new Error(`PATCH errorWorkflowId: ${res.status} ${JSON.stringify(res.body)}`)
}

/** Once the workflow.run.failed event of `runId` was dispatched: the error runs started for it. */
async function errorRunsOf (runId: string): Promise<Array<{ id: string, workflowId: string }>> {
  await waitFor(async () => {
    const [event] = await sql`select dispatched_at from events where name = 'workflow.run.failed' and payload->>'runId' = ${runId}`
    return event?.dispatched_at ?? undefined
  }, { timeoutMs: 15_000, what: `the dispatch of ${runId}'s failure` })
  return await sql<Array<{ id: string, workflowId: string }>>`select id, workflow_id as "workflowId" from runs where error_of_run_id = ${runId}`
}

// Inactive: an error workflow is called, not triggered.
const errorWorkflow = await client.createWorkflow(token, {
  name: 'tell me',
  triggerType: 'MANUAL',
  isActive: false,
  nodes: [{ id: 'message', type: 'set', config: { values: { text: 'Workflow {{triggerData.run.workflowName}} failed: {{triggerData.run.error}}' } } }]
})

t.test('a failed run starts its error workflow once, with the documented triggerData, even when its event is dispatched again', async (t) => {
  const orders = await client.createWorkflow(token, { name: 'orders', nodes: [{ id: 'first', type: 'set', config: { values: { a: '1' } }, next: 'call' }, failing] })
  await setErrorWorkflow(orders, errorWorkflow)
  const failed = await client.runReaching(token, await client.fire(token, orders, { order: 7 }))
  t.equal(failed.status, 'FAILED')
  const [started] = await errorRunsOf(failed.id)
  t.equal(started?.workflowId, errorWorkflow, 'the error workflow started')

  const errorRun = await client.runReaching(token, started!.id)
  t.equal(errorRun.status, 'SUCCESS', errorRun.error ?? '')
  const { startedAt } = failed as typeof failed & { startedAt: string }
  t.same(errorRun.triggerData, {
    run: { id: failed.id, workflowId: orders, workflowName: 'orders', error: failed.error, failedNodeId: 'call', triggerData: { order: 7 }, startedAt }
  })
  t.match(errorRun, { errorOfRunId: failed.id })
  t.equal(errorRun.result.message.text, `Workflow orders failed: ${failed.error}`, 'its nodes read the failed run from triggerData.run')

  // The same event dispatched again (as the reconciler does for one whose dispatch it finds undone) starts nothing more.
  await sql`update events set dispatched_at = null, created_at = now() - interval '1 minute' where payload->>'runId' = ${failed.id}`
  t.equal((await errorRunsOf(failed.id)).length, 1, 'one error run after the second dispatch')
  t.equal((await client.runsOf(token, errorWorkflow)).length, 1)
})

t.test('no loop: an error workflow that fails, naming the first as its own error workflow, starts nothing further', async (t) => {
  const first = await client.createWorkflow(token, { name: 'first', nodes: [failing] })
  const second = await client.createWorkflow(token, { name: 'second', isActive: false, nodes: [failing] })
  await setErrorWorkflow(first, second)
  await setErrorWorkflow(second, first)
  const failed = await client.runReaching(token, await client.fire(token, first))
  const [errorRun] = await errorRunsOf(failed.id)
  t.equal(errorRun?.workflowId, second)
  t.equal((await client.runReaching(token, errorRun!.id)).status, 'FAILED', 'the error workflow failed too')
  t.same(await errorRunsOf(errorRun!.id), [], 'its failure started no error workflow')
  t.equal((await client.runsOf(token, first)).length, 1, 'the first workflow ran once')
})

t.test('a workflow without one, a test run and a child run start no error workflow; the child\'s parent does', async (t) => {
  const plain = await client.createWorkflow(token, { name: 'plain', nodes: [failing] })
  const plainRun = await client.runReaching(token, await client.fire(token, plain))
  t.same(await errorRunsOf(plainRun.id), [], 'no errorWorkflowId: nothing')

  const child = await client.createWorkflow(token, { name: 'child', isActive: false, nodes: [failing] })
  await setErrorWorkflow(child, errorWorkflow)
  const tested = await call('POST', `/api/automation/workflows/${child}/test`, { token, body: {} })
  const testRun = await client.runReaching(token, tested.body.runId)
  t.equal(testRun.status, 'FAILED')
  t.same(await errorRunsOf(testRun.id), [], 'a test run: nothing')

  const parent = await client.createWorkflow(token, { name: 'parent', nodes: [{ id: 'calls', type: 'run_workflow', config: { workflowId: child } }] })
  await setErrorWorkflow(parent, errorWorkflow)
  const parentRun = await client.runReaching(token, await client.fire(token, parent), undefined, { timeoutMs: 30_000 })
  t.equal(parentRun.status, 'FAILED')
  const [childRun] = await sql<Array<{ id: string }>>`select id from runs where parent_run_id = ${parentRun.id}`
  t.same(await errorRunsOf(childRun!.id), [], 'the child run: nothing')
  t.equal((await errorRunsOf(parentRun.id)).length, 1, 'its parent, failed with it, started the error workflow')
})
