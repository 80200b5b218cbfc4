import t from 'tap'
import { buildTestApp } from './helper.ts'

const testApp = await buildTestApp(t)
const { request, newMember, client } = testApp

const URL = '/api/automation/workflows'
type Body = Record<string, any>

const exportOf = async (token: string, id: string): Promise<Body> => {
  const res = await request({ method: 'GET', url: `${URL}/${id}/export`, token })
  if (res.statusCode !== 200) throw new Error(`export refused: ${res.body}`)
  return res.json()
}
const importAs = async (token: string, payload: unknown) => request({ method: 'POST', url: `${URL}/import`, token, payload: payload as Body })
const credential = async (token: string, payload: Body): Promise<Body> =>
  (await request({ method: 'POST', url: '/api/automation/credentials', token, payload })).json()

const SECRETS = { header: 'Bearer inline-header-secret-41', signature: 'inline-signing-secret-42', password: 'inline-url-password-43', token: 'stored-token-44' }

t.test('an export is the definition alone: no ids, owner, counters, activity, version or secrets; credentials by name', async (t) => {
  const member = await newMember()
  const stored = await credential(member.token, { name: 'crm', type: 'bearer', data: { token: SECRETS.token } })
  await credential(member.token, { name: 'vendor', type: 'generic', data: { apiKey: 'vendor-key-1' } })
  const created = await request({
    method: 'POST',
    url: URL,
    token: member.token,
    payload: {
      name: 'Sync',
      description: 'to the CRM',
      triggerType: 'WEBHOOK',
      triggerConfig: { note: 'kept' },
      isActive: true,
      domain: 'CLIENTS',
      tags: ['crm'],
      nodes: [
        { id: 'verify', type: 'verify_signature', config: { secret: SECRETS.signature, header: 'x-sig' }, next: 'call' },
        { id: 'call', type: 'http_request', config: { url: `https://user:${SECRETS.password}@example.com/a`, credential: stored.id, headers: { Authorization: SECRETS.header, 'X-Key': '{{credentials.vendor.apiKey}}', Accept: 'application/json' } } }
      ],
      edges: []
    }
  })
  t.equal(created.statusCode, 201, created.body)
  const workflow = created.json()
  await client.fire(member.token, workflow.id, {})
  await request({ method: 'PATCH', url: `${URL}/${workflow.id}`, token: member.token, payload: { triggerConfig: { note: 'kept' }, tags: ['crm', 'sync'] } })

  const exported = await exportOf(member.token, workflow.id)
  t.same(Object.keys(exported).sort(), ['credentials', 'exportedAt', 'format', 'formatVersion', 'redacted', 'workflow'])
  t.match(exported, { format: 'switchboard.workflow', formatVersion: 1 })
  t.same(Object.keys(exported.workflow).sort(), ['cancelOn', 'description', 'domain', 'edges', 'errorWorkflowId', 'flowControl', 'maxConcurrentRuns', 'name', 'nodes', 'runTags', 'tags', 'triggerConfig', 'triggerType', 'webhookRateLimit'])
  t.same(exported.workflow.nodes, [
    { id: 'verify', type: 'verify_signature', config: { header: 'x-sig' }, next: 'call' },
    { id: 'call', type: 'http_request', config: { url: 'https://example.com/a', credential: 'crm', headers: { 'X-Key': '{{credentials.vendor.apiKey}}', Accept: 'application/json' } } }
  ], 'literal secrets removed, the credential named')
  t.same(exported.redacted, ['nodes[0].config.secret', 'nodes[1].config.headers.Authorization', 'nodes[1].config.url'])
  t.same(exported.credentials, [{ name: 'crm', type: 'bearer' }, { name: 'vendor', type: 'generic' }])
  const text = JSON.stringify(exported)
  for (const [what, value] of Object.entries({ ...SECRETS, id: workflow.id, owner: member.id, credentialId: stored.id })) t.notMatch(text, value, `no ${what}`)
})

