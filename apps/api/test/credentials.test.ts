import t, { type Test } from 'tap'
import { buildTestApp } from './helper.ts'

const testApp = await buildTestApp(t)
const { app, request, adminToken, newMember, client } = testApp
const sql = app.database.sql

const URL = '/api/automation/credentials'
const WORKFLOWS = '/api/automation/workflows'
const notFound = { statusCode: 404, code: 'CREDENTIAL_NOT_FOUND', error: 'Credential not found', message: 'Credential not found' }
/** Well-formed (cuid2) and nobody's. */
const MISSING_ID = 'z'.repeat(24)

type Body = Record<string, any>

async function createCredential (token: string, payload: Body): Promise<Body> {
  const res = await request({ method: 'POST', url: URL, token, payload })
  if (res.statusCode !== 201) throw new Error(`create credential refused: ${res.body}`)
  return res.json()
}

async function refusal (t: Test, options: { method: 'POST' | 'PATCH' | 'DELETE', url: string, token: string, payload?: Body }, status: number): Promise<Body> {
  const res = await request(options)
  t.equal(res.statusCode, status, `${options.method} ${options.url}: ${res.body}`)
  const body = res.json()
  t.equal(body.error, body.message, 'the API\'s error body')
  t.equal(body.statusCode, status)
  return body
}

const httpNode = (config: Body) => ({ id: 'call', type: 'http_request', config: { url: 'https://example.com/hook', ...config } })

t.test('create answers 201 without the data; the data is stored only encrypted, under the current key', async (t) => {
  const member = await newMember()
  const secret = 'tok-8d1f-visible-nowhere'
  const res = await request({ method: 'POST', url: URL, token: member.token, payload: { name: 'stripe', type: 'bearer', data: { token: secret } } })
  t.equal(res.statusCode, 201)
  const created = res.json()
  t.same(Object.keys(created).sort(), ['createdAt', 'fields', 'id', 'name', 'type', 'updatedAt'])
  t.match(created, { name: 'stripe', type: 'bearer', fields: ['token'] })
  t.notMatch(res.body, secret)

  for (const url of [URL, `${URL}/${created.id}`]) {
    const read = await request({ method: 'GET', url, token: member.token })
    t.equal(read.statusCode, 200)
    t.notMatch(read.body, secret, `GET ${url} carries no data`)
  }
  const [row] = await sql`select data_encrypted, fields from credentials where id = ${created.id}`
  t.notMatch(row!.data_encrypted, secret)
  t.match(row!.data_encrypted, /^v2\.[A-Za-z0-9_-]{11}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'AES-GCM with a key id')
  t.same(row!.fields, ['token'])
})

/** An mcp credential's data refused (README, MCP client): every message names the field or the header, never a value. */
const MCP_URL = 'https://mcp.example.com/mcp'
const mcpRefusals: Array<[Body, string]> = [
  [{}, 'data.url is required'],
  [{ url: 'mcp.example.com/mcp' }, 'data.url must be an http or https URL'],
  [{ url: 'wss://mcp.example.com/mcp' }, 'data.url must be an http or https URL'],
  [{ url: `https://mcp.example.com/${'p'.repeat(2030)}` }, 'data.url must be at most 2048 characters'],
  [{ url: 'https://agent:hunter2-secret@mcp.example.com/mcp' }, 'data.url must not hold a user name or password: send them in headers'],
  [{ url: 'https://mcp.example.com/mcp\n' }, 'data.url must not contain line breaks or NUL'],
  [{ url: MCP_URL, headers: { 'X-Api-Key': 'key-value-1' } }, 'data.headers must be a string of 1 to 8192 characters'],
  [{ url: MCP_URL, headers: '["X-Api-Key"]' }, 'data.headers must be the text of a JSON object of header names to values, e.g. {"Authorization": "Bearer …"}'],
  [{ url: MCP_URL, headers: '{}' }, 'data.headers must hold 1 to 20 headers'],
  [{ url: MCP_URL, headers: JSON.stringify(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'value-long-1']))) }, 'data.headers must hold 1 to 20 headers'],
  [{ url: MCP_URL, headers: '{"X Api Key": "key-value-1"}' }, 'data.headers: "X Api Key" is not a header name'],
  [{ url: MCP_URL, headers: '{"X-Api-Key": "key-value-1", "x-api-key": "key-value-2"}' }, 'data.headers names x-api-key more than once'],
  [{ url: MCP_URL, headers: '{"Content-Type": "text/plain-1"}' }, 'data.headers cannot set Content-Type: the MCP transport writes it'],
  [{ url: MCP_URL, headers: '{"X-Api-Key": 12345678}' }, 'data.headers.X-Api-Key must be text'],
  [{ url: MCP_URL, headers: '{"X-Api-Key": "key\\r\\nX-Admin: yes"}' }, 'data.headers.X-Api-Key must not contain line breaks or NUL'],
  [{ url: MCP_URL, headers: '{"X-Api-Key": "short"}' }, 'data.headers.X-Api-Key must be at least 8 characters: shorter values cannot be masked in what runs store']
]

