/**
 * Limits per workflow (README): maxConcurrentRuns and webhookRateLimit as fields of the
 * workflow (create, PATCH, GET, list, export, import, their validation), and the inbound
 * webhook's rate limit, counted in the test's Redis; the setting errorWorkflowId and the
 * workflows it may name (README, Error workflows).
 */
import t from 'tap'
import { buildTestApp } from './helper.ts'

const testApp = await buildTestApp(t)
const { app, request, newMember, client, scrape } = testApp
const sql = app.database.sql

const URL = '/api/automation/workflows'
type Body = Record<string, any>

const member = await newMember()
const create = async (payload: Body) => request({ method: 'POST', url: URL, token: member.token, payload: { name: 'limited', triggerType: 'WEBHOOK', isActive: true, ...payload } })
const patch = async (id: string, payload: Body) => request({ method: 'PATCH', url: `${URL}/${id}`, token: member.token, payload })
const webhook = async (workflowId: string, payload: Body = {}) => request({ method: 'POST', url: `/api/automation/webhook/${workflowId}`, payload })
const runCount = async (workflowId: string): Promise<number> => Number((await sql`select count(*) from runs where workflow_id = ${workflowId}`)[0]!.count)

t.test('both limits are fields of the workflow: null by default, set on create, shown by GET and the list, changed and cleared by PATCH without a new version', async (t) => {
  const plain = await create({})
  t.equal(plain.statusCode, 201)
  t.match(plain.json(), { maxConcurrentRuns: null, webhookRateLimit: null })

  const created = await create({ maxConcurrentRuns: 3, webhookRateLimit: { max: 100, windowSeconds: 60, extra: 'dropped' } })
  t.equal(created.statusCode, 201, created.body)
  const id = created.json().id
  t.same([created.json().maxConcurrentRuns, created.json().webhookRateLimit], [3, { max: 100, windowSeconds: 60 }], 'unknown keys dropped')
  const got = (await request({ method: 'GET', url: `${URL}/${id}`, token: member.token })).json()
  t.same([got.maxConcurrentRuns, got.webhookRateLimit], [3, { max: 100, windowSeconds: 60 }])
  const listed = (await request({ method: 'GET', url: URL, token: member.token })).json().find((workflow: Body) => workflow.id === id)
  t.same([listed.maxConcurrentRuns, listed.webhookRateLimit], [3, { max: 100, windowSeconds: 60 }])

  const changed = await patch(id, { maxConcurrentRuns: 1000, webhookRateLimit: { max: 100000, windowSeconds: 3600 } })
  t.equal(changed.statusCode, 200, changed.body)
  t.same([changed.json().maxConcurrentRuns, changed.json().webhookRateLimit, changed.json().version], [1000, { max: 100000, windowSeconds: 3600 }, 1], 'the bounds are allowed; settings make no version')
  const cleared = await patch(id, { maxConcurrentRuns: null, webhookRateLimit: null })
  t.same([cleared.json().maxConcurrentRuns, cleared.json().webhookRateLimit, cleared.json().version], [null, null, 1])
  const kept = await patch(id, { name: 'renamed' })
  t.same([kept.json().maxConcurrentRuns, kept.json().webhookRateLimit], [null, null], 'a PATCH without them leaves them alone')
  const versions = (await request({ method: 'GET', url: `${URL}/${id}/versions`, token: member.token })).json()
  t.equal(versions.length, 1, 'no version was made')
})

t.test('values out of bounds are 400 VALIDATION_ERROR naming the field and its bounds, on create and PATCH', async (t) => {
  const concurrency = 'maxConcurrentRuns must be an integer from 1 to 1000, or null'
  const rateLimit = 'webhookRateLimit must be an object {max, windowSeconds}, or null'
  const max = 'webhookRateLimit.max must be an integer from 1 to 100000'
  const window = 'webhookRateLimit.windowSeconds must be an integer from 1 to 3600'
  const cases: Array<[Body, string]> = [
    [{ maxConcurrentRuns: 0 }, concurrency],
    [{ maxConcurrentRuns: 1001 }, concurrency],
    [{ maxConcurrentRuns: 1.5 }, concurrency],
    [{ maxConcurrentRuns: '2' }, concurrency],
    [{ maxConcurrentRuns: -1 }, concurrency],
    [{ webhookRateLimit: 5 }, rateLimit],
    [{ webhookRateLimit: [] }, rateLimit],
    [{ webhookRateLimit: {} }, 'webhookRateLimit.max is required'],
    [{ webhookRateLimit: { max: 10 } }, 'webhookRateLimit.windowSeconds is required'],
    [{ webhookRateLimit: { max: 0, windowSeconds: 60 } }, max],
    [{ webhookRateLimit: { max: 100001, windowSeconds: 60 } }, max],
    [{ webhookRateLimit: { max: '10', windowSeconds: 60 } }, max],
    [{ webhookRateLimit: { max: 10, windowSeconds: 0 } }, window],
    [{ webhookRateLimit: { max: 10, windowSeconds: 3601 } }, window],
    [{ webhookRateLimit: { max: 10, windowSeconds: 1.5 } }, window]
  ]
  const existing = (await create({})).json().id
  for (const [payload, message] of cases) {
    for (const [what, res] of [['create', await create(payload)], ['PATCH', await patch(existing, payload)]] as const) {
      t.equal(res.statusCode, 400, `${what} ${JSON.stringify(payload)}`)
      t.same(res.json(), { statusCode: 400, code: 'VALIDATION_ERROR', error: message, message }, `${what} ${JSON.stringify(payload)}`)
    }
  }
  const stored = (await request({ method: 'GET', url: `${URL}/${existing}`, token: member.token })).json()
  t.same([stored.maxConcurrentRuns, stored.webhookRateLimit], [null, null], 'nothing was stored')
})

