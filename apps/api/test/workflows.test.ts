import t, { type Test } from 'tap'
import { createId } from '@paralleldrive/cuid2'
import { buildTestApp } from './helper.ts'
import { planOf } from './query-plan.ts'

const testApp = await buildTestApp(t)
const { app, request, adminToken, newMember } = testApp
const sql = app.database.sql

const URL = '/api/automation/workflows'

// The list's summary fields (README, Workflows), and the limits per workflow.
const SUMMARY_FIELDS = ['id', 'name', 'description', 'triggerType', 'triggerConfig', 'isActive', 'runCount', 'successCount',
  'failureCount', 'lastRunAt', 'domain', 'tags', 'updatedAt', 'maxConcurrentRuns', 'webhookRateLimit', 'runTags', 'flowControl', 'cancelOn', 'errorWorkflowId'].sort()

const DETAIL_FIELDS = [...SUMMARY_FIELDS, 'nodes', 'edges', 'version', 'pinnedData', 'createdAt', 'runs', 'schedules'].sort()

const notFoundBody = { statusCode: 404, code: 'WORKFLOW_NOT_FOUND', error: 'Workflow not found', message: 'Workflow not found' }

type Body = Record<string, unknown>

async function create (token: string, payload: Body): Promise<Body> {
  const res = await request({ method: 'POST', url: URL, token, payload })
  if (res.statusCode !== 201) throw new Error(`create failed: ${res.body}`)
  return res.json()
}

/** The message of a 400 answer to creating `payload`. */
async function createRefusal (t: Test, token: string, payload: unknown): Promise<string> {
  const res = await request({ method: 'POST', url: URL, token, payload: payload as Body })
  t.equal(res.statusCode, 400, `400 for ${String(JSON.stringify(payload)).slice(0, 120)}`)
  const body = res.json()
  t.equal(body.error, body.message)
  return body.message
}

