import t from 'tap'
import { buildTestApp } from './helper.ts'

const testApp = await buildTestApp(t)
const { app, request, newMember } = testApp
const sql = app.database.sql

const member = await newMember()
const webhookWorkflow = await testApp.client.createWorkflow(member.token, { triggerType: 'WEBHOOK' })

const post = async (workflowId: string, options: { payload?: string | object, headers?: Record<string, string>, query?: string } = {}) =>
  request({ method: 'POST', url: `/api/automation/webhook/${workflowId}${options.query ?? ''}`, payload: options.payload, headers: options.headers })

const storedRun = async (runId: string) =>
  (await sql<Array<{ triggerData: any, rawBody: Buffer | null, status: string }>>`select trigger_data as "triggerData", raw_body as "rawBody", status from runs where id = ${runId}`)[0]

const runsOf = async (workflowId: string): Promise<number> => (await sql`select id from runs where workflow_id = ${workflowId}`).length

t.test('an active WEBHOOK workflow receives: public, 200, run stored with body, lower-case headers and query', async (t) => {
  const body = '{"event":"order.paid","data":{"id":7}}'
  const res = await post(webhookWorkflow, { payload: body, headers: { 'content-type': 'application/json', 'X-Signature': 'abc' }, query: '?source=shop&tag=a&tag=b' })
  t.equal(res.statusCode, 200)
  t.equal(res.json().status, 'received')
  const { runId } = res.json()
  t.match(runId, /^[a-z0-9]{20,32}$/)

  const run = await storedRun(runId)
  t.equal(run?.status, 'PENDING')
  t.same(run?.triggerData.body, { event: 'order.paid', data: { id: 7 } })
  t.equal(run?.triggerData.headers['x-signature'], 'abc')
  t.equal(run?.triggerData.headers['content-type'], 'application/json')
  t.ok(Object.keys(run?.triggerData.headers).every((name) => name === name.toLowerCase()))
  t.same(run?.triggerData.query, { source: 'shop', tag: ['a', 'b'] })
  t.equal(run?.rawBody?.toString('utf8'), body, 'the exact bytes are kept for verify_signature')
  t.notOk('rawBody' in run!.triggerData)
  const data = (await app.queues['workflow-runs'].getJob(runId))?.data
  t.same(data, { runId, userId: data?.userId, requestId: res.headers['x-request-id'] }, 'ids only: the run, its owner and the request that started it')

  const owned = await request({ method: 'GET', url: `/api/automation/runs/${runId}`, token: member.token })
  t.equal(owned.json().workflowId, webhookWorkflow, 'the run belongs to the workflow owner')
})

t.test('raw bytes are kept exactly, whitespace and key order included', async (t) => {
  const body = '{ "b": 1,\n  "a": "é" }'
  const { runId } = (await post(webhookWorkflow, { payload: body, headers: { 'content-type': 'application/json; charset=utf-8' } })).json()
  const run = await storedRun(runId)
  t.same(run?.rawBody, Buffer.from(body, 'utf8'))
  t.same(run?.triggerData.body, { b: 1, a: 'é' })
})