t.test('data is checked per type, with messages naming the field and never the value', async (t) => {
  const member = await newMember()
  const cases: Array<[Body, string]> = [
    [{ name: 'a', type: 'bearer', data: {} }, 'data.token is required'],
    [{ name: 'a', type: 'bearer', data: { token: 5 } }, 'data.token must be a string of 1 to 8192 characters'],
    [{ name: 'a', type: 'bearer', data: { token: 'x'.repeat(8193) } }, 'data.token must be a string of 1 to 8192 characters'],
    [{ name: 'a', type: 'bearer', data: { token: 'two\r\nlines' } }, 'data.token must not contain line breaks or NUL'],
    [{ name: 'a', type: 'basic', data: { username: 'u' } }, 'data.password is required'],
    [{ name: 'a', type: 'basic', data: { username: 'u:v', password: 'password-1' } }, 'data.username must not contain :'],
    [{ name: 'a', type: 'header', data: { name: 'X Api Key', value: 'value-long-1' } }, 'data.name must be a header name'],
    [{ name: 'a', type: 'hmac', data: { secret: '' } }, 'data.secret must be a string of 1 to 8192 characters'],
    [{ name: 'a', type: 'bearer', data: { token: 'short' } }, 'data.token must be at least 8 characters: shorter values cannot be masked in what runs store'],
    // Every form of these differs (a space, a quote, non-ASCII): 5 values of 8,190 characters take more than the budget.
    [{ name: 'a', type: 'generic', data: Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((f) => [f, 'É "'.repeat(2730) + f])) }, 'data is too long to mask: its values take 559680 characters in the forms runs mask, at most 524288'],
    [{ name: 'a', type: 'generic', data: {} }, 'data must hold 1 to 20 fields'],
    [{ name: 'a', type: 'generic', data: { 'with.dot': 'v' } }, 'data field names are 1 to 64 letters, digits, _ and -, starting with a letter or _: with.dot'],
    [{ name: 'a', type: 'generic', data: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`f${i}`, 'v'])) }, 'data must NOT have more than 20 properties'],
    [{ name: 'a', type: 'oauth', data: { token: 'x' } }, 'type must be one of bearer, basic, header, hmac, mcp, generic'],
    [{ name: 'has.dot', type: 'bearer', data: { token: 'x' } }, 'name must be 1 to 200 letters, digits, _ and -, starting with a letter or digit'],
    [{ name: '', type: 'bearer', data: { token: 'x' } }, 'name must be 1 to 200 letters, digits, _ and -, starting with a letter or digit'],
    [{ type: 'bearer', data: { token: 'x' } }, 'name is required'],
    [{ name: 'a', type: 'bearer' }, 'data is required'],
    ...mcpRefusals.map(([data, message]): [Body, string] => [{ name: 'a', type: 'mcp', data }, message])
  ]
  for (const [payload, message] of cases) {
    const body = await refusal(t, { method: 'POST', url: URL, token: member.token, payload }, 400)
    t.equal(body.message, message)
  }
  const basic = await createCredential(member.token, { name: 'svc', type: 'basic', data: { username: 'u', password: 'password-1', extra: 'dropped' } })
  t.same(basic.fields, ['username', 'password'], 'fields a type does not have are dropped')
  const generic = await createCredential(member.token, { name: 'vendor', type: 'generic', data: { apiKey: 'vendor-key-1', region: 'eu-west-1' } })
  t.same(generic.fields, ['apiKey', 'region'])
  const mcp = await createCredential(member.token, { name: 'orders', type: 'mcp', data: { url: MCP_URL, headers: '{\n  "Authorization": "Bearer orders-token-1"\n}' } })
  t.same(mcp.fields, ['url', 'headers'], 'headers as JSON text, which may span lines')
  const open = await createCredential(member.token, { name: 'open', type: 'mcp', data: { url: 'http://mcp.internal:8080/mcp' } })
  t.same(open.fields, ['url'], 'headers are optional')
})

