import t from 'tap'
import { resumeJobId } from '@switchboard/core/queues'
import { foldCounterDeltas } from '@switchboard/core/workflows'
import { buildTestApp } from './helper.ts'
import { planOf } from './query-plan.ts'
import { waitFor } from '@switchboard/testing/wait'

const testApp = await buildTestApp(t)
const { app, request, adminToken, newMember } = testApp
const sql = app.database.sql

const fire = async (id: string, token: string, payload?: unknown, headers?: Record<string, string>) =>
  request({ method: 'POST', url: `/api/automation/workflows/${id}/fire`, token, payload: payload as object, headers })

/** Job removal on cancel is not awaited by the route: poll with a deadline. */
const waitUntil = async (check: () => Promise<boolean>): Promise<void> => {
  await waitFor(async () => await check() ? true : undefined, { timeoutMs: 5000, intervalMs: 20, what: 'the job to be removed' })
}

const runCount = async (workflowId: string): Promise<number> =>
  (await sql`select id from runs where workflow_id = ${workflowId}`).length

/** The workflow row's counters once the deltas are folded in, as the worker does. */
const counters = async (workflowId: string) => {
  await foldCounterDeltas(app.database.db)
  return (await sql<Array<{ runCount: number, lastRunAt: string | null }>>`select run_count as "runCount", last_run_at as "lastRunAt" from workflows where id = ${workflowId}`)[0]
}

const setStatus = async (runId: string, status: string, startedAt: Date | null = null) => {
  await sql`update runs set status = ${status}, started_at = ${startedAt?.toISOString() ?? null} where id = ${runId}`
}

const statusOf = async (runId: string) => (await sql`select status from runs where id = ${runId}`)[0]?.status

t.test('fire answers 202 with a PENDING run whose job carries only the run id and the request id', async (t) => {
  const member = await newMember()
  const workflowId = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })

  const res = await fire(workflowId, member.token, { phone: '15550001111', nested: { a: [1, 2] } })
  t.equal(res.statusCode, 202)
  const { runId } = res.json()
  t.match(runId, /^[a-z0-9]{20,32}$/)

  const job = await app.queues['workflow-runs'].getJob(runId)
  t.equal(job?.id, runId)
  t.equal(job?.name, 'run')
  t.same(job?.data, { runId, userId: job?.data.userId, requestId: res.headers['x-request-id'] })
  t.type(job?.data.userId, 'string', 'and its owner, for the worker\'s fair share')

  const run = await request({ method: 'GET', url: `/api/automation/runs/${runId}`, token: member.token })
  t.equal(run.statusCode, 200)
  t.match(run.json(), {
    id: runId,
    workflowId,
    status: 'PENDING',
    triggerData: { phone: '15550001111', nested: { a: [1, 2] } },
    result: {},
    error: null,
    startedAt: null,
    completedAt: null,
    durationMs: null,
    logs: []
  })
  t.notOk('rawBody' in run.json())

  const { runCount, lastRunAt } = (await counters(workflowId))!
  t.equal(runCount, 1)
  t.equal(new Date(lastRunAt!).toISOString(), run.json().createdAt)
})

t.test('fire without a body starts the run with empty triggerData', async (t) => {
  const workflowId = await testApp.client.createWorkflow(adminToken, { triggerType: 'MANUAL' })
  const res = await fire(workflowId, adminToken)
  t.equal(res.statusCode, 202)
  const run = await request({ method: 'GET', url: `/api/automation/runs/${res.json().runId}`, token: adminToken })
  t.same(run.json().triggerData, {})
})

t.test('fire and events store U+0000 and unpaired surrogates of the payload as U+FFFD', async (t) => {
  const member = await newMember()
  const manual = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  const listener = await testApp.client.createWorkflow(member.token, { triggerType: 'EVENT', triggerConfig: { eventName: 'odd.text' } })
  const payload = '{"text":"a\\u0000b","lone":"\\udc00"}'
  const stored = { text: 'a\ufffdb', lone: '\ufffd' }
  const triggerDataOf = async (runId: string) =>
    (await request({ method: 'GET', url: `/api/automation/runs/${runId}`, token: member.token })).json().triggerData

  const fired = await fire(manual, member.token, payload, { 'content-type': 'application/json' })
  t.equal(fired.statusCode, 202)
  t.same(await triggerDataOf(fired.json().runId), stored)

  const emitted = await request({ method: 'POST', url: '/api/automation/events', token: member.token, payload: `{"name":"odd.text","payload":${payload}}`, headers: { 'content-type': 'application/json' } })
  t.equal(emitted.statusCode, 202)
  t.equal(emitted.json().runIds.length, 1)
  t.same(await triggerDataOf(emitted.json().runIds[0]), stored)
  t.equal((await counters(listener))?.runCount, 1)
})