t.test('create answers 201 with the full workflow and the defaults', async (t) => {
  const { token } = await newMember()
  const res = await request({ method: 'POST', url: URL, token, payload: { name: 'Welcome', triggerType: 'MANUAL' } })
  t.equal(res.statusCode, 201)
  const workflow = res.json()
  t.same(Object.keys(workflow).sort(), DETAIL_FIELDS)
  t.match(workflow, {
    name: 'Welcome',
    description: null,
    triggerType: 'MANUAL',
    triggerConfig: {},
    nodes: [],
    edges: null,
    isActive: false,
    domain: 'GENERAL',
    tags: [],
    runCount: 0,
    successCount: 0,
    failureCount: 0,
    lastRunAt: null,
    version: 1,
    runs: [],
    schedules: []
  })
  t.match(workflow.id, /^[a-z][a-z0-9]{23}$/)
  t.match(workflow.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.equal(workflow.updatedAt, workflow.createdAt)

  const full = await create(token, {
    name: 'Full',
    description: 'All fields',
    triggerType: 'WEBHOOK',
    triggerConfig: { anything: { nested: true } },
    nodes: [{ id: 'n1', type: 'http_request', config: { method: 'POST', url: 'https://example.com', body: { x: '{{triggerData.body.x}}' } } }],
    edges: [],
    isActive: true,
    domain: 'CLIENTS',
    tags: ['crm', 'crm', 'sync']
  })
  t.match(full, { description: 'All fields', triggerConfig: { anything: { nested: true } }, isActive: true, domain: 'CLIENTS', edges: [] })
  t.same(full.tags, ['crm', 'sync'], 'repeated tags are stored once')
  t.same(full.nodes, [{ id: 'n1', type: 'http_request', config: { method: 'POST', url: 'https://example.com', body: { x: '{{triggerData.body.x}}' } } }])
})

t.test('create errors come in their documented order with their messages', async (t) => {
  const { token } = await newMember()
  const triggerTypes = 'triggerType must be one of EVENT, CRON, WEBHOOK, KEYWORD, MANUAL, AGENT'
  const domains = 'domain must be one of GENERAL, CHAT, PROJECTS, CLIENTS, AGENTS'
  const badNode = [{ id: 'n1', type: 'foo' }]
  const cases: Array<[unknown, string]> = [
    [{}, 'name is required'],
    [undefined, 'name is required'],
    [{ triggerType: 'NOPE', domain: 'NOPE' }, 'name is required'],
    [{ name: '   ' }, 'name is required'],
    [{ name: '', triggerType: 'MANUAL' }, 'name is required'],
    [{ name: null, triggerType: 'MANUAL' }, 'name is required'],
    [{ name: 'x' }, 'triggerType is required'],
    [{ name: 'x', domain: 'NOPE', nodes: badNode }, 'triggerType is required'],
    [{ name: 'x', triggerType: 'NOPE', domain: 'NOPE' }, triggerTypes],
    [{ name: 'x', triggerType: 'manual' }, triggerTypes],
    [{ name: 'x', triggerType: 'MANUAL', domain: 'WHATSAPP', nodes: badNode }, domains],
    [{ name: 'x', triggerType: 'CRON', triggerConfig: { cronExpression: 'bad' }, nodes: badNode }, 'Unknown node type: foo'],
    [{ name: 'x', triggerType: 'MANUAL', nodes: [{ id: 'n1', type: 'set' }, { id: 'n1', type: 'wait' }] }, 'Duplicate node id: n1'],
    [{ name: 'x', triggerType: 'MANUAL', nodes: [{ id: 'n1', type: 'set', next: 'n9' }] }, 'Node n1: next refers to missing node n9'],
    [{ name: 'x', triggerType: 'MANUAL', nodes: [{ id: 'n1', type: 'condition', config: { field: 'a', then: 'n2', else: 'n3' } }, { id: 'n2', type: 'set' }] },
      'Node n1: else refers to missing node n3'],
    [{ name: 'x', triggerType: 'MANUAL', nodes: [{ id: 'n1', type: 'set', next: 'n2' }, { id: 'n2', type: 'wait', next: 'n3' }, { id: 'n3', type: 'set', next: 'n2' }] },
      'Workflow graph has a cycle at n2'],
    [{ name: 'x', triggerType: 'MANUAL', nodes: [{ id: 'n1', type: 'set' }, { id: 'n2', type: 'set' }], edges: [{ source: 'n1', target: 'n2' }, { source: 'n2', target: 'n1' }] },
      'Workflow graph has a cycle at n1'],
    [{ name: 'x', triggerType: 'MANUAL', nodes: [{ id: 'n1', type: 'set' }], edges: [{ source: 'n1', target: 'n4' }] }, 'Edge 0: target refers to missing node n4'],
    [{ name: 'x', triggerType: 'CRON', triggerConfig: { cronExpression: '61 * * * *' } }, 'Invalid cron expression: Constraint error, got value 61 expected range 0-59'],
    [{ name: 'x', triggerType: 'CRON', triggerConfig: { cronExpression: '* * *' } }, 'Invalid cron expression: expected 5 or 6 fields, got 3'],
    [{ name: 'x', triggerType: 'CRON', triggerConfig: { cronExpression: '0 9 * * *', timezone: 'Mars/Base' } }, 'Invalid timezone: Mars/Base'],
    [{ name: 'x', triggerType: 'KEYWORD', triggerConfig: { keywords: ['hi'], match: 'fuzzy' } }, 'triggerConfig.match must be one of contains, exact, startsWith'],
    [{ name: 'x', triggerType: 'MANUAL', nodes: [{ type: 'set' }] }, 'nodes[0].id is required'],
    [{ name: 'x', triggerType: 'MANUAL', isActive: 'yes' }, 'isActive must be boolean']
  ]
  for (const [payload, message] of cases) {
    t.equal(await createRefusal(t, token, payload), message)
  }
  const res = await request({ method: 'POST', url: URL, token, payload: { name: 'x' } })
  t.same(res.json(), { statusCode: 400, code: 'VALIDATION_ERROR', error: 'triggerType is required', message: 'triggerType is required' })
  t.same(await (await request({ method: 'GET', url: URL, token })).json(), [], 'nothing was stored')
})

t.test('length limits answer 400', async (t) => {
  const { token } = await newMember()
  const base = { name: 'x', triggerType: 'MANUAL' }
  t.match(await createRefusal(t, token, { ...base, name: 'n'.repeat(201) }), /^name /)
  t.match(await createRefusal(t, token, { ...base, description: 'd'.repeat(2001) }), /^description /)
  t.match(await createRefusal(t, token, { ...base, tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }), /^tags /)
  t.match(await createRefusal(t, token, { ...base, tags: ['t'.repeat(51)] }), /^tags\[0\] /)
  t.match(await createRefusal(t, token, { ...base, nodes: [{ id: 'i'.repeat(101), type: 'set' }] }), /^nodes\[0\]\.id /)
  const atLimits = await create(token, {
    ...base,
    name: 'n'.repeat(200),
    description: 'd'.repeat(2000),
    tags: Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(50, 't')),
    nodes: [{ id: 'i'.repeat(100), type: 'set' }]
  })
  t.equal((atLimits.tags as string[]).length, 50)
})

