import t from 'tap'
import type { InjectOptions } from 'fastify'
import { foldCounterDeltas } from '@switchboard/core/workflows'
import { buildTestApp, type TestApp } from './helper.ts'

const chain = (length: number): Array<{ id: string, type: string, next?: string }> =>
  Array.from({ length }, (_, i) => ({ id: `n${i}`, type: 'set', ...(i < length - 1 && { next: `n${i + 1}` }) }))

async function refusal (app: TestApp, method: 'POST' | 'PATCH', url: string, token: string, payload: InjectOptions['payload']): Promise<unknown> {
  const res = await app.request({ method, url, token, payload })
  return { statusCode: res.statusCode, body: res.json() }
}

const badRequest = (code: string, message: string): unknown => ({ statusCode: 400, body: { statusCode: 400, code, error: message, message } })

t.test('nodes per workflow: WORKFLOW_MAX_NODES (default 2,000)', async (t) => {
  const app = await buildTestApp(t)
  const { request, adminToken: token } = app
  const tooMany = badRequest('TOO_MANY_NODES', 'Workflow has too many nodes (max 2000)')
  t.same(await refusal(app, 'POST', '/api/automation/workflows', token, { name: 'big', triggerType: 'MANUAL', nodes: chain(2001) }), tooMany)

  const atLimit = await request({ method: 'POST', url: '/api/automation/workflows', token, payload: { name: 'at the limit', triggerType: 'MANUAL', nodes: chain(2000) } })
  t.equal(atLimit.statusCode, 201, '2,000 nodes are accepted')
  t.same(await refusal(app, 'PATCH', `/api/automation/workflows/${atLimit.json().id}`, token, { nodes: chain(2001) }), tooMany, 'PATCH is bounded too')

  const configured = await buildTestApp(t, { WORKFLOW_MAX_NODES: '3' })
  t.same(await refusal(configured, 'POST', '/api/automation/workflows', configured.adminToken, { name: 'small', triggerType: 'MANUAL', nodes: chain(4) }),
    badRequest('TOO_MANY_NODES', 'Workflow has too many nodes (max 3)'))
})

t.test('cron frequency: CRON_MIN_INTERVAL_SECONDS (default 60)', async (t) => {
  const app = await buildTestApp(t)
  const { request, adminToken: token } = app
  const cron = (cronExpression: string): InjectOptions['payload'] => ({ name: 'cron', triggerType: 'CRON', isActive: true, triggerConfig: { cronExpression } })
  const tooOften = badRequest('CRON_TOO_FREQUENT', 'Cron expression fires too often (minimum interval 60 seconds)')
  for (const expression of ['* * * * * *', '*/30 * * * * *', '0,45 * * * * *']) {
    t.same(await refusal(app, 'POST', '/api/automation/workflows', token, cron(expression)), tooOften, expression)
  }
  for (const expression of ['* * * * *', '30 * * * * *', '0 9 * * 1-5']) {
    t.equal((await request({ method: 'POST', url: '/api/automation/workflows', token, payload: cron(expression) })).statusCode, 201, `${expression} is accepted`)
  }
  const draft = await request({ method: 'POST', url: '/api/automation/workflows', token, payload: { name: 'draft', triggerType: 'CRON' } })
  t.same(await refusal(app, 'PATCH', `/api/automation/workflows/${draft.json().id}`, token, { triggerConfig: { cronExpression: '*/2 * * * * *' } }), tooOften, 'PATCH is bounded too')
  t.same((await request({ method: 'GET', url: `/api/automation/workflows/${draft.json().id}`, token })).json().schedules, [], 'nothing was scheduled')

  const configured = await buildTestApp(t, { CRON_MIN_INTERVAL_SECONDS: '10' })
  t.equal((await configured.request({ method: 'POST', url: '/api/automation/workflows', token: configured.adminToken, payload: cron('*/10 * * * * *') })).statusCode, 201)
  t.same(await refusal(configured, 'POST', '/api/automation/workflows', configured.adminToken, cron('*/5 * * * * *')),
    badRequest('CRON_TOO_FREQUENT', 'Cron expression fires too often (minimum interval 10 seconds)'))
})

