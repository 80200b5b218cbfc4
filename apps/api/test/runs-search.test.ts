import t from 'tap'
import { indexNewRuns } from '@switchboard/core/runs'
import { buildTestApp } from './helper.ts'
import { planOf } from './query-plan.ts'

/**
 * Finding runs (README, Finding runs): `?q=` over a run's id, trigger data and error through run_search,
 * `?tag=` over the tags `POST …/fire?tags=` or the workflow's runTags give it, each scoped to the caller's
 * runs, bounded, and with no character of a query an operator.
 */
const testApp = await buildTestApp(t)
const { app, request, adminToken, newMember } = testApp
const sql = app.database.sql

const fire = async (id: string, token: string, payload: unknown, query = '') =>
  request({ method: 'POST', url: `/api/automation/workflows/${id}/fire${query}`, token, payload: payload as object })

/** The worker indexes runs behind their starts (README, Finding runs); here without its lag, at once. */
const list = async (token: string, query: Record<string, string>) => {
  await indexNewRuns(app.database.db, 0)
  const res = await request({ method: 'GET', url: `/api/automation/runs?${new URLSearchParams(query).toString()}`, token })
  return { status: res.statusCode, body: res.json() }
}

const idsOf = (runs: Array<{ id: string }>): string[] => runs.map((run) => run.id).sort()

t.test('q finds runs by a trigger data value, their id and their error; every word must match', async (t) => {
  const member = await newMember()
  const workflowId = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  const order = (await fire(workflowId, member.token, { order: { id: 'A-1234', customer: 'Maria Lopez' } })).json().runId
  const other = (await fire(workflowId, member.token, { order: { id: 'B-9', customer: 'Maria Costa' } })).json().runId
  const failed = (await fire(workflowId, member.token, { order: { id: 'C-77' } })).json().runId
  await sql`update runs set status = 'FAILED', error = 'http_request: the partner answered 502 Bad Gateway' where id = ${failed}`

  t.same(idsOf((await list(member.token, { q: '1234' })).body), [order], 'a value inside the trigger data')
  t.same(idsOf((await list(member.token, { q: 'maria' })).body), [order, other].sort(), 'any case')
  t.same(idsOf((await list(member.token, { q: 'maria lopez' })).body), [order], 'every word')
  t.same(idsOf((await list(member.token, { q: '502' })).body), [failed], 'the error text, written after the run started')
  t.same(idsOf((await list(member.token, { q: order })).body), [order], 'the run id')
  t.same(idsOf((await list(member.token, { q: 'maria', workflowId, status: 'PENDING' })).body), [order, other].sort(), 'with the other filters')
  t.same((await list(member.token, { q: 'nowhere' })).body, [])

  const stranger = await newMember()
  t.same((await list(stranger.token, { q: '1234' })).body, [], 'another user\'s runs are not found')
  t.same(idsOf((await list(adminToken, { q: '1234' })).body), [order], 'an admin finds every user\'s')
})

t.test('q is plain words: operators, regex characters, % and a 10 KiB string are bounded and never injected', async (t) => {
  const member = await newMember()
  const workflowId = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  const run = (await fire(workflowId, member.token, { note: '100% done (a|b)' })).json().runId
  for (const q of ['100%', '(a|b)', 'a & !b', "'; drop table runs; --", '.*', '%', ':*', '\\']) {
    const res = await list(member.token, { q })
    t.equal(res.status, 200, `q=${q}`)
    t.ok(Array.isArray(res.body))
  }
  t.same(idsOf((await list(member.token, { q: '100%' })).body), [run], 'the words of 100% match')
  t.same((await list(member.token, { q: '%' })).body, [], 'a query of no words matches nothing')
  const long = await list(member.token, { q: 'x'.repeat(10 * 1024) })
  t.equal(long.status, 400)
  t.equal(long.body.message, 'q must be at most 200 characters')
  t.equal((await sql`select count(*)::int as n from runs`)[0].n > 0, true, 'runs is still there')
})