t.test('server-owned and unknown fields cannot be set', async (t) => {
  const member = await newMember()
  const other = await newMember()
  const foreignId = createId()
  const res = await request({
    method: 'POST',
    url: URL,
    token: member.token,
    payload: {
      name: 'Sneaky',
      triggerType: 'MANUAL',
      id: foreignId,
      userId: other.id,
      runCount: 99,
      successCount: 98,
      failureCount: 97,
      lastRunAt: '2020-01-01T00:00:00.000Z',
      createdAt: '2020-01-01T00:00:00.000Z',
      updatedAt: '2020-01-01T00:00:00.000Z',
      runs: [{ id: 'r' }],
      schedules: [{ id: 's' }],
      owner: 'me',
      nodes: [{ id: 'n1', type: 'set', config: { values: { a: 1 } }, color: 'red' }]
    }
  })
  t.equal(res.statusCode, 201)
  const workflow = res.json()
  t.not(workflow.id, foreignId)
  t.match(workflow, { runCount: 0, successCount: 0, failureCount: 0, lastRunAt: null, runs: [], schedules: [] })
  t.not(workflow.createdAt, '2020-01-01T00:00:00.000Z')

  const [row] = await sql`select user_id, nodes, run_count from workflows where id = ${workflow.id}`
  t.equal(row!.user_id, member.id, 'owned by the caller')
  t.same(row!.nodes, [{ id: 'n1', type: 'set', config: { values: { a: 1 } } }], 'unknown node keys are not stored')
  t.equal((await request({ method: 'GET', url: `${URL}/${workflow.id}`, token: other.token })).statusCode, 404)

  const patched = await request({
    method: 'PATCH',
    url: `${URL}/${workflow.id}`,
    token: member.token,
    payload: { id: foreignId, userId: other.id, runCount: 5, createdAt: '2020-01-01T00:00:00.000Z', description: 'changed' }
  })
  t.equal(patched.statusCode, 200)
  t.match(patched.json(), { id: workflow.id, runCount: 0, createdAt: workflow.createdAt, description: 'changed' })
  const [after] = await sql`select user_id, run_count from workflows where id = ${workflow.id}`
  t.same(after, { user_id: member.id, run_count: 0 })
})

