import t from 'tap'
import { buildTestApp } from './helper.ts'

// A pool of two connections: before, a bulk retry held one in a transaction while its starts
// needed another, so two of them at once froze every database route until Postgres ended them.
const { app, adminToken, client, request } = await buildTestApp(t, { DATABASE_POOL_MAX: '2' })

t.test('ten concurrent bulk retries on a pool of two: each completes, and /fire answers within its deadline meanwhile', async (t) => {
  const workflowId = await client.createWorkflow(adminToken, { name: 'replayed', nodes: [{ id: 'n', type: 'set', config: { values: {} } }] })
  await app.database.sql`
    insert into runs (id, workflow_id, user_id, queue, trigger_data, workflow_version, status, completed_at)
    select 'failed' || n, ${workflowId}, user_id, 'workflow-runs', jsonb_build_object('n', n), 1, 'FAILED', now()
    from workflows, generate_series(1, 20) as n where workflows.id = ${workflowId}
  `
  const window = { from: new Date(Date.now() - 60_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() }
  const began = Date.now()
  const retries = Array.from({ length: 10 }, async () => await request({ method: 'POST', url: `/api/automation/workflows/${workflowId}/runs/retry`, token: adminToken, payload: window }))
  const fire = request({ method: 'POST', url: `/api/automation/workflows/${workflowId}/fire`, token: adminToken, payload: {} })
  const fired = await fire
  const firedMs = Date.now() - began
  const answers = await Promise.all(retries)
  t.equal(fired.statusCode, 202, `/fire answered 202 after ${firedMs} ms`)
  t.ok(firedMs < app.config.timeouts.requestDeadlineMs, 'within the request deadline')
  t.same(answers.map((answer) => answer.statusCode), Array.from({ length: 10 }, () => 202), `every bulk retry answered (${Date.now() - began} ms in all)`)
  const replayed = answers.flatMap((answer) => (answer.json() as { runs: Array<{ retriedFrom: string }> }).runs.map((run) => run.retriedFrom))
  t.equal(replayed.length, 20, 'the 20 failed runs replayed')
  t.equal(new Set(replayed).size, 20, 'each once')
})
