import t from 'tap'
import { createId } from '@paralleldrive/cuid2'
import { freePort } from '@switchboard/testing/processes'
import { foldCounterDeltas } from '@switchboard/core/workflows'
import { buildTestApp } from './helper.ts'

const QUEUE_NAMES = ['workflow-runs', 'scheduled-tasks', 'agent-execution', 'assistant-main', 'chat-broadcasts', 'event-deliveries', 'knowledge-index']

t.test('workflow-runs, scheduled-tasks, agent-execution and assistant-main in that order, then chat-broadcasts and event-deliveries, with their counters', async (t) => {
  const testApp = await buildTestApp(t)
  const { request, adminToken, newMember } = testApp
  const workflowId = await testApp.client.createWorkflow(adminToken, { triggerType: 'MANUAL' })
  for (let i = 0; i < 2; i++) await request({ method: 'POST', url: `/api/automation/workflows/${workflowId}/fire`, token: adminToken, payload: {} })

  const member = await newMember()
  const res = await request({ method: 'GET', url: '/api/automation/queues', token: member.token })
  t.equal(res.statusCode, 200)
  const { queues } = res.json()
  t.same(queues.map((queue: { name: string }) => queue.name), QUEUE_NAMES)
  for (const queue of queues) {
    t.same(Object.keys(queue).sort(), ['active', 'completed', 'delayed', 'failed', 'name', 'waiting'], queue.name)
  }
  t.match(queues[0], { name: 'workflow-runs', waiting: 2, active: 0, completed: 0, failed: 0, delayed: 0 })
  t.match(queues[2], { name: 'agent-execution', waiting: 0 })
})

t.test('Redis unreachable: every queue reports an error and zero counters, within the budget', async (t) => {
  const closedPort = await freePort()
  const { request, adminToken } = await buildTestApp(t, { REDIS_URL: `redis://127.0.0.1:${closedPort}` })
  const started = Date.now()
  const res = await request({ method: 'GET', url: '/api/automation/queues', token: adminToken })
  const elapsed = Date.now() - started
  t.equal(res.statusCode, 200)
  t.ok(elapsed < 2500, `answered in ${elapsed} ms`)
  const { queues } = res.json()
  t.same(queues.map((queue: { name: string }) => queue.name), QUEUE_NAMES)
  for (const queue of queues) {
    t.match(queue, { error: String, waiting: 0, active: 0, completed: 0, failed: 0, delayed: 0 }, queue.name)
  }
})

t.test('Redis unreachable: fire and the webhook are accepted, their runs committed PENDING for the reconciler to queue', async (t) => {
  const closedPort = await freePort()
  const testApp = await buildTestApp(t, { REDIS_URL: `redis://127.0.0.1:${closedPort}` })
  const { app, request, adminToken } = testApp
  const sql = app.database.sql
  // Inserted directly: saving a workflow through the API talks to the scheduler queue too.
  const insertWorkflow = async (triggerType: string): Promise<string> => {
    const id = createId()
    await sql`insert into workflows (id, user_id, name, trigger_type, is_active)
      select ${id}, id, 'offline', ${triggerType}, true from users where role = 'admin'`
    return id
  }
  const manual = await insertWorkflow('MANUAL')
  const webhook = await insertWorkflow('WEBHOOK')

  const fired = await request({ method: 'POST', url: `/api/automation/workflows/${manual}/fire`, token: adminToken, payload: {} })
  t.equal(fired.statusCode, 202, 'a run is accepted once committed: Redis is not needed')
  const received = await request({ method: 'POST', url: `/api/automation/webhook/${webhook}`, payload: { a: 1 }, headers: { 'idempotency-key': 'k1' } })
  t.equal(received.statusCode, 200)
  t.equal(received.json().status, 'received')
  const again = await request({ method: 'POST', url: `/api/automation/webhook/${webhook}`, payload: { a: 1 }, headers: { 'idempotency-key': 'k1' } })
  t.same(again.json(), received.json(), 'the sender\'s retry with its key gets the same run')

  t.same((await sql`select id, status from runs order by created_at`).map((row) => ({ ...row })), [
    { id: fired.json().runId, status: 'PENDING' },
    { id: received.json().runId, status: 'PENDING' }
  ], 'both runs stored, waiting for their jobs')
  await foldCounterDeltas(app.database.db)
  t.same(await sql`select run_count as "runCount" from workflows where id in (${manual}, ${webhook})`, [{ runCount: 1 }, { runCount: 1 }])
})