t.test('list: summaries, newest updatedAt first, each filter alone and combined', async (t) => {
  const { token } = await newMember()
  const made: Record<string, Body> = {}
  for (const [key, payload] of Object.entries({
    chatCron: { triggerType: 'CRON', domain: 'CHAT', isActive: true, tags: ['sales', 'daily'], triggerConfig: { cronExpression: '0 9 * * *' } },
    chatEvent: { triggerType: 'EVENT', domain: 'CHAT', isActive: false, tags: ['sales'], triggerConfig: { eventName: 'client.created' } },
    agent: { triggerType: 'AGENT', domain: 'AGENTS', isActive: true, tags: [] },
    project: { triggerType: 'WEBHOOK', domain: 'PROJECTS', isActive: true, tags: ['daily'] },
    general: { triggerType: 'MANUAL', isActive: false }
  })) {
    made[key] = await create(token, { name: key, ...payload })
  }
  const names = async (query: string): Promise<string[]> => {
    const res = await request({ method: 'GET', url: `${URL}${query}`, token })
    t.equal(res.statusCode, 200, query)
    return res.json().map((w: Body) => w.name)
  }

  const all = await request({ method: 'GET', url: URL, token })
  t.same(all.json().map((w: Body) => w.name), ['general', 'project', 'agent', 'chatEvent', 'chatCron'], 'newest updatedAt first')
  t.same(Object.keys(all.json()[0]).sort(), SUMMARY_FIELDS, 'the summary fields')

  t.same(await names('?domain=CHAT'), ['chatEvent', 'chatCron'])
  t.same(await names('?triggerType=CRON'), ['chatCron'])
  t.same(await names('?triggerType=AGENT'), ['agent'])
  t.same(await names('?isActive=true'), ['project', 'agent', 'chatCron'])
  t.same(await names('?isActive=false'), ['general', 'chatEvent'])
  t.same(await names('?tag=daily'), ['project', 'chatCron'])
  t.same(await names('?tag=none'), [])
  t.same(await names('?domain=CHAT&isActive=true'), ['chatCron'])
  t.same(await names('?domain=CHAT&tag=sales&triggerType=EVENT'), ['chatEvent'])
  t.same(await names('?isActive=true&tag=daily&domain=PROJECTS&triggerType=WEBHOOK'), ['project'])
  t.same(await names('?isActive=true&tag=sales&domain=PROJECTS'), [])
  t.same(await names('?limit=2'), ['general', 'project'])
  t.same(await names('?limit=2&offset=2'), ['agent', 'chatEvent'])
  t.same(await names('?offset=5'), [])

  // A change moves the workflow to the top.
  await request({ method: 'PATCH', url: `${URL}/${made.chatCron!.id}`, token, payload: { tags: ['sales'] } })
  t.same((await names('')).slice(0, 2), ['chatCron', 'general'])

  const refusals: Array<[string, string]> = [
    ['?domain=WHATSAPP', 'domain must be one of GENERAL, CHAT, PROJECTS, CLIENTS, AGENTS'],
    ['?triggerType=CRONJOB', 'triggerType must be one of EVENT, CRON, WEBHOOK, KEYWORD, MANUAL, AGENT'],
    ['?isActive=maybe', 'isActive must be boolean'],
    ['?limit=501', 'limit must be <= 500'],
    ['?limit=0', 'limit must be >= 1'],
    ['?offset=-1', 'offset must be >= 0']
  ]
  for (const [query, message] of refusals) {
    const res = await request({ method: 'GET', url: `${URL}${query}`, token })
    t.equal(res.statusCode, 400, query)
    t.equal(res.json().message, message)
  }
})

t.test('the list is read in index order, for admins (every workflow) as for members', async (t) => {
  const member = await newMember()
  await request({ method: 'POST', url: URL, token: member.token, payload: { name: 'indexed', triggerType: 'MANUAL' } })
  for (const [who, token] of [['admin', adminToken], ['member', member.token]] as const) {
    const plan = await planOf(testApp, token, URL, /from "workflows"/)
    t.notMatch(plan, /Sort|Seq Scan/, `${who}:\n${plan}`)
  }
})