t.test('import creates an inactive workflow from an export, with new ids and its own version 1', async (t) => {
  const [author, importer] = [await newMember(), await newMember()]
  await credential(author.token, { name: 'crm', type: 'bearer', data: { token: 'token-of-author' } })
  const id = await client.createWorkflow(author.token, {
    name: 'Portable',
    triggerType: 'EVENT',
    triggerConfig: { eventName: 'order.created' },
    isActive: true,
    nodes: [{ id: 'call', type: 'http_request', config: { url: 'https://example.com', credential: 'crm' } }]
  })
  const exported = await exportOf(author.token, id)

  const missing = await importAs(importer.token, exported)
  t.equal(missing.statusCode, 400, 'the importer has no credential named crm')
  t.same(missing.json(), { statusCode: 400, code: 'INVALID_CREDENTIAL_REFERENCE', error: 'Node call: unknown credential crm', message: 'Node call: unknown credential crm' })

  await credential(importer.token, { name: 'crm', type: 'bearer', data: { token: 'token-of-importer' } })
  const res = await importAs(importer.token, { ...exported, extra: 'dropped' })
  t.equal(res.statusCode, 201, res.body)
  const imported = res.json()
  t.not(imported.id, id)
  t.match(imported, { name: 'Portable', triggerType: 'EVENT', triggerConfig: { eventName: 'order.created' }, isActive: false, version: 1, runCount: 0, nodes: exported.workflow.nodes })
  t.equal((await request({ method: 'GET', url: `${URL}/${imported.id}`, token: author.token })).statusCode, 404, 'it belongs to the importer')
  const again = await exportOf(importer.token, imported.id)
  t.same(again.workflow, exported.workflow, 'an import exports as it was imported')

  const roundTrip = await importAs(author.token, exported)
  t.equal(roundTrip.statusCode, 201, 'the author can import their own export')
})

t.test('an import is checked like a create; what is not an export is a 400', async (t) => {
  const member = await newMember()
  const exported = await exportOf(member.token, await client.createWorkflow(member.token))
  const cases: Array<[unknown, string]> = [
    [{ ...exported, format: 'n8n' }, 'format must be switchboard.workflow'],
    [{ ...exported, formatVersion: 2 }, 'formatVersion must be 1'],
    [{ format: exported.format, formatVersion: 1 }, 'workflow is required'],
    [{ ...exported, workflow: { ...exported.workflow, name: ' ' } }, 'workflow.name is required'],
    [{ ...exported, workflow: { ...exported.workflow, triggerType: 'SOMETIMES' } }, 'workflow.triggerType must be one of EVENT, CRON, WEBHOOK, KEYWORD, MANUAL, AGENT'],
    [{ ...exported, workflow: { ...exported.workflow, nodes: [{ id: 'n1', type: 'foo' }] } }, 'Unknown node type: foo'],
    [{ ...exported, workflow: { ...exported.workflow, nodes: [{ id: 'n1', type: 'set', next: 'n9' }] } }, 'Node n1: next refers to missing node n9'],
    [{ ...exported, workflow: { ...exported.workflow, triggerType: 'CRON', triggerConfig: { cronExpression: 'nope' } } }, 'Invalid cron expression: expected 5 or 6 fields, got 1'],
    [['not', 'an', 'object'], 'body must be object']
  ]
  for (const [payload, message] of cases) {
    const res = await importAs(member.token, payload)
    t.equal(res.statusCode, 400, `${message}: ${res.body}`)
    t.equal(res.json().message, message)
  }
  const active = await importAs(member.token, { ...exported, workflow: { ...exported.workflow, isActive: true } })
  t.equal(active.json().isActive, false, 'an import never starts active')
})

t.test('a member cannot export another\'s workflow; both routes need a token and are documented', async (t) => {
  const [owner, intruder] = [await newMember(), await newMember()]
  const id = await client.createWorkflow(owner.token)
  const res = await request({ method: 'GET', url: `${URL}/${id}/export`, token: intruder.token })
  t.same([res.statusCode, res.json().code], [404, 'WORKFLOW_NOT_FOUND'])
  t.equal((await request({ method: 'GET', url: `${URL}/${id}/export` })).statusCode, 401)
  t.equal((await request({ method: 'POST', url: `${URL}/import`, payload: {} })).statusCode, 401)
  const doc = (await request({ method: 'GET', url: '/docs/json' })).json()
  t.ok(doc.paths['/api/automation/workflows/{id}/export'].get.responses['200'].content['application/json'].schema.properties.redacted)
  t.ok(doc.paths['/api/automation/workflows/import'].post.responses['201'].content['application/json'].schema.properties.version)
})
