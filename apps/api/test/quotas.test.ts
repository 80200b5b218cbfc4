import t from 'tap'
import { buildTestApp } from './helper.ts'

// Low installation defaults, so that a few requests reach them.
const { adminToken, newMember, request, client } = await buildTestApp(t, {
  USER_QUOTA_WORKFLOWS: '3',
  USER_QUOTA_CRON_WORKFLOWS: '1',
  USER_QUOTA_EVENT_LISTENERS: '1',
  USER_QUOTA_CREDENTIALS: '1',
  USER_QUOTA_RUNS_PER_MINUTE: '1000'
})

const set = { id: 's', type: 'set', config: { values: {} } }
const createWorkflow = async (token: string, body: Record<string, unknown>) =>
  await request({ method: 'POST', url: '/api/automation/workflows', token, payload: { name: 'q', triggerType: 'MANUAL', nodes: [set], ...body } })

t.test('admins set a user\'s quotas; null gives the default back; members may not', async (t) => {
  const member = await newMember()
  const patched = await request({ method: 'PATCH', url: `/api/users/${member.id}`, token: adminToken, payload: { quotas: { workflows: 7, runsPerMinute: 2 } } })
  t.equal(patched.statusCode, 200)
  t.match(patched.json().quotas, { workflows: 7, runsPerMinute: 2, credentials: 1, cronWorkflows: 1, eventListeners: 1, runsInFlight: 0 })
  const reset = await request({ method: 'PATCH', url: `/api/users/${member.id}`, token: adminToken, payload: { quotas: { workflows: null } } })
  t.match(reset.json().quotas, { workflows: 3, runsPerMinute: 2 }, 'workflows back to the default, runsPerMinute kept')
  const listed = (await request({ method: 'GET', url: '/api/users?limit=500', token: adminToken })).json() as Array<{ id: string, quotas: unknown }>
  t.match(listed.find((user) => user.id === member.id)?.quotas, { workflows: 3, runsPerMinute: 2 })
  const bad = await request({ method: 'PATCH', url: `/api/users/${member.id}`, token: adminToken, payload: { quotas: { workflows: -1 } } })
  t.equal(bad.statusCode, 400)
  const unknown = await request({ method: 'PATCH', url: `/api/users/${member.id}`, token: adminToken, payload: { quotas: { seats: 3 } } })
  t.match({ status: unknown.statusCode, quotas: unknown.json().quotas }, { status: 200, quotas: { workflows: 3, runsPerMinute: 2 } }, 'an unknown quota is dropped, like any unknown field')
  const asMember = await request({ method: 'PATCH', url: `/api/users/${member.id}`, token: member.token, payload: { quotas: { workflows: 1000 } } })
  t.equal(asMember.statusCode, 403)
})

t.test('saved things beyond their quota: 400 naming the quota, nothing saved; edits below it go on', async (t) => {
  const member = await newMember()
  const ids: string[] = []
  for (let i = 0; i < 3; i++) ids.push((await createWorkflow(member.token, {})).json().id)
  const fourth = await createWorkflow(member.token, {})
  t.same({ status: fourth.statusCode, message: fourth.json().message }, { status: 400, message: 'Too many workflows (max 3)' })
  t.equal((await request({ method: 'GET', url: '/api/automation/workflows', token: member.token })).json().length, 3, 'nothing saved')
  const renamed = await request({ method: 'PATCH', url: `/api/automation/workflows/${ids[0]}`, token: member.token, payload: { name: 'renamed' } })
  t.equal(renamed.statusCode, 200, 'a user at a quota still edits')

  const event = { triggerType: 'EVENT', triggerConfig: { eventName: 'order.created' } }
  await request({ method: 'DELETE', url: `/api/automation/workflows/${ids[2]}`, token: member.token })
  t.equal((await createWorkflow(member.token, { ...event, isActive: true })).statusCode, 201)
  const secondListener = await request({ method: 'PATCH', url: `/api/automation/workflows/${ids[1]}`, token: member.token, payload: { ...event, isActive: true } })
  t.same({ status: secondListener.statusCode, message: secondListener.json().message }, { status: 400, message: 'Too many active EVENT workflows (max 1)' })
  const inactive = await request({ method: 'PATCH', url: `/api/automation/workflows/${ids[1]}`, token: member.token, payload: { ...event, isActive: false } })
  t.equal(inactive.statusCode, 200, 'an inactive listener does not count')

  const other = await newMember()
  const cron = { triggerType: 'CRON', triggerConfig: { cronExpression: '0 * * * *' }, isActive: true }
  t.equal((await createWorkflow(other.token, cron)).statusCode, 201)
  const secondCron = await createWorkflow(other.token, cron)
  t.same({ status: secondCron.statusCode, message: secondCron.json().message }, { status: 400, message: 'Too many active CRON workflows (max 1)' })

  const credential = async (name: string) => await request({ method: 'POST', url: '/api/automation/credentials', token: other.token, payload: { name, type: 'bearer', data: { token: 'a-long-enough-token' } } })
  t.equal((await credential('first')).statusCode, 201)
  const second = await credential('second')
  t.same({ status: second.statusCode, message: second.json().message }, { status: 400, message: 'Too many credentials (max 1)' })
})

t.test('runs started per minute: /fire and the webhook beyond the owner\'s quota answer 429 with Retry-After, and start nothing', async (t) => {
  const member = await newMember()
  await request({ method: 'PATCH', url: `/api/users/${member.id}`, token: adminToken, payload: { quotas: { runsPerMinute: 2 } } })
  const fired = await client.createWorkflow(member.token, { name: 'fired', nodes: [set] })
  const hooked = await client.createWorkflow(member.token, { name: 'hooked', triggerType: 'WEBHOOK', nodes: [set] })
  const fire = async () => await request({ method: 'POST', url: `/api/automation/workflows/${fired}/fire`, token: member.token, payload: {} })
  t.equal((await fire()).statusCode, 202)
  t.equal((await request({ method: 'POST', url: `/api/automation/webhook/${hooked}`, payload: {} })).json().status, 'received')
  const refused = await fire()
  t.same({ status: refused.statusCode, message: refused.json().message, code: refused.json().code }, { status: 429, message: 'Too many runs started; retry later', code: 'TOO_MANY_RUNS' })
  t.ok(Number(refused.headers['retry-after']) >= 1, 'with Retry-After')
  const hook = await request({ method: 'POST', url: `/api/automation/webhook/${hooked}`, payload: {} })
  t.equal(hook.statusCode, 429, 'the webhook counts with /fire')
  const runs = (await request({ method: 'GET', url: '/api/automation/runs', token: member.token })).json()
  t.equal(runs.length, 2, 'only the two accepted runs exist')

  const admin = await client.createWorkflow(adminToken, { name: 'admin', nodes: [set] })
  t.equal((await request({ method: 'POST', url: `/api/automation/workflows/${admin}/fire`, token: adminToken, payload: {} })).statusCode, 202, 'another owner is counted apart')
})