t.test('get one: counters, the latest 10 runs newest first, schedules', async (t) => {
  const member = await newMember()
  const workflow = await create(member.token, { name: 'Busy', triggerType: 'CRON', triggerConfig: { cronExpression: '*/5 * * * *' }, nodes: [{ id: 'n1', type: 'set', config: { values: {} } }] })
  const base = Date.parse('2030-01-01T00:00:00.000Z')
  for (let i = 0; i < 12; i++) {
    const createdAt = new Date(base + i * 60_000)
    const finished = i % 3 !== 0
    await sql`insert into runs (id, workflow_id, user_id, queue, workflow_version, status, created_at, started_at, completed_at, duration_ms)
      values (${`run${String(i).padStart(2, '0')}${createId().slice(0, 10)}`}, ${workflow.id as string}, ${member.id}, 'workflow-runs', 1,
        ${finished ? 'SUCCESS' : 'PENDING'}, ${createdAt.toISOString()}, ${finished ? createdAt.toISOString() : null},
        ${finished ? new Date(createdAt.getTime() + 1500).toISOString() : null}, ${finished ? 1500 : null})`
  }
  await sql`update workflows set run_count = 12, success_count = 8, failure_count = 1, last_run_at = ${new Date(base + 11 * 60_000).toISOString()} where id = ${workflow.id as string}`
  await sql`insert into workflow_schedules (id, workflow_id, cron_expression, timezone, next_run_at)
    values (${createId()}, ${workflow.id as string}, '*/5 * * * *', 'Europe/Paris', ${new Date(base).toISOString()})
    on conflict (workflow_id) do nothing`

  const res = await request({ method: 'GET', url: `${URL}/${workflow.id}`, token: member.token })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body).sort(), DETAIL_FIELDS)
  t.match(body, { runCount: 12, successCount: 8, failureCount: 1, lastRunAt: '2030-01-01T00:11:00.000Z', nodes: [{ id: 'n1', type: 'set' }] })
  t.equal(body.runs.length, 10)
  t.same(body.runs.map((run: Body) => (run.id as string).slice(0, 5)), ['run11', 'run10', 'run09', 'run08', 'run07', 'run06', 'run05', 'run04', 'run03', 'run02'])
  t.same(body.runs[0], {
    id: body.runs[0].id,
    status: 'SUCCESS',
    durationMs: 1500,
    startedAt: '2030-01-01T00:11:00.000Z',
    completedAt: '2030-01-01T00:11:01.500Z',
    createdAt: '2030-01-01T00:11:00.000Z'
  })
  t.match(body.runs[2], { status: 'PENDING', durationMs: null, startedAt: null, completedAt: null }, 'run09 never started')
  t.equal(body.schedules.length, 1)
  t.match(body.schedules[0], { workflowId: workflow.id, cronExpression: '*/5 * * * *', id: String, createdAt: String })
  t.ok(typeof body.schedules[0].nextRunAt === 'string' && body.schedules[0].nextRunAt.endsWith('Z'))
})

t.test('patch changes only the supplied fields', async (t) => {
  const { token } = await newMember()
  const original = await create(token, {
    name: 'Original',
    description: 'keep me',
    triggerType: 'EVENT',
    triggerConfig: { eventName: 'client.created' },
    nodes: [{ id: 'a', type: 'set', config: { values: { x: '1' } }, next: 'b' }, { id: 'b', type: 'wait', config: { minutes: 5 } }],
    edges: [],
    domain: 'CLIENTS',
    tags: ['one']
  })
  const url = `${URL}/${original.id}`
  const { updatedAt: _u, ...unchanged } = original

  const renamed = await request({ method: 'PATCH', url, token, payload: { name: 'Renamed' } })
  t.equal(renamed.statusCode, 200)
  const { updatedAt, ...rest } = renamed.json()
  t.same(rest, { ...unchanged, name: 'Renamed' })
  t.ok(Date.parse(updatedAt) >= Date.parse(original.updatedAt as string))

  const activated = (await request({ method: 'PATCH', url, token, payload: { isActive: true } })).json()
  t.match(activated, { isActive: true, name: 'Renamed', description: 'keep me', domain: 'CLIENTS', tags: ['one'] })
  t.same(activated.nodes, original.nodes)

  const cleared = (await request({ method: 'PATCH', url, token, payload: { description: null, edges: null } })).json()
  t.match(cleared, { description: null, edges: null, isActive: true })

  const same = await request({ method: 'PATCH', url, token, payload: {} })
  t.equal(same.statusCode, 200)
  t.same(same.json(), (await request({ method: 'GET', url, token })).json(), 'an empty patch changes nothing')

  const replaced = (await request({ method: 'PATCH', url, token, payload: { triggerConfig: { eventName: 'client.updated' } } })).json()
  t.same(replaced.triggerConfig, { eventName: 'client.updated' }, 'triggerConfig is replaced as a whole')
})