t.test('names are unique per owner: 409, and two owners may use the same name', async (t) => {
  const [a, b] = [await newMember(), await newMember()]
  await createCredential(a.token, { name: 'shared', type: 'hmac', data: { secret: 'signing-secret-1' } })
  const body = await refusal(t, { method: 'POST', url: URL, token: a.token, payload: { name: 'shared', type: 'hmac', data: { secret: 'signing-secret-1' } } }, 409)
  t.same(body, { statusCode: 409, code: 'CREDENTIAL_EXISTS', error: 'Credential name already in use', message: 'Credential name already in use' })
  await createCredential(b.token, { name: 'shared', type: 'hmac', data: { secret: 'signing-secret-1' } })
  const other = await createCredential(a.token, { name: 'other', type: 'hmac', data: { secret: 'signing-secret-1' } })
  await refusal(t, { method: 'PATCH', url: `${URL}/${other.id}`, token: a.token, payload: { name: 'shared' } }, 409)
})

t.test('PATCH renames or replaces the data, checked against the type, which never changes', async (t) => {
  const member = await newMember()
  const created = await createCredential(member.token, { name: 'api', type: 'header', data: { name: 'X-Api-Key', value: 'old-value-1' } })
  const before = (await sql`select data_encrypted from credentials where id = ${created.id}`)[0]!.data_encrypted
  const res = await request({ method: 'PATCH', url: `${URL}/${created.id}`, token: member.token, payload: { name: 'api2', type: 'bearer', data: { name: 'X-Key', value: 'new-value-2' } } })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { name: 'api2', type: 'header', fields: ['name', 'value'] })
  t.notMatch(res.body, 'new-value-2')
  t.not((await sql`select data_encrypted from credentials where id = ${created.id}`)[0]!.data_encrypted, before, 'the data was replaced')
  const body = await refusal(t, { method: 'PATCH', url: `${URL}/${created.id}`, token: member.token, payload: { data: { name: 'X-Key' } } }, 400)
  t.equal(body.message, 'data.value is required')
})

t.test('a member never sees another\'s credentials: the list leaves them out and every other answer is a missing id\'s 404; an admin sees all', async (t) => {
  const [owner, intruder] = [await newMember(), await newMember()]
  const credential = await createCredential(owner.token, { name: 'mine', type: 'bearer', data: { token: 'token-value-1' } })
  const probes = [
    { method: 'GET' as const },
    { method: 'PATCH' as const, payload: { name: 'taken' } },
    { method: 'DELETE' as const }
  ]
  for (const probe of probes) {
    const [onOwned, onMissing] = [
      await request({ ...probe, url: `${URL}/${credential.id}`, token: intruder.token }),
      await request({ ...probe, url: `${URL}/${MISSING_ID}`, token: intruder.token })
    ]
    t.same([onOwned.statusCode, onOwned.json()], [404, notFound], `${probe.method} on another's credential`)
    t.same(onOwned.json(), onMissing.json(), 'answers like a missing id')
  }
  t.same((await request({ method: 'GET', url: URL, token: intruder.token })).json(), [])
  t.same((await request({ method: 'GET', url: `${URL}/not-a-cuid`, token: owner.token })).json(), notFound, 'a malformed id is not found')
  t.match((await request({ method: 'GET', url: `${URL}/${credential.id}`, token: owner.token })).json(), { name: 'mine' }, 'untouched')

  const adminList = (await request({ method: 'GET', url: `${URL}?limit=500`, token: adminToken })).json()
  t.ok(adminList.some((item: Body) => item.id === credential.id))
  t.equal((await request({ method: 'GET', url: `${URL}/${credential.id}`, token: adminToken })).statusCode, 200)
})