t.test('form-urlencoded and text bodies', async (t) => {
  const form = await post(webhookWorkflow, { payload: 'name=Ada+Lovelace&tag=x&tag=y&empty=', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(form.json().status, 'received')
  const formRun = await storedRun(form.json().runId)
  t.same(formRun?.triggerData.body, { name: 'Ada Lovelace', tag: ['x', 'y'], empty: '' })
  t.equal(formRun?.rawBody?.toString(), 'name=Ada+Lovelace&tag=x&tag=y&empty=')

  const text = await post(webhookWorkflow, { payload: 'plain text ping', headers: { 'content-type': 'text/plain' } })
  t.equal((await storedRun(text.json().runId))?.triggerData.body, 'plain text ping')

  const xml = await post(webhookWorkflow, { payload: '<ping/>', headers: { 'content-type': 'application/xml' } })
  t.equal((await storedRun(xml.json().runId))?.triggerData.body, '<ping/>', 'other types arrive as text')

  const empty = await post(webhookWorkflow)
  t.equal(empty.json().status, 'received')
  t.equal((await storedRun(empty.json().runId))?.triggerData.body, null)
})

t.test('U+0000 and unpaired surrogates, which Postgres cannot store, are received as U+FFFD; the raw bytes stay exact', async (t) => {
  const json = '{"text":"a\\u0000b","lone":"\\ud800","q\\u0000":1}'
  const res = await post(webhookWorkflow, { payload: json, headers: { 'content-type': 'application/json' }, query: '?q=%00' })
  t.equal(res.statusCode, 200, 'a 500 would make the sender retry forever')
  const run = await storedRun(res.json().runId)
  t.same(run?.triggerData.body, { text: 'a\ufffdb', lone: '\ufffd', 'q\ufffd': 1 })
  t.equal(run?.triggerData.query.q, '\ufffd')
  t.equal(run?.rawBody?.toString('utf8'), json)

  const binary = Buffer.from([0x89, 0x50, 0x00, 0x4e])
  const upload = await post(webhookWorkflow, { payload: binary as unknown as string, headers: { 'content-type': 'application/octet-stream' } })
  t.equal(upload.json().status, 'received')
  const uploaded = await storedRun(upload.json().runId)
  t.equal(uploaded?.triggerData.body, '\ufffdP\ufffdN')
  t.same(uploaded?.rawBody, binary)
})

t.test('ignored, still 200, for missing, malformed, inactive and non-WEBHOOK workflows; nothing is created', async (t) => {
  const inactive = await testApp.client.createWorkflow(member.token, { triggerType: 'WEBHOOK', isActive: false })
  const manual = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  for (const [what, id] of [
    ['missing', 'clxxxxxxxxxxxxxxxxxxxxxxx'],
    ['malformed', 'NOT-a-cuid'],
    ['very long', 'x'.repeat(5000)],
    ['inactive', inactive],
    ['other trigger type', manual]
  ]) {
    const res = await post(id!, { payload: { event: 'x' } })
    t.equal(res.statusCode, 200, what)
    t.same(res.json(), { status: 'ignored' }, what)
  }
  t.equal(await runsOf(inactive) + await runsOf(manual), 0)
})

t.test('Idempotency-Key: a redelivery returns the first run', async (t) => {
  const headers = { 'idempotency-key': 'delivery-1', 'content-type': 'application/json' }
  const first = (await post(webhookWorkflow, { payload: '{"n":1}', headers })).json()
  const again = (await post(webhookWorkflow, { payload: '{"n":1}', headers })).json()
  t.same(again, first)
  t.equal((await sql`select count(*)::int as n from runs where trigger_data->'body' = '{"n":1}'::jsonb`)[0]?.n, 1)
})

t.test('a malformed JSON body is still received (always 200), kept as text with its raw bytes', async (t) => {
  const res = await post(webhookWorkflow, { payload: '{"broken', headers: { 'content-type': 'application/json' } })
  t.equal(res.statusCode, 200)
  t.equal(res.json().status, 'received')
  const [run] = await sql`select trigger_data->'body' as body, raw_body from runs where id = ${res.json().runId}`
  t.equal(run?.body, '{"broken')
  t.equal(Buffer.from(run?.raw_body).toString(), '{"broken')

  const poisoned = await post(webhookWorkflow, { payload: '{"__proto__":{"admin":true}}', headers: { 'content-type': 'application/json' } })
  t.equal(poisoned.statusCode, 200)
  const [stored] = await sql`select trigger_data->'body' as body from runs where id = ${poisoned.json().runId}`
  t.equal(stored?.body, '{"__proto__":{"admin":true}}', 'a prototype-poisoning body is kept as text, never parsed')
})

t.test('500 Internal Server Error when the run cannot be stored', async (t) => {
  await sql`alter table runs rename to runs_away`
  t.teardown(async () => { await sql`alter table runs_away rename to runs` })
  const res = await post(webhookWorkflow, { payload: { event: 'x' } })
  t.equal(res.statusCode, 500)
  t.same(res.json(), { statusCode: 500, code: 'INTERNAL_SERVER_ERROR', error: 'Internal Server Error', message: 'Internal Server Error' })
})