t.test('AGENT workflows run on the agent-execution queue', async (t) => {
  const workflowId = await testApp.client.createWorkflow(adminToken, { triggerType: 'AGENT' })
  const fired = await fire(workflowId, adminToken, {})
  const { runId } = fired.json()
  t.match((await app.queues['agent-execution'].getJob(runId))?.data, { runId, requestId: fired.headers['x-request-id'], userId: String })
  t.equal(await app.queues['workflow-runs'].getJob(runId), undefined)
})

t.test('fire refuses inactive, missing, foreign and malformed workflows without creating a run', async (t) => {
  const owner = await newMember()
  const stranger = await newMember()
  const inactive = await testApp.client.createWorkflow(owner.token, { triggerType: 'MANUAL', isActive: false })
  const active = await testApp.client.createWorkflow(owner.token, { triggerType: 'MANUAL' })

  const refused = await fire(inactive, owner.token, {})
  t.equal(refused.statusCode, 400)
  t.same(refused.json(), { statusCode: 400, code: 'WORKFLOW_NOT_ACTIVE', error: 'Workflow is not active', message: 'Workflow is not active' })
  t.equal(await runCount(inactive), 0)

  const notFound = { statusCode: 404, code: 'WORKFLOW_NOT_FOUND', error: 'Workflow not found', message: 'Workflow not found' }
  for (const [what, id, token] of [
    ['another user\'s workflow', active, stranger.token],
    ['a missing id', 'clxxxxxxxxxxxxxxxxxxxxxxx', owner.token],
    ['a malformed id', 'NOT-a-cuid!', owner.token],
    ['a very long id', 'a'.repeat(90), owner.token]
  ] as const) {
    const res = await fire(id, token, {})
    t.equal(res.statusCode, 404, what)
    t.same(res.json(), notFound, what)
  }
  t.equal(await runCount(active), 0)

  t.equal((await fire(active, adminToken, {})).statusCode, 202, 'an admin may fire anyone\'s workflow')
})

t.test('fires arriving together share their lookups and writes, and each is answered for itself: owner, activity and key', async (t) => {
  const owner = await newMember()
  const stranger = await newMember()
  const mine = await testApp.client.createWorkflow(owner.token, { triggerType: 'MANUAL' })
  const inactive = await testApp.client.createWorkflow(owner.token, { triggerType: 'MANUAL', isActive: false })
  const theirs = await testApp.client.createWorkflow(stranger.token, { triggerType: 'MANUAL' })

  const answers = await Promise.all([
    ...Array.from({ length: 40 }, async (_, seq) => ['mine', seq, await fire(mine, owner.token, { seq })] as const),
    ...Array.from({ length: 5 }, async (_, seq) => ['keyed', seq, await fire(mine, owner.token, { seq }, { 'idempotency-key': 'together' })] as const),
    (async () => ['stranger', 0, await fire(mine, stranger.token, {})] as const)(),
    (async () => ['inactive', 0, await fire(inactive, owner.token, {})] as const)(),
    (async () => ['theirs', 0, await fire(theirs, stranger.token, { theirs: true })] as const)()
  ])
  const byKind = (kind: string) => answers.filter(([k]) => k === kind).map(([, seq, res]) => [seq, res] as const)
  for (const [seq, res] of byKind('mine')) {
    t.equal(res.statusCode, 202)
    const [run] = await sql`select trigger_data as "triggerData", workflow_id as "workflowId" from runs where id = ${res.json().runId}`
    t.same(run, { triggerData: { seq }, workflowId: mine }, `fire ${seq} answered with its own run`)
  }
  t.equal(new Set(byKind('keyed').map(([, res]) => res.json().runId)).size, 1, 'one key, one run')
  t.equal(byKind('stranger')[0]![1].statusCode, 404, 'another member\'s workflow is not found, whoever shares the lookup')
  t.equal(byKind('inactive')[0]![1].statusCode, 400)
  t.equal(byKind('theirs')[0]![1].statusCode, 202, 'its owner fires it')
  t.equal(await runCount(mine), 41)
  t.equal(await runCount(inactive), 0)
})