t.test('workflows refer to credentials by name or id; a reference that cannot work is a 400 naming the node', async (t) => {
  const [member, other] = [await newMember(), await newMember()]
  const bearer = await createCredential(member.token, { name: 'bearer', type: 'bearer', data: { token: 'token-value-1' } })
  await createCredential(member.token, { name: 'signing', type: 'hmac', data: { secret: 'signing-secret-1' } })
  await createCredential(member.token, { name: 'vendor', type: 'generic', data: { apiKey: 'vendor-key-1' } })
  await createCredential(other.token, { name: 'theirs', type: 'bearer', data: { token: 'token-value-1' } })

  const valid = [
    httpNode({ credential: 'bearer' }),
    httpNode({ credential: bearer.id }),
    httpNode({ headers: { 'x-api-key': '{{credentials.vendor.apiKey}}' } }),
    { id: 'call', type: 'verify_signature', config: { credential: 'signing', header: 'x-signature' } },
    { id: 'call', type: 'verify_signature', config: { secret: '{{credentials.vendor.apiKey}}', header: 'x-signature' } }
  ]
  for (const node of valid) {
    const res = await request({ method: 'POST', url: WORKFLOWS, token: member.token, payload: { name: 'ok', triggerType: 'MANUAL', nodes: [node] } })
    t.equal(res.statusCode, 201, `${JSON.stringify(node)}: ${res.body}`)
  }

  const invalid: Array<[Body, string]> = [
    [httpNode({ credential: 'nope' }), 'Node call: unknown credential nope'],
    [httpNode({ credential: 'theirs' }), 'Node call: unknown credential theirs'],
    [httpNode({ credential: 'vendor' }), 'Node call: credential vendor is generic; http_request takes bearer, basic, header, hmac'],
    [{ id: 'call', type: 'verify_signature', config: { credential: 'bearer', header: 'x' } }, 'Node call: credential bearer is bearer; verify_signature takes hmac'],
    [httpNode({ credential: 5 }), 'Node call: credential must be the name or id of a credential'],
    [httpNode({ credential: '{{triggerData.name}}' }), 'Node call: credential must be the name or id of a credential'],
    [{ id: 'call', type: 'set', config: { credential: 'bearer' } }, 'Node call: set nodes take no credential'],
    [httpNode({ body: { key: '{{credentials.vendor.secret}}' } }), 'Node call: credential vendor has no field secret'],
    [httpNode({ body: { key: '{{credentials.missing.apiKey}}' } }), 'Node call: unknown credential missing'],
    [httpNode({ body: { key: '{{credentials.vendor}}' } }), 'Node call: {{credentials.vendor}} must read one field: {{credentials.<name>.<field>}}'],
    [{ id: 'call', type: 'send_chat', config: { phone: '1555', text: '{{credentials.vendor.apiKey}}' } }, 'Node call: credentials cannot be used in text: send_chat nodes use none'],
    [{ id: 'call', type: 'set', config: { values: { key: 'prefix {{credentials.vendor.apiKey}}' } } }, 'Node call: credentials cannot be used in values: set nodes use none'],
    [{ id: 'call', type: 'condition', config: { field: '{{credentials.vendor.apiKey}}', operator: 'matches', value: '^a' } }, 'Node call: credentials cannot be used in field: condition nodes use none'],
    [httpNode({ method: '{{credentials.vendor.apiKey}}' }), 'Node call: credentials cannot be used in method: http_request nodes use them only in credential, url, headers, query, body'],
    [{ id: 'credentials', type: 'set', config: {} }, 'Node id credentials is reserved for {{credentials.<name>.<field>}}']
  ]
  for (const [node, message] of invalid) {
    const body = await refusal(t, { method: 'POST', url: WORKFLOWS, token: member.token, payload: { name: 'bad', triggerType: 'MANUAL', nodes: [node] } }, 400)
    t.same(body, { statusCode: 400, code: 'INVALID_CREDENTIAL_REFERENCE', error: message, message })
  }

  const id = await client.createWorkflow(member.token, { nodes: [httpNode({})] })
  const body = await refusal(t, { method: 'PATCH', url: `${WORKFLOWS}/${id}`, token: member.token, payload: { nodes: [httpNode({ credential: 'nope' })] } }, 400)
  t.equal(body.message, 'Node call: unknown credential nope', 'PATCH refuses it too')

  // An admin editing a member's workflow cannot point it at the owner's credentials (tests/security/credential-scope.test.ts).
  const adminPatch = await refusal(t, { method: 'PATCH', url: `${WORKFLOWS}/${id}`, token: adminToken, payload: { nodes: [httpNode({ credential: 'bearer' })] } }, 403)
  t.equal(adminPatch.code, 'CREDENTIAL_OWNER_ONLY')
})

