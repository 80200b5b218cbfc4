import t from 'tap'
import { createId } from '@paralleldrive/cuid2'
import { freePort } from '@switchboard/testing/processes'
import { foldCounterDeltas } from '@switchboard/core/workflows'
import { buildTestApp } from './helper.ts'

const QUEUE_NAMES = ['workflow-runs', 'scheduled-tasks', 'agent-execution', 'assistant-main']

t.test('the four queues in spec order with their counters', async (t) => {
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

t.test('Redis unreachable: fire answers 503 (retry later), the webhook the spec\'s 500, and no run is left behind', async (t) => {
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
  t.equal(fired.statusCode, 503)
  t.equal(fired.json().code, 'SERVICE_UNAVAILABLE')
  t.ok(fired.headers['retry-after'], 'the caller is told when to retry')
  const received = await request({ method: 'POST', url: `/api/automation/webhook/${webhook}`, payload: { a: 1 }, headers: { 'idempotency-key': 'k1' } })
  t.equal(received.statusCode, 500)
  t.equal(received.json().message, 'Internal Server Error')

  t.equal((await sql`select count(*)::int as n from runs`)[0]?.n, 0, 'the sender\'s retry will not duplicate a run')
  t.equal((await sql`select count(*)::int as n from idempotency_keys`)[0]?.n, 0, 'the key is free for the retry')
  await foldCounterDeltas(app.database.db)
  t.same(await sql`select run_count as "runCount", last_run_at as "lastRunAt" from workflows where id in (${manual}, ${webhook})`, [{ runCount: 0, lastRunAt: null }, { runCount: 0, lastRunAt: null }])
})