t.test('Idempotency-Key: the same key within 24 hours returns the first run and creates nothing', async (t) => {
  const workflowId = await testApp.client.createWorkflow(adminToken, { triggerType: 'MANUAL' })
  const other = await testApp.client.createWorkflow(adminToken, { triggerType: 'MANUAL' })
  const headers = { 'idempotency-key': 'order-42' }

  const first = (await fire(workflowId, adminToken, { n: 1 }, headers)).json().runId
  const second = await fire(workflowId, adminToken, { n: 2 }, headers)
  t.equal(second.statusCode, 202)
  t.equal(second.json().runId, first)
  t.equal(await runCount(workflowId), 1)

  const concurrent = await Promise.all(Array.from({ length: 5 }, async () => (await fire(workflowId, adminToken, {}, { 'idempotency-key': 'burst' })).json().runId))
  t.equal(new Set(concurrent).size, 1, 'concurrent requests with one key share one run')
  t.equal(await runCount(workflowId), 2)

  t.equal((await counters(workflowId))?.runCount, 2, 'runCount counts runs created, not requests')

  t.not((await fire(other, adminToken, {}, headers)).json().runId, first, 'keys are per workflow')
  t.not((await fire(workflowId, adminToken, {}, { 'idempotency-key': 'order-43' })).json().runId, first)

  const longKey = 'k'.repeat(5000)
  const long = (await fire(workflowId, adminToken, {}, { 'idempotency-key': longKey })).json().runId
  t.equal((await fire(workflowId, adminToken, {}, { 'idempotency-key': longKey })).json().runId, long, 'a long key works too')

  await sql`update idempotency_keys set created_at = now() - interval '25 hours' where key = 'order-42'`
  const afterExpiry = (await fire(workflowId, adminToken, {}, headers)).json().runId
  t.not(afterExpiry, first, 'an expired key starts a new run')
  t.equal((await fire(workflowId, adminToken, {}, headers)).json().runId, afterExpiry, 'and the key now points at it')
})

t.test('events start the caller\'s active EVENT workflows listening to the name', async (t) => {
  const member = await newMember()
  const stranger = await newMember()
  const first = await testApp.client.createWorkflow(member.token, { triggerType: 'EVENT', triggerConfig: { eventName: 'client.created' } })
  const second = await testApp.client.createWorkflow(member.token, { triggerType: 'EVENT', triggerConfig: { eventName: 'client.created' } })
  await testApp.client.createWorkflow(member.token, { triggerType: 'EVENT', triggerConfig: { eventName: 'client.created' }, isActive: false })
  await testApp.client.createWorkflow(member.token, { triggerType: 'EVENT', triggerConfig: { eventName: 'client.deleted' } })
  await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL', triggerConfig: { eventName: 'client.created' } })
  const foreign = await testApp.client.createWorkflow(stranger.token, { triggerType: 'EVENT', triggerConfig: { eventName: 'client.created' } })

  const res = await request({ method: 'POST', url: '/api/automation/events', token: member.token, payload: { name: 'client.created', payload: { clientId: 'c1' } } })
  t.equal(res.statusCode, 202)
  const { runIds } = res.json()
  t.equal(runIds.length, 2)

  const started = await sql`select workflow_id as "workflowId", trigger_data as "triggerData", status from runs where user_id = ${member.id}`
  t.same(started.map((run) => run.workflowId).sort(), [first, second].sort())
  t.ok(started.every((run) => run.status === 'PENDING'))
  t.same(started[0]?.triggerData, { clientId: 'c1' })
  for (const runId of runIds) t.same((await app.queues['workflow-runs'].getJob(runId))?.data, { runId, userId: member.id })
  t.equal(await runCount(foreign), 0, 'another user\'s workflows do not listen')

  t.equal((await counters(first))?.runCount, 1)

  const none = await request({ method: 'POST', url: '/api/automation/events', token: member.token, payload: { name: 'nobody.listens' } })
  t.equal(none.statusCode, 202)
  t.same(none.json(), { runIds: [] })

  const missing = await request({ method: 'POST', url: '/api/automation/events', token: member.token, payload: { payload: {} } })
  t.equal(missing.statusCode, 400)
  t.equal(missing.json().message, 'name is required')
})

