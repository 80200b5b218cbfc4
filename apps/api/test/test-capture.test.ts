import t from 'tap'
import { buildTestApp } from './helper.ts'

const { app, request, newMember, client } = await buildTestApp(t)
const sql = app.database.sql

const URL = '/api/automation/workflows'

const capture = async (token: string, id: string, method: 'GET' | 'POST') =>
  request({ method, url: `${URL}/${id}/test-capture`, token })

const webhook = async (id: string, payload: unknown) => request({
  method: 'POST',
  url: `/api/automation/webhook/${id}?source=shop&tag=a&tag=b`,
  payload: JSON.stringify(payload),
  headers: { 'content-type': 'application/json', authorization: 'Bearer partner-secret', cookie: 'session=partner', 'x-signature': 'sha256=abc' }
})

const without = (headers: Record<string, unknown>, ...names: string[]) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !names.includes(name)))

t.test('an armed active workflow captures the next webhook as pinned data shaped like its run’s triggerData, and still runs it', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token, { triggerType: 'WEBHOOK', isActive: true })
  t.match((await capture(member.token, id, 'GET')).json(), { state: 'idle', until: null, capturedAt: null })
  const updatedAt = async () => (await request({ method: 'GET', url: `${URL}/${id}`, token: member.token })).json().updatedAt
  const beforeArming = await updatedAt()

  const armed = await capture(member.token, id, 'POST')
  t.equal(armed.statusCode, 200, armed.body)
  t.equal(await updatedAt(), beforeArming, 'arming changes nothing of the workflow: its place in the list stays')
  const { state, until } = armed.json()
  t.equal(state, 'armed')
  const window = new Date(until).getTime() - Date.now()
  t.ok(window > 110_000 && window <= 120_000, `listens for 2 minutes (${window} ms left)`)

  const answer = await webhook(id, { order: { total: 150 } })
  t.equal(answer.statusCode, 200)
  const { status, runId } = answer.json()
  t.equal(status, 'received', 'the partner’s request still starts its run')
  const run = await client.getRun(member.token, runId)

  const captured = (await capture(member.token, id, 'GET')).json()
  t.equal(captured.state, 'captured')
  t.ok(captured.capturedAt !== null)
  const triggerData = run.triggerData as { body: unknown, headers: Record<string, unknown>, query: unknown }
  t.equal(triggerData.headers.authorization, 'Bearer partner-secret', 'the run itself keeps what it always kept')
  t.same(captured.pinnedData, { ...triggerData, headers: without(triggerData.headers, 'authorization', 'cookie') },
    'the pinned data is the run’s triggerData without authorization and cookie')
  t.same(captured.pinnedData.body, { order: { total: 150 } })
  t.same(captured.pinnedData.query, { source: 'shop', tag: ['a', 'b'] })
  t.equal(captured.pinnedData.headers['x-signature'], 'sha256=abc')
  t.notOk('authorization' in captured.pinnedData.headers)
  t.notOk('cookie' in captured.pinnedData.headers)

  const workflow = (await request({ method: 'GET', url: `${URL}/${id}`, token: member.token })).json()
  t.same(workflow.pinnedData, captured.pinnedData, 'it is the workflow’s pinnedData, which test runs use')

  await webhook(id, { order: { total: 7 } })
  const after = (await capture(member.token, id, 'GET')).json()
  t.same(after.pinnedData.body, { order: { total: 150 } }, 'only the first request is captured')
})

t.test('an inactive workflow captures too, starting no run, and answers as the spec says', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token, { triggerType: 'WEBHOOK', isActive: false })
  t.same((await webhook(id, { before: true })).json(), { status: 'ignored' }, 'not listening: ignored')
  t.equal((await capture(member.token, id, 'GET')).json().state, 'idle')
  await capture(member.token, id, 'POST')
  t.same((await webhook(id, { ping: 1 })).json(), { status: 'ignored' })
  const captured = (await capture(member.token, id, 'GET')).json()
  t.equal(captured.state, 'captured')
  t.same(captured.pinnedData.body, { ping: 1 })
  t.same(await client.runsOf(member.token, id), [], 'no run')

  // A test run uses what was captured: `{{triggerData.body.ping}}` reads it as a real run would.
  const test = await request({ method: 'POST', url: `${URL}/${id}/test`, token: member.token, payload: {} })
  t.equal(test.statusCode, 202)
  const run = await client.getRun(member.token, test.json().runId)
  t.same(run.triggerData, captured.pinnedData)
})

t.test('the window expires; arming again opens a new one; other triggers and owners are refused', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token, { triggerType: 'WEBHOOK', isActive: true })
  t.equal((await request({ method: 'PATCH', url: `${URL}/${id}`, token: member.token, payload: { pinnedData: { kept: true } } })).statusCode, 200)
  await capture(member.token, id, 'POST')
  await sql`update workflows set test_capture_until = now() - interval '1 second' where id = ${id}`
  t.equal((await capture(member.token, id, 'GET')).json().state, 'expired')
  t.equal((await webhook(id, { late: true })).json().status, 'received', 'the run starts as usual')
  const expired = (await capture(member.token, id, 'GET')).json()
  t.equal(expired.state, 'expired')
  t.notOk('pinnedData' in expired, 'nothing captured to show')
  const workflow = (await request({ method: 'GET', url: `${URL}/${id}`, token: member.token })).json()
  t.same(workflow.pinnedData, { kept: true }, 'a request after the window leaves the pinned data alone')

  t.equal((await capture(member.token, id, 'POST')).json().state, 'armed', 'armed again')
  await webhook(id, { again: true })
  t.same((await capture(member.token, id, 'GET')).json().pinnedData.body, { again: true })

  const manual = await client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  const refused = await capture(member.token, manual, 'POST')
  t.same([refused.statusCode, refused.json().message], [400, 'Only a WEBHOOK workflow listens for a test request; this one\'s trigger is MANUAL'])

  const other = await newMember()
  t.equal((await capture(other.token, id, 'POST')).statusCode, 404, 'another member’s workflow is not found')
  t.equal((await capture(other.token, id, 'GET')).statusCode, 404)
})