t.test('an export carries the limits and an import restores them, checked like a create', async (t) => {
  const id = (await create({ maxConcurrentRuns: 5, webhookRateLimit: { max: 20, windowSeconds: 10 } })).json().id
  const exported = (await request({ method: 'GET', url: `${URL}/${id}/export`, token: member.token })).json()
  t.same([exported.workflow.maxConcurrentRuns, exported.workflow.webhookRateLimit], [5, { max: 20, windowSeconds: 10 }])
  const imported = await request({ method: 'POST', url: `${URL}/import`, token: member.token, payload: exported })
  t.equal(imported.statusCode, 201, imported.body)
  t.same([imported.json().maxConcurrentRuns, imported.json().webhookRateLimit, imported.json().isActive], [5, { max: 20, windowSeconds: 10 }, false])

  const { maxConcurrentRuns: _dropped, webhookRateLimit: _alsoDropped, ...older } = exported.workflow
  const fromOlder = await request({ method: 'POST', url: `${URL}/import`, token: member.token, payload: { ...exported, workflow: older } })
  t.same([fromOlder.statusCode, fromOlder.json().maxConcurrentRuns, fromOlder.json().webhookRateLimit], [201, null, null], 'an export without them imports with no limits')
  const invalid = await request({ method: 'POST', url: `${URL}/import`, token: member.token, payload: { ...exported, workflow: { ...exported.workflow, maxConcurrentRuns: 0 } } })
  t.same([invalid.statusCode, invalid.json().message], [400, 'maxConcurrentRuns must be an integer from 1 to 1000, or null'])
})

t.test('the inbound webhook beyond its limit is 429 with Retry-After and creates nothing; the next window lets requests through', async (t) => {
  const id = (await create({ webhookRateLimit: { max: 3, windowSeconds: 2 } })).json().id
  const unlimited = (await create({})).json().id
  // Start at the beginning of a window: its first request opens it.
  for (let i = 0; i < 3; i++) {
    const res = await webhook(id, { i })
    t.same([res.statusCode, res.json().status], [200, 'received'], `request ${i + 1} of 3`)
  }
  const refused = await webhook(id, { i: 3 })
  t.equal(refused.statusCode, 429)
  const retryAfter = Number(refused.headers['retry-after'])
  t.ok(retryAfter >= 1 && retryAfter <= 2, `Retry-After ${refused.headers['retry-after']} within the window`)
  const message = `Too many webhook requests for this workflow, retry in ${retryAfter} second${retryAfter === 1 ? '' : 's'}`
  t.same(refused.json(), { statusCode: 429, code: 'TOO_MANY_REQUESTS', error: message, message })
  t.equal(await runCount(id), 3, 'no run for the refused request')
  const counters = (await request({ method: 'GET', url: `${URL}/${id}`, token: member.token })).json()
  t.equal(counters.runCount, 3, 'and no counter')
  t.equal((await webhook(id, { i: 4 })).statusCode, 429, 'still refused in the window')
  t.equal((await webhook(unlimited)).statusCode, 200, 'another workflow is not limited')
  t.match(await scrape(), /switchboard_webhook_answers_total\{status="rate_limited"\} 2/)

  await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 + 100))
  const again = await webhook(id, { i: 5 })
  t.same([again.statusCode, again.json().status], [200, 'received'], 'the next window lets requests through')
  t.equal(await runCount(id), 4)

  // Raising the limit applies at once; removing it stops counting.
  await patch(id, { webhookRateLimit: { max: 4, windowSeconds: 2 } })
  for (let i = 0; i < 3; i++) t.equal((await webhook(id)).statusCode, 200, 'within the new max')
  t.equal((await webhook(id)).statusCode, 429)
  await patch(id, { webhookRateLimit: null })
  t.equal((await webhook(id)).statusCode, 200, 'no limit any more')
})