t.test('runs: get with logs in order, list with filters, owner isolation', async (t) => {
  const owner = await newMember()
  const stranger = await newMember()
  const workflowId = await testApp.client.createWorkflow(owner.token, { triggerType: 'MANUAL' })
  const otherWorkflow = await testApp.client.createWorkflow(owner.token, { triggerType: 'MANUAL' })
  const runIds: string[] = []
  for (let i = 0; i < 3; i++) runIds.push((await fire(workflowId, owner.token, { i })).json().runId)
  const otherRun = (await fire(otherWorkflow, owner.token, {})).json().runId
  await sql`update runs set status = 'SUCCESS', started_at = now(), completed_at = now(), duration_ms = 12 where id = ${runIds[0]!}`
  await sql`insert into run_logs (run_id, node_id, level, message) values
    (${runIds[0]!}, null, 'INFO', 'Run started'),
    (${runIds[0]!}, 'n1', 'WARN', 'Template path missing'),
    (${runIds[0]!}, null, 'INFO', 'Run finished')`

  const run = (await request({ method: 'GET', url: `/api/automation/runs/${runIds[0]}`, token: owner.token })).json()
  t.match(run, { status: 'SUCCESS', durationMs: 12 })
  t.same(run.logs.map((log: { message: string }) => log.message), ['Run started', 'Template path missing', 'Run finished'])
  t.match(run.logs[1], { id: String, nodeId: 'n1', level: 'WARN', createdAt: String })
  t.equal(run.logs[0].nodeId, null)

  const notFound = { statusCode: 404, code: 'RUN_NOT_FOUND', error: 'Run not found', message: 'Run not found' }
  for (const [url, token] of [
    [`/api/automation/runs/${runIds[0]}`, stranger.token],
    ['/api/automation/runs/clxxxxxxxxxxxxxxxxxxxxxxx', owner.token],
    ['/api/automation/runs/NOT_A_CUID', owner.token],
    [`/api/automation/runs/${'x'.repeat(5000)}`, owner.token]
  ] as const) {
    const res = await request({ method: 'GET', url, token })
    t.equal(res.statusCode, 404, url)
    t.same(res.json(), notFound)
  }
  t.equal((await request({ method: 'GET', url: `/api/automation/runs/${runIds[0]}`, token: adminToken })).statusCode, 200, 'admins see every run')

  const all = (await request({ method: 'GET', url: '/api/automation/runs', token: owner.token })).json()
  t.same(all.map((r: { id: string }) => r.id), [otherRun, ...[...runIds].reverse()], 'newest first')
  t.notOk('logs' in all[0], 'lists carry no logs')

  const byWorkflow = (await request({ method: 'GET', url: `/api/automation/runs?workflowId=${workflowId}`, token: owner.token })).json()
  t.same(byWorkflow.map((r: { id: string }) => r.id), [...runIds].reverse())
  const byStatus = (await request({ method: 'GET', url: '/api/automation/runs?status=SUCCESS', token: owner.token })).json()
  t.same(byStatus.map((r: { id: string }) => r.id), [runIds[0]])
  const paged = (await request({ method: 'GET', url: '/api/automation/runs?limit=2&offset=1', token: owner.token })).json()
  t.same(paged.map((r: { id: string }) => r.id), [runIds[2], runIds[1]])

  t.same((await request({ method: 'GET', url: '/api/automation/runs', token: stranger.token })).json(), [], 'a stranger sees none of them')

  const badStatus = await request({ method: 'GET', url: '/api/automation/runs?status=DONE', token: owner.token })
  t.equal(badStatus.statusCode, 400)
  t.equal(badStatus.json().message, 'status must be one of PENDING, RUNNING, WAITING, SUCCESS, FAILED, CANCELLED')
  t.equal((await request({ method: 'GET', url: '/api/automation/runs?limit=501', token: owner.token })).statusCode, 400)
})

t.test('run lists and a workflow\'s latest runs are read in index order, not by sorting every run', async (t) => {
  const member = await newMember()
  const workflowId = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  await fire(workflowId, member.token, {})

  for (const [what, token, url, statement] of [
    ['admin list', adminToken, '/api/automation/runs', /from "runs"/],
    ['member list', member.token, '/api/automation/runs', /from "runs"/],
    ['list of one workflow', adminToken, `/api/automation/runs?workflowId=${workflowId}`, /from "runs"/],
    ['latest 10 of a workflow', member.token, `/api/automation/workflows/${workflowId}`, /json_agg/]
  ] as const) {
    const plan = await planOf(testApp, token, url, statement)
    t.notMatch(plan, /Sort|Seq Scan/, `${what}:\n${plan}`)
  }
})

