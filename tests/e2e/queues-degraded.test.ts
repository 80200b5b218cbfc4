import t from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { freePort, startStack } from '@switchboard/testing/processes'

// The api alone, with Redis on a port where nothing listens (no worker could start).
const stack = await startStack(t, { workers: 0, env: { REDIS_URL: `redis://127.0.0.1:${await freePort()}` } })
const token = await stack.adminToken()

t.test('queues: Redis unreachable → every queue has error and zero counters, within 2 seconds', async (t) => {
  const started = Date.now()
  const res = await stack.call('GET', '/api/automation/queues', { token })
  const elapsed = Date.now() - started
  t.equal(res.status, 200)
  t.ok(elapsed < 2000, `answered in ${elapsed} ms`)
  t.same(res.body.queues.map((queue: { name: string }) => queue.name), ['workflow-runs', 'scheduled-tasks', 'agent-execution', 'assistant-main', 'chat-broadcasts', 'event-deliveries', 'knowledge-index'])
  for (const queue of res.body.queues) {
    t.match(queue, { error: String, waiting: 0, active: 0, completed: 0, failed: 0, delayed: 0 }, queue.name)
  }
})

t.test('inbound webhook: Redis unreachable → received, its run committed PENDING for the reconciler to queue', async (t) => {
  // Inserted directly: saving a workflow through the API needs the scheduler queue.
  const database = createDatabase(stack.env.DATABASE_URL!, { max: 1 })
  t.teardown(database.close)
  const workflowId = 'cloffline0webhook0000001'
  await database.sql`insert into workflows (id, user_id, name, trigger_type, is_active)
    select ${workflowId}, id, 'offline webhook', 'WEBHOOK', true from users where role = 'admin'`

  const res = await stack.call('POST', `/api/automation/webhook/${workflowId}`, { body: { event: 'x' } })
  t.equal(res.status, 200)
  t.equal(res.body.status, 'received', 'a run is accepted once committed: Redis is not needed')
  t.same(await database.sql`select id, status from runs where workflow_id = ${workflowId}`, [{ id: res.body.runId, status: 'PENDING' }])

  const unknown = await stack.call('POST', '/api/automation/webhook/clunknown0workflow000001', { body: {} })
  t.same(unknown.body, { status: 'ignored' }, 'an unknown workflow is still ignored')
})
