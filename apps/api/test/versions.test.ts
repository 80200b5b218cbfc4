import t from 'tap'
import { buildTestApp } from './helper.ts'

const testApp = await buildTestApp(t)
const { app, request, adminToken, newMember, client } = testApp
const sql = app.database.sql

const URL = '/api/automation/workflows'
const workflowNotFound = { statusCode: 404, code: 'WORKFLOW_NOT_FOUND', error: 'Workflow not found', message: 'Workflow not found' }
const versionNotFound = { statusCode: 404, code: 'WORKFLOW_VERSION_NOT_FOUND', error: 'Workflow version not found', message: 'Workflow version not found' }

const setNode = (id: string, value: string) => ({ id, type: 'set', config: { values: { value } } })

async function patch (token: string, id: string, payload: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await request({ method: 'PATCH', url: `${URL}/${id}`, token, payload })
  if (res.statusCode !== 200) throw new Error(`PATCH refused: ${res.body}`)
  return res.json()
}

const versionsOf = async (token: string, id: string, query = ''): Promise<any[]> => {
  const res = await request({ method: 'GET', url: `${URL}/${id}/versions${query}`, token })
  if (res.statusCode !== 200) throw new Error(`versions refused: ${res.body}`)
  return res.json()
}

t.test('create is version 1; a change of trigger, nodes or edges makes the next; other changes and identical values make none', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token, { nodes: [setNode('a', 'one')] })
  t.equal((await patch(member.token, id, { name: 'renamed', isActive: false, tags: ['x'] })).version, 1, 'name, activity and tags are not the definition')
  t.equal((await patch(member.token, id, { nodes: [setNode('a', 'one')], triggerType: 'MANUAL' })).version, 1, 'the same definition again is no new version')
  t.equal((await patch(member.token, id, { nodes: [setNode('a', 'two')] })).version, 2)
  t.equal((await patch(member.token, id, { edges: [] })).version, 3, 'edges null → []')
  t.equal((await patch(member.token, id, { triggerType: 'WEBHOOK' })).version, 4)
  t.equal((await patch(member.token, id, { triggerConfig: { note: 'x' } })).version, 5)

  const versions = await versionsOf(member.token, id)
  t.same(versions.map((v) => v.version), [5, 4, 3, 2, 1], 'newest first')
  t.same(Object.keys(versions[0]).sort(), ['createdAt', 'createdBy', 'restoredFrom', 'triggerType', 'version'], 'the list carries no definition')
  t.ok(versions.every((v) => v.createdBy === member.id && v.restoredFrom === null))
  t.match(versions.map((v) => v.triggerType), ['WEBHOOK', 'WEBHOOK', 'MANUAL', 'MANUAL', 'MANUAL'])

  t.same((await versionsOf(member.token, id, '?limit=2')).map((v) => v.version), [5, 4], 'paged like other lists')
  t.same((await versionsOf(member.token, id, '?limit=2&offset=3')).map((v) => v.version), [2, 1])
  t.same(await versionsOf(member.token, id, '?offset=9'), [])
  t.equal((await request({ method: 'GET', url: `${URL}/${id}/versions?limit=501`, token: member.token })).statusCode, 400)

  const first = (await request({ method: 'GET', url: `${URL}/${id}/versions/1`, token: member.token })).json()
  t.match(first, { workflowId: id, version: 1, triggerType: 'MANUAL', triggerConfig: {}, nodes: [setNode('a', 'one')], edges: null, createdBy: member.id })
  const second = (await request({ method: 'GET', url: `${URL}/${id}/versions/2`, token: member.token })).json()
  t.same(second.nodes, [setNode('a', 'two')])
})

t.test('the edge rule: a new version of nodes or edges reads them by all; a change of trigger alone and a restore keep the rule of the version they copy', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token, { nodes: [setNode('a', 'one'), setNode('b', 'two'), setNode('c', 'three')], edges: [{ source: 'a', target: 'b' }, { source: 'a', target: 'c' }] })
  const ruleOf = async (version: number): Promise<string> => (await request({ method: 'GET', url: `${URL}/${id}/versions/${version}`, token: member.token })).json().edgeRule
  t.equal(await ruleOf(1), 'all')
  // As migration 0030 left the versions stored before the rule.
  await sql`update workflow_versions set edge_rule = 'first' where workflow_id = ${id}`
  t.equal((await patch(member.token, id, { triggerType: 'WEBHOOK' })).version, 2)
  t.equal(await ruleOf(2), 'first', 'the same graph, followed as before')
  t.equal((await patch(member.token, id, { nodes: [setNode('a', 'one'), setNode('b', 'two'), setNode('c', '3')] })).version, 3)
  t.equal(await ruleOf(3), 'all', 'a graph saved now')
  const restored = await request({ method: 'POST', url: `${URL}/${id}/versions/2/restore`, token: member.token })
  t.equal(restored.statusCode, 200, restored.body)
  t.equal(await ruleOf(4), 'first', 'a restore brings its version\'s rule back')
})