t.test('cancel: PENDING, RUNNING and WAITING runs end CANCELLED; finished ones answer 409', async (t) => {
  const owner = await newMember()
  const stranger = await newMember()
  const workflowId = await testApp.client.createWorkflow(owner.token, { triggerType: 'MANUAL' })
  const cancel = async (id: string, token = owner.token) => request({ method: 'POST', url: `/api/automation/runs/${id}/cancel`, token })

  const pending = (await fire(workflowId, owner.token, {})).json().runId
  t.ok(await app.queues['workflow-runs'].getJob(pending), 'the job is queued')
  const res = await cancel(pending)
  t.equal(res.statusCode, 200)
  t.match(res.json(), { id: pending, status: 'CANCELLED', completedAt: String, durationMs: null })
  t.same(res.json().logs.map((log: { message: string }) => log.message), ['Run cancelled'])
  await waitUntil(async () => await app.queues['workflow-runs'].getJob(pending) === undefined)
  t.equal(await app.queues['workflow-runs'].getJob(pending), undefined, 'its queued job is removed')

  for (const status of ['RUNNING', 'WAITING'] as const) {
    const runId = (await fire(workflowId, owner.token, {})).json().runId
    await setStatus(runId, status, new Date(Date.now() - 1000))
    const cancelled = await cancel(runId)
    t.equal(cancelled.statusCode, 200, status)
    t.equal(cancelled.json().status, 'CANCELLED')
    t.ok(cancelled.json().durationMs >= 1000, 'durationMs counts from the start')
  }

  const waiting = (await fire(workflowId, owner.token, {})).json().runId
  await sql`update runs set status = 'WAITING', current_node_id = 'pause' where id = ${waiting}`
  const resumeJob = resumeJobId(waiting, 'pause')
  await app.queues['workflow-runs'].add('run', { runId: waiting }, { jobId: resumeJob, delay: 60_000 })
  t.equal((await cancel(waiting)).statusCode, 200)
  await waitUntil(async () => await app.queues['workflow-runs'].getJob(resumeJob) === undefined)
  t.equal(await app.queues['workflow-runs'].getJob(resumeJob), undefined, 'the delayed resume job is removed')

  const finishedBody = { statusCode: 409, code: 'RUN_FINISHED', error: 'Run is already finished', message: 'Run is already finished' }
  t.same((await cancel(pending)).json(), finishedBody, 'cancelling twice')
  for (const status of ['SUCCESS', 'FAILED'] as const) {
    const runId = (await fire(workflowId, owner.token, {})).json().runId
    await setStatus(runId, status)
    const refused = await cancel(runId)
    t.equal(refused.statusCode, 409, status)
    t.same(refused.json(), finishedBody)
    t.equal(await statusOf(runId), status, 'a terminal status is never overwritten')
  }

  const foreign = (await fire(workflowId, owner.token, {})).json().runId
  t.equal((await cancel(foreign, stranger.token)).statusCode, 404, 'another user\'s run is not found')
  t.equal((await cancel('NOT_A_CUID')).statusCode, 404)
  t.equal(await statusOf(foreign), 'PENDING')
})

t.test('cancel removes the job from the queue the run was created on, after its workflow left AGENT', async (t) => {
  const member = await newMember()
  const workflowId = await testApp.client.createWorkflow(member.token, { triggerType: 'AGENT' })
  const runId = (await fire(workflowId, member.token, {})).json().runId
  t.ok(await app.queues['agent-execution'].getJob(runId), 'queued on agent-execution')
  const patched = await request({ method: 'PATCH', url: `/api/automation/workflows/${workflowId}`, token: member.token, payload: { triggerType: 'MANUAL' } })
  t.equal(patched.statusCode, 200)

  t.equal((await request({ method: 'POST', url: `/api/automation/runs/${runId}/cancel`, token: member.token })).statusCode, 200)
  await waitUntil(async () => await app.queues['agent-execution'].getJob(runId) === undefined)
  t.equal(await app.queues['agent-execution'].getJob(runId), undefined, 'its job is removed from agent-execution')
})