t.test('an ignored webhook (inactive workflow) is not counted or limited', async (t) => {
  const id = (await create({ isActive: false, webhookRateLimit: { max: 1, windowSeconds: 60 } })).json().id
  for (let i = 0; i < 3; i++) t.same((await webhook(id)).json(), { status: 'ignored' })
  await client.call('PATCH', `${URL}/${id}`, { token: member.token, body: { isActive: true } })
  t.equal((await webhook(id)).statusCode, 200, 'the first active request is the first counted')
  t.equal((await webhook(id)).statusCode, 429)
})

t.test('errorWorkflowId (README, Error workflows): another non-CRON workflow of the owner, a setting without a version, cleared by null and when its workflow is deleted', async (t) => {
  const errorWorkflow = (await create({ name: 'on error', triggerType: 'MANUAL', isActive: false })).json().id
  const cron = (await create({ name: 'nightly', triggerType: 'CRON', isActive: false })).json().id
  const stranger = await newMember()
  const theirs = (await request({ method: 'POST', url: URL, token: stranger.token, payload: { name: 'theirs', triggerType: 'MANUAL' } })).json().id

  const created = await create({ errorWorkflowId: errorWorkflow })
  t.equal(created.statusCode, 201, created.body)
  const id = created.json().id
  t.equal(created.json().errorWorkflowId, errorWorkflow)
  t.equal((await request({ method: 'GET', url: `${URL}/${id}`, token: member.token })).json().errorWorkflowId, errorWorkflow, 'GET returns it')
  const listed = (await request({ method: 'GET', url: URL, token: member.token })).json().find((workflow: Body) => workflow.id === id)
  t.equal(listed.errorWorkflowId, errorWorkflow, 'the list returns it')

  const refusals: Array<[string, unknown, string]> = [
    ['itself', id, 'errorWorkflowId must name another workflow than this one'],
    ['a CRON workflow', cron, `errorWorkflowId cannot name a CRON workflow: ${cron}`],
    ['another user\'s workflow, like a missing one', theirs, `errorWorkflowId names no workflow of the owner: ${theirs}`],
    ['a missing workflow', 'nosuchworkflow', 'errorWorkflowId names no workflow of the owner: nosuchworkflow'],
    ['not an id', 5, 'errorWorkflowId must be a workflow id, or null']
  ]
  for (const [what, value, message] of refusals) {
    const res = await patch(id, { errorWorkflowId: value })
    t.same([res.statusCode, res.json()], [400, { statusCode: 400, code: 'VALIDATION_ERROR', error: message, message }], `PATCH naming ${what}`)
  }
  const createdWithCron = await create({ errorWorkflowId: cron })
  t.same([createdWithCron.statusCode, createdWithCron.json().message], [400, `errorWorkflowId cannot name a CRON workflow: ${cron}`], 'create checks it too')

  const changed = await patch(id, { errorWorkflowId: null })
  t.same([changed.statusCode, changed.json().errorWorkflowId, changed.json().version], [200, null, 1], 'null clears it, with no new version')
  await patch(id, { errorWorkflowId: errorWorkflow })

  const exported = (await request({ method: 'GET', url: `${URL}/${id}/export`, token: member.token })).json()
  t.equal(exported.workflow.errorWorkflowId, errorWorkflow, 'an export carries it')
  const imported = (await request({ method: 'POST', url: `${URL}/import`, token: member.token, payload: exported })).json()
  t.same([imported.errorWorkflowId, imported.toFill], [errorWorkflow, []], 'an import of the same owner keeps it')
  const elsewhere = await request({ method: 'POST', url: `${URL}/import`, token: stranger.token, payload: exported })
  t.same([elsewhere.statusCode, elsewhere.json().errorWorkflowId, elsewhere.json().toFill], [201, null, ['errorWorkflowId']], 'another user\'s import leaves it out and says so')

  t.equal((await request({ method: 'DELETE', url: `${URL}/${errorWorkflow}`, token: member.token })).statusCode, 204)
  const after = (await request({ method: 'GET', url: `${URL}/${id}`, token: member.token })).json()
  t.equal(after.errorWorkflowId, null, 'deleting the error workflow clears the setting of the workflows naming it')
  t.equal(after.version, 1)
})
