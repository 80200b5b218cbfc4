import t from 'tap'
import { buildTestApp } from './helper.ts'

const { app, request, adminToken, newMember, client } = await buildTestApp(t)
const sql = app.database.sql

const URL = '/api/automation/workflows'

/** The reference workflow: code computes a total → condition on it → http_request, else send_chat. */
const referenceNodes = (code = 'return { total: input.triggerData.body.items.length }') => [
  { id: 'code', type: 'code', config: { code }, next: 'check' },
  { id: 'check', type: 'condition', config: { field: 'code.total', operator: 'gt', value: 100, then: 'notify', else: 'reply' } },
  { id: 'notify', type: 'http_request', config: { method: 'POST', url: 'https://example.test/orders', body: { total: '{{code.total}}', label: 'Total {{ code.total | default: \'0\' }}' } } },
  { id: 'reply', type: 'send_chat', config: { phone: '{{triggerData.body.phone}}', text: 'Hi {{triggerData.body.name}}, your total is {{code.total}}' } }
]

const rename = async (token: string, id: string, payload: Record<string, unknown>) =>
  request({ method: 'POST', url: `${URL}/${id}/rename-node`, token, payload })

t.test('a rename rewrites links, templates and the condition’s field, as a new version in the audit log', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token, {
    triggerType: 'WEBHOOK',
    nodes: referenceNodes(),
    edges: [{ source: 'code', target: 'check' }]
  })
  const res = await rename(member.token, id, { from: 'code', to: 'compute_total' })
  t.equal(res.statusCode, 200, res.body)
  const workflow = res.json()
  t.equal(workflow.version, 2, 'a new version')
  t.same(workflow.nodes.map((node: { id: string }) => node.id), ['compute_total', 'check', 'notify', 'reply'])
  t.equal(workflow.nodes[1].config.field, 'compute_total.total')
  t.same(workflow.nodes[2].config.body, { total: '{{compute_total.total}}', label: 'Total {{ compute_total.total | default: \'0\' }}' })
  t.equal(workflow.nodes[3].config.text, 'Hi {{triggerData.body.name}}, your total is {{compute_total.total}}')
  t.same(workflow.edges, [{ source: 'compute_total', target: 'check' }])

  const stored = (await request({ method: 'GET', url: `${URL}/${id}`, token: member.token })).json()
  t.same(stored.nodes, workflow.nodes, 'what the answer shows is what is stored')
  const version = (await request({ method: 'GET', url: `${URL}/${id}/versions/2`, token: member.token })).json()
  t.equal(version.nodes[0].id, 'compute_total', 'the version holds the renamed definition')

  const [audit] = await sql<Array<{ action: string, details: Record<string, unknown> }>>`
    select action, details from audit_log where target_id = ${id} and action = 'workflow.updated'`
  t.match(audit, {
    action: 'workflow.updated',
    details: {
      fields: ['nodes', 'edges'],
      renamedNode: {
        from: 'code',
        to: 'compute_total',
        references: [
          { nodeId: 'check', field: 'field' },
          // The stored config's keys come back in jsonb's order: label before total.
          { nodeId: 'notify', field: 'body.label' },
          { nodeId: 'notify', field: 'body.total' },
          { nodeId: 'reply', field: 'text' },
          { nodeId: 'compute_total', field: 'edges[0]' }
        ]
      }
    }
  })
})

t.test('a reference inside code is listed and refuses the rename, until it is forced', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token, {
    nodes: [
      { id: 'fetch', type: 'set', config: { values: { total: 3 } }, next: 'js' },
      { id: 'js', type: 'code', config: { code: 'return { doubled: input.fetch.total * 2 }' }, next: 'after' },
      { id: 'after', type: 'set', config: { values: { total: '{{fetch.total}}' } } }
    ]
  })
  const refused = await rename(member.token, id, { from: 'fetch', to: 'load' })
  t.equal(refused.statusCode, 409)
  t.same(refused.json(), {
    statusCode: 409,
    code: 'NODE_REFERENCES_UNREWRITABLE',
    error: 'References to fetch inside code cannot be rewritten: change the code, or rename with force',
    message: 'References to fetch inside code cannot be rewritten: change the code, or rename with force',
    details: { references: [{ nodeId: 'js', field: 'code' }] }
  })
  const unchanged = (await request({ method: 'GET', url: `${URL}/${id}`, token: member.token })).json()
  t.equal(unchanged.version, 1, 'nothing was saved')
  t.equal(unchanged.nodes[0].id, 'fetch')

  const forced = await rename(member.token, id, { from: 'fetch', to: 'load', force: true })
  t.equal(forced.statusCode, 200, forced.body)
  const workflow = forced.json()
  t.equal(workflow.version, 2)
  t.same(workflow.nodes.map((node: { id: string }) => node.id), ['load', 'js', 'after'])
  t.equal(workflow.nodes[1].config.code, 'return { doubled: input.fetch.total * 2 }', 'the code is left as it was')
  t.same(workflow.nodes[2].config.values, { total: '{{load.total}}' })
})

t.test('refusals: a taken id, an unknown node, an invalid id, another owner’s workflow, a key without workflows:write', async (t) => {
  const member = await newMember()
  const id = await client.createWorkflow(member.token, { nodes: referenceNodes() })
  const error = (statusCode: number, code: string, message: string) => ({ statusCode, code, error: message, message })

  const duplicate = await rename(member.token, id, { from: 'code', to: 'reply' })
  t.same([duplicate.statusCode, duplicate.json()], [400, error(400, 'INVALID_WORKFLOW_GRAPH', 'Duplicate node id: reply')])
  const unknown = await rename(member.token, id, { from: 'nope', to: 'x' })
  t.same([unknown.statusCode, unknown.json()], [400, error(400, 'VALIDATION_ERROR', 'from names no node of the workflow: nope')])
  const tooLong = await rename(member.token, id, { from: 'code', to: 'x'.repeat(101) })
  t.same([tooLong.statusCode, tooLong.json().code], [400, 'VALIDATION_ERROR'], 'to follows the rules of node ids (100 characters)')
  const empty = await rename(member.token, id, { from: 'code', to: '' })
  t.equal(empty.statusCode, 400)
  const unreadable = await rename(member.token, id, { from: 'code', to: 'compute.total' })
  t.same([unreadable.statusCode, unreadable.json().code], [400, 'VALIDATION_ERROR'], 'templates could not read a dotted id')

  const other = await newMember()
  const hidden = await rename(other.token, id, { from: 'code', to: 'x' })
  t.same([hidden.statusCode, hidden.json().code], [404, 'WORKFLOW_NOT_FOUND'], 'another member’s workflow is not found')
  t.equal((await rename(adminToken, id, { from: 'reply', to: 'answer' })).statusCode, 200, 'an admin renames any workflow')

  const readOnly = await client.call('POST', '/api/auth/api-keys', { token: member.token, body: { name: 'ro', scopes: ['workflows:read'] } })
  t.equal(readOnly.status, 201, JSON.stringify(readOnly.body))
  const withKey = await rename((readOnly.body as { key: string }).key, id, { from: 'code', to: 'x' })
  t.same([withKey.statusCode, withKey.json().code], [403, 'FORBIDDEN'], 'renaming needs workflows:write')

  const stored = (await request({ method: 'GET', url: `${URL}/${id}`, token: member.token })).json()
  t.same(stored.nodes.map((node: { id: string }) => node.id), ['code', 'check', 'notify', 'answer'], 'only the admin’s rename was saved')
  t.equal(stored.nodes[1].config.else, 'answer')
})