t.test('tags: from ?tags= on fire, else the workflow\'s runTags rendered over the trigger data; ?tag= filters', async (t) => {
  const member = await newMember()
  const tagged = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  const fired = await fire(tagged, member.token, { order: 1 }, '?tags=vip, eu ,vip')
  t.equal(fired.statusCode, 202)
  const run = await request({ method: 'GET', url: `/api/automation/runs/${fired.json().runId}`, token: member.token })
  t.same(run.json().tags, ['vip', 'eu'], 'trimmed, each once')

  const templated = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL', runTags: 'order:{{triggerData.order.id}}, {{triggerData.region}}' })
  const workflow = await request({ method: 'GET', url: `/api/automation/workflows/${templated}`, token: member.token })
  t.equal(workflow.json().runTags, 'order:{{triggerData.order.id}}, {{triggerData.region}}')
  const first = (await fire(templated, member.token, { order: { id: 1234 }, region: 'eu' })).json().runId
  const second = (await fire(templated, member.token, { order: { id: 99 } })).json().runId
  const explicit = (await fire(templated, member.token, { order: { id: 5 } }, '?tags=manual')).json().runId
  const tagsOf = async (runId: string) => (await request({ method: 'GET', url: `/api/automation/runs/${runId}`, token: member.token })).json().tags
  t.same(await tagsOf(first), ['order:1234', 'eu'])
  t.same(await tagsOf(second), ['order:99'], 'a placeholder rendering empty makes no tag')
  t.same(await tagsOf(explicit), ['manual'], '?tags= replaces runTags')

  t.same(idsOf((await list(member.token, { tag: 'order:1234' })).body), [first])
  t.same(idsOf((await list(member.token, { tag: 'eu' })).body), [fired.json().runId, first].sort())
  t.same(idsOf((await list(member.token, { tag: 'eu', q: '1234' })).body), [first], 'with q')
  t.same((await list(member.token, { tag: 'x'.repeat(51) })).body.message, 'tag must be 1 to 50 characters')

  await sql`update runs set status = 'FAILED' where id = ${first}`
  const retried = await request({ method: 'POST', url: `/api/automation/runs/${first}/retry`, token: member.token, payload: {} })
  t.equal(retried.statusCode, 202)
  t.same(await tagsOf(retried.json().runId), ['order:1234', 'eu'], 'a replay keeps its first run\'s tags')

  const tooMany = await fire(tagged, member.token, {}, `?tags=${Array.from({ length: 21 }, (_, i) => `t${i}`).join(',')}`)
  t.equal(tooMany.statusCode, 400)
  t.equal(tooMany.json().message, 'tags must hold at most 20 tags')
  const bad = await request({ method: 'PATCH', url: `/api/automation/workflows/${templated}`, token: member.token, payload: { runTags: '{{triggerData.order | nosuchfilter}}' } })
  t.equal(bad.statusCode, 400)
  t.match(bad.json().message, /^runTags: /)
  const cleared = await request({ method: 'PATCH', url: `/api/automation/workflows/${templated}`, token: member.token, payload: { runTags: null } })
  t.equal(cleared.json().runTags, null)
  t.equal(cleared.json().version, workflow.json().version, 'a setting: no new version')
})

t.test('runTags tag the runs of every trigger: the inbound webhook (its query stays triggerData) and events', async (t) => {
  const member = await newMember()
  const hooked = await testApp.client.createWorkflow(member.token, { triggerType: 'WEBHOOK', runTags: 'partner:{{triggerData.query.partner}}, {{triggerData.body.kind}}' })
  const res = await request({ method: 'POST', url: `/api/automation/webhook/${hooked}?partner=acme&tags=ignored`, payload: { kind: 'refund' } })
  t.match(res.json(), { status: 'received' })
  const [hookRun] = await sql<Array<{ tags: string[], triggerData: { query: Record<string, string> } }>>`select tags, trigger_data as "triggerData" from runs where workflow_id = ${hooked}`
  t.same(hookRun?.tags, ['partner:acme', 'refund'])
  t.match(hookRun?.triggerData.query, { partner: 'acme', tags: 'ignored' }, 'the query is the webhook\'s triggerData, not its tags')

  const listening = await testApp.client.createWorkflow(member.token, { triggerType: 'EVENT', triggerConfig: { eventName: 'order.paid' }, runTags: 'paid,{{triggerData.currency}}' })
  const emitted = await request({ method: 'POST', url: '/api/automation/events', token: member.token, payload: { name: 'order.paid', payload: { currency: 'EUR' } } })
  t.equal(emitted.statusCode, 202)
  t.same((await list(member.token, { tag: 'EUR', workflowId: listening })).body.map((run: { tags: string[] }) => run.tags), [['paid', 'EUR']])
})

/**
 * A new member with 6,000 runs saying `everywhere`, one a second back from now, every 1,000th FAILED, their ids
 * `prefix` and the number (`common000001` the newest).
 */