t.test('patch validates the result and stores nothing when it is refused', async (t) => {
  const { token } = await newMember()
  const workflow = await create(token, {
    name: 'Guarded',
    triggerType: 'MANUAL',
    triggerConfig: { cronExpression: 'not cron at all' },
    nodes: [{ id: 'n1', type: 'set' }]
  })
  const url = `${URL}/${workflow.id}`
  const refusals: Array<[Body, string]> = [
    [{ name: '  ' }, 'name is required'],
    [{ name: null }, 'name is required'],
    [{ name: '  ', triggerType: 'NOPE' }, 'name is required'],
    [{ triggerType: 'NOPE' }, 'triggerType must be one of EVENT, CRON, WEBHOOK, KEYWORD, MANUAL, AGENT'],
    [{ domain: 'NOPE' }, 'domain must be one of GENERAL, CHAT, PROJECTS, CLIENTS, AGENTS'],
    [{ nodes: [{ id: 'n1', type: 'foo' }] }, 'Unknown node type: foo'],
    [{ nodes: [{ id: 'n1', type: 'set', next: 'n1' }] }, 'Workflow graph has a cycle at n1'],
    [{ edges: [{ source: 'n1', target: 'gone' }] }, 'Edge 0: target refers to missing node gone'],
    // The stored expression is checked once the workflow becomes CRON.
    [{ triggerType: 'CRON' }, 'Invalid cron expression: expected 5 or 6 fields, got 4'],
    [{ triggerType: 'CRON', triggerConfig: { cronExpression: '0 9 * * *', timezone: 'Atlantis/City' } }, 'Invalid timezone: Atlantis/City']
  ]
  for (const [payload, message] of refusals) {
    const res = await request({ method: 'PATCH', url, token, payload })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.equal(res.json().message, message)
  }
  t.same((await request({ method: 'GET', url, token })).json(), workflow, 'nothing changed')

  const fixed = await request({ method: 'PATCH', url, token, payload: { triggerType: 'CRON', triggerConfig: { cronExpression: '0 9 * * 1-5', timezone: 'Europe/Berlin' } } })
  t.equal(fixed.statusCode, 200)
  t.match(fixed.json(), { triggerType: 'CRON', triggerConfig: { cronExpression: '0 9 * * 1-5', timezone: 'Europe/Berlin' } })
})

t.test('delete answers 204 and takes the runs with it', async (t) => {
  const member = await newMember()
  const workflow = await create(member.token, { name: 'Doomed', triggerType: 'MANUAL' })
  await sql`insert into runs (id, workflow_id, user_id, queue, workflow_version) values (${createId()}, ${workflow.id as string}, ${member.id}, 'workflow-runs', 1)`
  const url = `${URL}/${workflow.id}`
  const res = await request({ method: 'DELETE', url, token: member.token })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.same((await request({ method: 'GET', url, token: member.token })).json(), notFoundBody)
  t.same((await request({ method: 'DELETE', url, token: member.token })).json(), notFoundBody)
  const [{ count }] = await sql`select count(*)::int as count from runs where workflow_id = ${workflow.id as string}` as unknown as [{ count: number }]
  t.equal(count, 0)
})