t.test('event fan-out beyond EVENT_FANOUT_MAX is refused and starts nothing', async (t) => {
  const app = await buildTestApp(t, { EVENT_FANOUT_MAX: '2' })
  const { request, adminToken: token } = app
  for (let i = 0; i < 3; i++) await app.client.createWorkflow(token, { triggerType: 'EVENT', triggerConfig: { eventName: 'order.created' } })
  const emit = async (): Promise<{ statusCode: number, body: unknown }> => {
    const res = await request({ method: 'POST', url: '/api/automation/events', token, payload: { name: 'order.created', payload: {} } })
    return { statusCode: res.statusCode, body: res.json() }
  }
  t.same(await emit(), badRequest('TOO_MANY_LISTENERS', 'Too many workflows listen to this event (max 2)'))
  t.equal((await app.app.database.sql`select count(*)::int as n from runs`)[0]?.n, 0)

  await app.app.database.sql`update workflows set is_active = false where id = (select id from workflows order by created_at limit 1)`
  const twoListeners = await emit()
  t.equal(twoListeners.statusCode, 202, 'at the bound, every listener starts')
  t.equal((twoListeners.body as { runIds: string[] }).runIds.length, 2)
})

t.test('an event with 11,000 listening workflows starts them all (more than one statement can bind)', async (t) => {
  const app = await buildTestApp(t)
  const { request, adminToken: token } = app
  const { sql } = app.app.database
  const listeners = 11_000
  // Inserted directly: 11,000 creates through the API would take minutes.
  await sql`
    insert into workflows (id, user_id, name, trigger_type, trigger_config, is_active, created_at)
    select 'w' || substr(md5(g::text), 1, 24), users.id, 'listener ' || g, 'EVENT', '{"eventName": "bulk.import"}'::jsonb, true,
      now() - interval '1 hour' + g * interval '1 millisecond'
    from generate_series(1, ${listeners}) as g, users where users.role = 'admin'`
  const payload = { batch: 7, note: 'x'.repeat(100) }

  const started = Date.now()
  const cpu = process.cpuUsage()
  const res = await request({ method: 'POST', url: '/api/automation/events', token, payload: { name: 'bulk.import', payload } })
  const elapsedMs = Date.now() - started
  const { user, system } = process.cpuUsage(cpu)
  t.comment(`11,000 runs started in ${elapsedMs} ms, ${Math.round((user + system) / 1000)} ms of this process's CPU`)
  t.equal(res.statusCode, 202, res.statusCode === 202 ? 'accepted' : res.body)
  const { runIds } = res.json() as { runIds: string[] }
  t.equal(runIds.length, listeners, 'every run id is returned')
  t.equal(new Set(runIds).size, listeners, 'all distinct')

  const [stored] = await sql`
    select count(*)::int as runs, count(distinct workflow_id)::int as workflows,
      bool_and(status = 'PENDING') as pending, bool_and(trigger_data = ${JSON.stringify(payload)}::jsonb) as "samePayload"
    from runs where id = any(${runIds})`
  t.same(stored, { runs: listeners, workflows: listeners, pending: true, samePayload: true }, 'each listener has one stored run with the payload')
  // 11,000 deltas: more than one fold statement takes.
  while (await foldCounterDeltas(app.app.database.db) > 0);
  const [counters] = await sql`select min(run_count)::int as min, max(run_count)::int as max, count(*) filter (where last_run_at is null)::int as "neverRun" from workflows`
  t.same(counters, { min: 1, max: 1, neverRun: 0 }, 'every workflow counted its run')
  const { waiting } = await app.app.queues['workflow-runs'].getJobCounts('waiting')
  t.equal(waiting, listeners, 'every run has its job')
  // The oldest workflow's run comes first.
  const [first] = await sql`select workflow_id as "workflowId" from runs where id = ${runIds[0]!}`
  t.equal(first?.workflowId, `w${(await sql`select substr(md5('1'), 1, 24) as id`)[0]?.id}`)
})
