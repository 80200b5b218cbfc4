import t from 'tap'
import { createId } from '@paralleldrive/cuid2'
import { freePort } from '@switchboard/testing/processes'
import { buildTestApp } from '../../apps/api/test/helper.ts'

/** Far below tap's timeout: a save that waited on Redis would never answer. */
const PROMPT_MS = 10_000

const cron = { triggerType: 'CRON', triggerConfig: { cronExpression: '0 9 * * *' }, isActive: true }

t.test('Redis unreachable: workflows without a schedule save, scheduled ones answer 503 and change nothing', async (t) => {
  const closedPort = await freePort()
  const { app, request, adminToken: token } = await buildTestApp(t, { REDIS_URL: `redis://127.0.0.1:${closedPort}` })
  const sql = app.database.sql
  const timed = async (options: Parameters<typeof request>[0]) => {
    const started = Date.now()
    const res = await request({ token, ...options })
    t.ok(Date.now() - started < PROMPT_MS, `${options.method} ${options.url} answered promptly`)
    return res
  }

  const manual = await timed({ method: 'POST', url: '/api/automation/workflows', payload: { name: 'manual', triggerType: 'MANUAL', isActive: true } })
  t.equal(manual.statusCode, 201, manual.body)
  const draft = await timed({ method: 'POST', url: '/api/automation/workflows', payload: { name: 'inactive cron', ...cron, isActive: false } })
  t.equal(draft.statusCode, 201, draft.body)
  const renamed = await timed({ method: 'PATCH', url: `/api/automation/workflows/${manual.json().id}`, payload: { name: 'renamed' } })
  t.equal(renamed.statusCode, 200)

  const scheduled = await timed({ method: 'POST', url: '/api/automation/workflows', payload: { name: 'scheduled', ...cron } })
  t.equal(scheduled.statusCode, 503)
  t.match(scheduled.json(), { statusCode: 503, code: 'SCHEDULER_UNAVAILABLE', message: 'Scheduler unavailable, retry later' })
  t.equal((await sql`select count(*)::int as n from workflows where name = 'scheduled'`)[0]?.n, 0, 'nothing stored')

  const activated = await timed({ method: 'PATCH', url: `/api/automation/workflows/${draft.json().id}`, payload: { isActive: true } })
  t.equal(activated.statusCode, 503)
  t.same(await sql`select is_active as "isActive" from workflows where id = ${draft.json().id}`, [{ isActive: false }], 'not activated')
  t.equal((await sql`select count(*)::int as n from workflow_schedules`)[0]?.n, 0)

  const deleted = await timed({ method: 'DELETE', url: `/api/automation/workflows/${manual.json().id}` })
  t.equal(deleted.statusCode, 204)
})

t.test('a workflow that had a schedule keeps it when its scheduler cannot be removed', async (t) => {
  const closedPort = await freePort()
  const { app, request, adminToken: token } = await buildTestApp(t, { REDIS_URL: `redis://127.0.0.1:${closedPort}` })
  const sql = app.database.sql
  // Stored directly, as if scheduled while Redis was up.
  const id = createId()
  await sql`insert into workflows (id, user_id, name, trigger_type, trigger_config, is_active)
    select ${id}, id, 'cron', 'CRON', ${JSON.stringify(cron.triggerConfig)}::jsonb, true from users where role = 'admin'`
  await sql`insert into workflow_schedules (id, workflow_id, cron_expression, timezone, next_run_at)
    values (${createId()}, ${id}, '0 9 * * *', 'UTC', now() + interval '1 day')`

  const deactivated = await request({ method: 'PATCH', url: `/api/automation/workflows/${id}`, token, payload: { isActive: false } })
  t.equal(deactivated.statusCode, 503)
  const deleted = await request({ method: 'DELETE', url: `/api/automation/workflows/${id}`, token })
  t.equal(deleted.statusCode, 503)
  t.equal((await sql`select count(*)::int as n from workflow_schedules where workflow_id = ${id}`)[0]?.n, 1, 'row and workflow kept')
})