t.test('malformed and unknown ids answer 404 Workflow not found', async (t) => {
  const { token } = await newMember()
  for (const id of ['not-a-cuid!', 'UPPERCASE', '1startswithdigit', 'x'.repeat(100), 'x'.repeat(5000), encodeURIComponent("' or 1=1 --"), createId()]) {
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await request({ method, url: `${URL}/${id}`, token, payload: method === 'PATCH' ? { name: 'x' } : undefined })
      t.equal(res.statusCode, 404, `${method} ${id.slice(0, 20)}`)
      t.same(res.json(), notFoundBody)
    }
  }
})

t.test('one user cannot see or change another user\'s workflow; an admin sees all', async (t) => {
  const owner = await newMember()
  const intruder = await newMember()
  const workflow = await create(owner.token, { name: 'Private', triggerType: 'MANUAL', tags: ['secret'] })
  const url = `${URL}/${workflow.id}`

  for (const [method, payload] of [['GET', undefined], ['PATCH', { name: 'Mine now' }], ['DELETE', undefined]] as const) {
    const res = await request({ method, url, token: intruder.token, payload })
    t.equal(res.statusCode, 404, `${method} by another member`)
    t.same(res.json(), notFoundBody, 'exactly like a missing workflow')
  }
  t.same((await request({ method: 'GET', url: `${URL}?tag=secret`, token: intruder.token })).json(), [])
  t.same((await request({ method: 'GET', url, token: owner.token })).json(), workflow, 'untouched')

  const adminList = (await request({ method: 'GET', url: `${URL}?tag=secret`, token: adminToken })).json()
  t.same(adminList.map((w: Body) => w.id), [workflow.id])
  t.equal((await request({ method: 'GET', url, token: adminToken })).statusCode, 200)
  const adminPatch = await request({ method: 'PATCH', url, token: adminToken, payload: { isActive: true } })
  t.equal(adminPatch.statusCode, 200)
  const [row] = await sql`select user_id from workflows where id = ${workflow.id as string}`
  t.equal(row!.user_id, owner.id, 'an admin change keeps the owner')
})

t.test('every route needs a token', async (t) => {
  const id = createId()
  for (const [method, url] of [['POST', URL], ['GET', URL], ['GET', `${URL}/${id}`], ['PATCH', `${URL}/${id}`], ['DELETE', `${URL}/${id}`]] as const) {
    const res = await request({ method, url, payload: method === 'POST' || method === 'PATCH' ? { name: 'x', triggerType: 'MANUAL' } : undefined })
    t.equal(res.statusCode, 401, `${method} ${url}`)
    t.equal(res.json().message, 'Unauthorized')
  }
})

t.test('the OpenAPI document shows every route with its schemas', async (t) => {
  const doc = (await request({ method: 'GET', url: '/docs/json' })).json()
  const collection = doc.paths['/api/automation/workflows']
  const item = doc.paths['/api/automation/workflows/{id}']
  t.ok(collection.post.requestBody.content['application/json'].schema.properties.nodes)
  t.same(collection.post.requestBody.content['application/json'].schema.required, ['name', 'triggerType'])
  t.ok(collection.post.responses['201'].content['application/json'].schema.properties.runs)
  t.same(collection.get.parameters.map((p: Body) => p.name).sort(), ['domain', 'isActive', 'limit', 'offset', 'tag', 'triggerType'])
  t.ok(collection.get.responses['200'])
  for (const method of ['get', 'patch', 'delete']) {
    t.ok(item[method], `${method} /{id}`)
    t.ok(item[method].responses['404'], `${method} documents 404`)
  }
  t.ok(item.delete.responses['204'])
  t.ok(item.patch.requestBody.content['application/json'].schema.properties.isActive)
})