t.test('a credential in use cannot be deleted (409 naming the workflows) nor renamed while a workflow names it', async (t) => {
  const member = await newMember()
  const byName = await createCredential(member.token, { name: 'by-name', type: 'bearer', data: { token: 'token-value-1' } })
  const byId = await createCredential(member.token, { name: 'by-id', type: 'bearer', data: { token: 'token-value-1' } })
  const templated = await createCredential(member.token, { name: 'templated', type: 'generic', data: { key: 'templated-key-1' } })
  const first = await client.createWorkflow(member.token, { name: 'Billing sync', nodes: [httpNode({ credential: 'by-name' })] })
  await client.createWorkflow(member.token, { name: 'Invoices', nodes: [httpNode({ credential: 'by-name', headers: { 'x-key': '{{credentials.templated.key}}' } })] })
  const third = await client.createWorkflow(member.token, { name: 'Reports', nodes: [httpNode({ credential: byId.id })] })

  const refused = await refusal(t, { method: 'DELETE', url: `${URL}/${byName.id}`, token: member.token }, 409)
  t.match(refused, { code: 'CREDENTIAL_IN_USE', message: 'Credential is used by workflows: Billing sync, Invoices' })
  t.same(refused.details.workflows.map((w: Body) => w.name), ['Billing sync', 'Invoices'])
  t.equal((await request({ method: 'GET', url: `${URL}/${byName.id}`, token: member.token })).statusCode, 200, 'still there')

  const rename = await refusal(t, { method: 'PATCH', url: `${URL}/${templated.id}`, token: member.token, payload: { name: 'renamed' } }, 409)
  t.equal(rename.message, 'Credential is referred to by name by workflows: Invoices')
  const renamedById = await request({ method: 'PATCH', url: `${URL}/${byId.id}`, token: member.token, payload: { name: 'renamed-by-id' } })
  t.equal(renamedById.statusCode, 200, 'a credential referred to by id may be renamed')
  await refusal(t, { method: 'DELETE', url: `${URL}/${byId.id}`, token: member.token }, 409)

  // Once no workflow refers to it any more, it goes.
  await request({ method: 'PATCH', url: `${WORKFLOWS}/${first}`, token: member.token, payload: { nodes: [httpNode({})] } })
  t.equal((await request({ method: 'DELETE', url: `${WORKFLOWS}/${third}`, token: member.token })).statusCode, 204)
  t.equal((await request({ method: 'DELETE', url: `${URL}/${byId.id}`, token: member.token })).statusCode, 204)
  t.match((await refusal(t, { method: 'DELETE', url: `${URL}/${byName.id}`, token: member.token }, 409)).details.workflows, [{ name: 'Invoices' }])
})

t.test('deleting a user takes their workflows and credentials together', async (t) => {
  const member = await newMember()
  await createCredential(member.token, { name: 'gone', type: 'bearer', data: { token: 'token-value-1' } })
  await client.createWorkflow(member.token, { nodes: [httpNode({ credential: 'gone' })] })
  t.equal((await request({ method: 'DELETE', url: `/api/users/${member.id}`, token: adminToken })).statusCode, 204)
  t.same(await sql`select id from credentials where user_id = ${member.id}`, [])
})

t.test('the credential routes need a token and appear in the OpenAPI document with their answers', async (t) => {
  for (const [method, url] of [['POST', URL], ['GET', URL], ['GET', `${URL}/${MISSING_ID}`], ['PATCH', `${URL}/${MISSING_ID}`], ['DELETE', `${URL}/${MISSING_ID}`]] as const) {
    t.equal((await request({ method, url, payload: method === 'POST' || method === 'PATCH' ? { name: 'x' } : undefined })).statusCode, 401, `${method} ${url}`)
  }
  const doc = (await request({ method: 'GET', url: '/docs/json' })).json()
  const collection = doc.paths['/api/automation/credentials']
  const item = doc.paths['/api/automation/credentials/{id}']
  t.same(collection.post.requestBody.content['application/json'].schema.required, ['name', 'type', 'data'])
  t.notOk(collection.post.responses['201'].content['application/json'].schema.properties.data, 'no answer has a data field')
  t.ok(collection.get.responses['200'])
  t.ok(item.delete.responses['409'])
  t.ok(item.patch.responses['404'])
})