t.test('restore makes an old version current as a new version, and runs carry the version they start with', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token, { nodes: [setNode('a', 'one')] })
  const firstRun = await client.fire(member.token, id)
  await patch(member.token, id, { nodes: [setNode('b', 'two')] })
  const secondRun = await client.fire(member.token, id)

  const res = await request({ method: 'POST', url: `${URL}/${id}/versions/1/restore`, token: member.token })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { id, version: 3, nodes: [setNode('a', 'one')] })
  t.match((await versionsOf(member.token, id))[0], { version: 3, restoredFrom: 1, createdBy: member.id })
  const thirdRun = await client.fire(member.token, id)

  t.equal((await client.getRun(member.token, firstRun)).workflowVersion, 1)
  t.equal((await client.getRun(member.token, secondRun)).workflowVersion, 2)
  t.equal((await client.getRun(member.token, thirdRun)).workflowVersion, 3)
  t.same((await client.runsOf(member.token, id)).map((run) => run.workflowVersion), [3, 2, 1], 'the run list carries it too')

  t.equal((await request({ method: 'POST', url: `${URL}/${id}/versions/3/restore`, token: member.token })).json().version, 4, 'restoring the current version still records the restore')
})

t.test('a version that does not exist, or a malformed number, is 404 Workflow version not found', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token)
  for (const n of ['2', '0', '-1', 'abc', '1.5', '01', '99999999999', '2147483648']) {
    const res = await request({ method: 'GET', url: `${URL}/${id}/versions/${n}`, token: member.token })
    t.same([res.statusCode, res.json()], [404, versionNotFound], `GET version ${n}`)
    const restore = await request({ method: 'POST', url: `${URL}/${id}/versions/${n}/restore`, token: member.token })
    t.same([restore.statusCode, restore.json()], [404, versionNotFound], `restore ${n}`)
  }
  t.same((await request({ method: 'GET', url: `${URL}/not-a-cuid/versions`, token: member.token })).json(), workflowNotFound)
})

t.test('a member never sees another member\'s versions: every answer is Workflow not found; an admin sees and restores them', async (t) => {
  const owner = await newMember()
  const intruder = await newMember()
  const id = await client.createWorkflow(owner.token, { nodes: [setNode('a', 'one')] })
  await patch(owner.token, id, { nodes: [setNode('a', 'two')] })
  for (const [method, url] of [['GET', `${URL}/${id}/versions`], ['GET', `${URL}/${id}/versions/1`], ['POST', `${URL}/${id}/versions/1/restore`]] as const) {
    const res = await request({ method, url, token: intruder.token })
    t.same([res.statusCode, res.json()], [404, workflowNotFound], `${method} ${url}`)
  }
  t.equal((await versionsOf(owner.token, id)).length, 2, 'the intruder\'s restore changed nothing')

  t.equal((await versionsOf(adminToken, id)).length, 2)
  const restored = await request({ method: 'POST', url: `${URL}/${id}/versions/1/restore`, token: adminToken })
  t.equal(restored.statusCode, 200)
  const [newest] = await versionsOf(owner.token, id)
  const [admin] = await sql`select id from users where role = 'admin' limit 1`
  t.match(newest, { version: 3, restoredFrom: 1, createdBy: admin!.id }, 'the version names who restored it')
})

t.test('a restore is checked like a change: a version whose trigger no longer passes today\'s limits is refused', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token, { triggerType: 'CRON', isActive: false, triggerConfig: { cronExpression: '*/5 * * * *' } })
  await patch(member.token, id, { triggerConfig: { cronExpression: '0 * * * *' } })
  // The first version as a less careful release would have stored it.
  await sql`update workflow_versions set trigger_config = ${JSON.stringify({ cronExpression: '* * * * * *' })}::jsonb where workflow_id = ${id} and version = 1`
  const res = await request({ method: 'POST', url: `${URL}/${id}/versions/1/restore`, token: member.token })
  t.equal(res.statusCode, 400)
  t.equal(res.json().message, 'Cron expression fires too often (minimum interval 60 seconds)')
  t.equal((await versionsOf(member.token, id)).length, 2, 'nothing was recorded')
})

t.test('versions go with their workflow', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token)
  await patch(member.token, id, { nodes: [] })
  t.equal((await request({ method: 'DELETE', url: `${URL}/${id}`, token: member.token })).statusCode, 204)
  t.same(await sql`select version from workflow_versions where workflow_id = ${id}`, [])
})

t.test('the version routes need a token and appear in the OpenAPI document with their answers', async (t) => {
  const id = await client.createWorkflow(adminToken)
  for (const [method, url] of [['GET', `${URL}/${id}/versions`], ['GET', `${URL}/${id}/versions/1`], ['POST', `${URL}/${id}/versions/1/restore`]] as const) {
    t.equal((await request({ method, url })).statusCode, 401, `${method} ${url}`)
  }
  const doc = (await request({ method: 'GET', url: '/docs/json' })).json()
  const list = doc.paths['/api/automation/workflows/{id}/versions'].get
  t.ok(list.responses['200'].content['application/json'].schema.items.properties.createdBy)
  t.ok(doc.paths['/api/automation/workflows/{id}/versions/{n}'].get.responses['404'])
  t.ok(doc.paths['/api/automation/workflows/{id}/versions/{n}/restore'].post.responses['200'].content['application/json'].schema.properties.version)
  t.ok(doc.paths['/api/automation/runs/{id}'].get.responses['200'].content['application/json'].schema.properties.workflowVersion)
})
