import t from 'tap'
import { buildTestApp } from './helper.ts'

const { app, request, adminToken: token } = await buildTestApp(t, { CRON_MIN_INTERVAL_SECONDS: '1' })
const scheduler = async (workflowId: string) => app.queues['scheduled-tasks'].getJobScheduler(workflowId)

const cronWorkflow = (triggerConfig: Record<string, unknown>, isActive = true) => ({
  name: 'nightly report',
  triggerType: 'CRON',
  triggerConfig,
  isActive,
  nodes: [{ id: 'n1', type: 'set', config: { values: { done: 'yes' } } }]
})

async function create (body: Record<string, unknown>) {
  const res = await request({ method: 'POST', url: '/api/automation/workflows', token, payload: body })
  t.equal(res.statusCode, 201, res.body)
  return res.json()
}

async function patch (id: string, payload: Record<string, unknown>) {
  const res = await request({ method: 'PATCH', url: `/api/automation/workflows/${id}`, token, payload })
  t.equal(res.statusCode, 200, res.body)
  return res.json()
}

t.test('an active CRON workflow gets one schedule row and one job scheduler', async (t) => {
  const before = Date.now()
  const workflow = await create(cronWorkflow({ cronExpression: '0 9 * * *', timezone: 'Europe/Berlin' }))
  t.equal(workflow.schedules.length, 1)
  const [schedule] = workflow.schedules
  t.match(schedule, { workflowId: workflow.id, cronExpression: '0 9 * * *', timezone: 'Europe/Berlin', lastRunAt: null })
  t.ok(Date.parse(schedule.nextRunAt) > before)
  t.match(await scheduler(workflow.id), { key: workflow.id, name: 'tick', pattern: '0 9 * * *', tz: 'Europe/Berlin', next: Date.parse(schedule.nextRunAt) })

  const fetched = await request({ method: 'GET', url: `/api/automation/workflows/${workflow.id}`, token })
  t.same(fetched.json().schedules, workflow.schedules)
})

t.test('the timezone defaults to UTC', async (t) => {
  const workflow = await create(cronWorkflow({ cronExpression: '*/5 * * * *' }))
  t.equal(workflow.schedules[0].timezone, 'UTC')
  t.match(await scheduler(workflow.id), { pattern: '*/5 * * * *', tz: 'UTC' })
})

t.test('inactive workflows, drafts and other triggers have no schedule', async (t) => {
  for (const body of [
    cronWorkflow({ cronExpression: '0 9 * * *' }, false),
    cronWorkflow({}),
    { ...cronWorkflow({ cronExpression: '0 9 * * *' }), triggerType: 'MANUAL' }
  ]) {
    const workflow = await create(body)
    t.same(workflow.schedules, [])
    t.equal(await scheduler(workflow.id), undefined)
  }
})

t.test('PATCH replaces, removes and restores the schedule', async (t) => {
  const workflow = await create(cronWorkflow({ cronExpression: '0 9 * * *' }))
  const first = workflow.schedules[0]

  const renamed = await patch(workflow.id, { name: 'renamed' })
  t.equal(renamed.schedules[0].id, first.id, 'a change that does not touch the schedule keeps it')

  const changed = await patch(workflow.id, { triggerConfig: { cronExpression: '30 18 * * 1-5', timezone: 'America/New_York' } })
  t.equal(changed.schedules.length, 1)
  t.not(changed.schedules[0].id, first.id, 'the old schedule is deleted, a new one registered')
  t.match(changed.schedules[0], { cronExpression: '30 18 * * 1-5', timezone: 'America/New_York' })
  t.match(await scheduler(workflow.id), { pattern: '30 18 * * 1-5', tz: 'America/New_York' })

  const inactive = await patch(workflow.id, { isActive: false })
  t.same(inactive.schedules, [])
  t.equal(await scheduler(workflow.id), undefined)

  const active = await patch(workflow.id, { isActive: true })
  t.equal(active.schedules.length, 1)
  t.match(await scheduler(workflow.id), { pattern: '30 18 * * 1-5' })

  const manual = await patch(workflow.id, { triggerType: 'MANUAL' })
  t.same(manual.schedules, [])
  t.equal(await scheduler(workflow.id), undefined)
})

t.test('DELETE removes the job scheduler', async (t) => {
  const workflow = await create(cronWorkflow({ cronExpression: '* * * * * *' }))
  t.ok(await scheduler(workflow.id))
  const res = await request({ method: 'DELETE', url: `/api/automation/workflows/${workflow.id}`, token })
  t.equal(res.statusCode, 204)
  t.equal(await scheduler(workflow.id), undefined)
})

t.test('an invalid expression or timezone is a 400 and schedules nothing', async (t) => {
  const badExpression = await request({ method: 'POST', url: '/api/automation/workflows', token, payload: cronWorkflow({ cronExpression: '61 * * * *' }) })
  t.equal(badExpression.statusCode, 400)
  t.match(badExpression.json().message, /^Invalid cron expression: /)

  const badZone = await request({ method: 'POST', url: '/api/automation/workflows', token, payload: cronWorkflow({ cronExpression: '0 9 * * *', timezone: 'Mars/Olympus_Mons' }) })
  t.equal(badZone.statusCode, 400)
  t.equal(badZone.json().message, 'Invalid timezone: Mars/Olympus_Mons')

  const workflow = await create(cronWorkflow({ cronExpression: '0 9 * * *' }))
  const badPatch = await request({ method: 'PATCH', url: `/api/automation/workflows/${workflow.id}`, token, payload: { triggerConfig: { cronExpression: 'not a cron' } } })
  t.equal(badPatch.statusCode, 400)
  t.match(await scheduler(workflow.id), { pattern: '0 9 * * *' }, 'the refused change leaves the schedule as it was')
  t.equal((await app.queues['scheduled-tasks'].getJobSchedulers()).filter((s) => s.pattern === '61 * * * *').length, 0)
})