async function withCommonRuns (prefix: string) {
  const member = await newMember()
  const workflowId = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  await sql`
    insert into runs (id, workflow_id, user_id, status, queue, workflow_version, trigger_data, created_at)
    select ${prefix} || lpad(i::text, 6, '0'), ${workflowId}, ${member.id}, case when i % 1000 = 0 then 'FAILED' else 'SUCCESS' end, 'workflow-runs', 1,
      jsonb_build_object('kind', 'everywhere'), now() - make_interval(secs => i)
    from generate_series(1, 6000) as i`
  await indexAsMigrated(member.id)
  return member
}

/** Runs made older than the runs indexed already, indexed as the migration indexes the runs it finds. */
async function indexAsMigrated (userId: string): Promise<void> {
  await sql`insert into run_search (run_id, user_id, workflow_id, created_at, tags, terms)
    select id, user_id, workflow_id, created_at, tags, run_search_terms(id, trigger_data, error) from runs where user_id = ${userId}`
}

t.test('a rarer word\'s matches page newest first, runs created at the same moment by their ids', async (t) => {
  const member = await newMember()
  const workflowId = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  // few07 is created at the same moment as few06: it comes first, its id being the greater.
  await sql`
    insert into runs (id, workflow_id, user_id, status, queue, workflow_version, trigger_data, created_at)
    select 'few' || lpad(i::text, 2, '0'), ${workflowId}, ${member.id}, case when i % 2 = 0 then 'FAILED' else 'SUCCESS' end, 'workflow-runs', 1,
      jsonb_build_object('kind', 'seldom'), date_trunc('second', now()) - make_interval(secs => case when i = 7 then 6 else i end)
    from generate_series(1, 12) as i`
  await indexAsMigrated(member.id)
  const page = async (query: Record<string, string>) => (await list(member.token, { q: 'seldom', ...query })).body.map((run: { id: string }) => run.id)
  t.same(await page({ limit: '3', offset: '3' }), ['few04', 'few05', 'few07'])
  t.same(await page({ limit: '1', offset: '5' }), ['few07'], 'the first of two runs of one moment')
  t.same(await page({ limit: '2', offset: '6' }), ['few06', 'few08'], 'the second')
  t.same(await page({ limit: '3', offset: '10' }), ['few11', 'few12'], 'the last page')
  t.same(await page({ status: 'FAILED', limit: '2', offset: '2' }), ['few06', 'few08'], 'with a filter only runs hold')
})

t.test('a common word (more than 5,000 runs) is read newest first, with the other filters and paging', async (t) => {
  const member = await withCommonRuns('common')
  const newest = await list(member.token, { q: 'everywhere', limit: '3' })
  t.same(newest.body.map((run: { id: string }) => run.id), ['common000001', 'common000002', 'common000003'])
  t.same((await list(member.token, { q: 'everywhere', limit: '2', offset: '3' })).body.map((run: { id: string }) => run.id), ['common000004', 'common000005'])
  t.same((await list(member.token, { q: 'everywhere', status: 'FAILED', limit: '2' })).body.map((run: { id: string }) => run.id), ['common001000', 'common002000'])
  t.same((await list(member.token, { q: 'everywhere', status: 'FAILED', limit: '10' })).body.map((run: { id: string }) => run.id),
    ['common001000', 'common002000', 'common003000', 'common004000', 'common005000', 'common006000'], 'beyond the newest 5,000 runs when they fill no page')
  t.same((await list(member.token, { q: 'everywhere nowhere' })).body, [], 'and every word still counts')
})

t.test('a search reads run_search in its creation order and by its indexes, never by scanning or sorting it', async (t) => {
  const member = await withCommonRuns('planned')
  await sql`analyze runs, run_search`
  const url = '/api/automation/runs?q=everywhere&tag=eu'
  const window = /from \(select .* from "run_search" "s" .* limit \$\d+\) "w"/
  for (const [viewer, token] of [['a member', member.token], ['an admin', adminToken]] as const) {
    const plan = await planOf(testApp, token, url, window)
    t.match(plan, /Index Scan using run_search_(user_)?created_idx on run_search/, `${viewer}'s newest rows, in an index's order`)
    t.match(plan, /Index Scan using runs_pkey on runs/, `${viewer}'s: each match's run by its key`)
    t.notMatch(plan, /Sort/, `${viewer}'s: no sort`)
  }
  t.match(await planOf(testApp, member.token, url, /^select "run_id", "created_at" from "run_search" "s"/), /run_search_(terms|tags)_idx/, 'the matches, by the words\' or the tags\' index')
})
