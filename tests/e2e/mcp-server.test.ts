import { request as httpRequest } from 'node:http'
import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { startStack } from '@switchboard/testing/processes'

/**
 * The MCP server end to end (README, MCP server): real api and worker processes, and a client built
 * with the official SDK, as a desktop assistant or another agent would build it.
 */

const stack = await startStack(t)
const adminToken = await stack.adminToken()
const { client } = stack
const owner = await client.newUser(adminToken)
const stranger = await client.newUser(adminToken)

async function keyOf (token: string, scopes: string[], workflowIds?: string[]): Promise<string> {
  const res = await stack.call('POST', '/api/auth/api-keys', { token, body: { name: `mcp ${scopes.join(' ')}`, scopes, ...(workflowIds !== undefined && { workflowIds }) } })
  if (res.status !== 201) throw new Error(`key not created: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.key
}

async function connect (key: string): Promise<Client> {
  const mcp = new Client({ name: 'switchboard-e2e', version: '1.0.0' })
  await mcp.connect(new StreamableHTTPClientTransport(new URL('/mcp', stack.baseUrl), { requestInit: { headers: { authorization: `Bearer ${key}` } } }))
  t.teardown(async () => { await mcp.close() })
  return mcp
}

const textOf = (result: Awaited<ReturnType<Client['callTool']>>): string => ((result as CallToolResult).content[0] as { text: string }).text
const runCountOf = async (workflowId: string): Promise<number> => (await client.runsOf(owner.token, workflowId)).length

const quoteId = await client.createWorkflow(owner.token, {
  name: 'Price quote',
  triggerType: 'AGENT',
  triggerConfig: {
    description: 'Quotes a price for a quantity of a product',
    inputSchema: { type: 'object', properties: { sku: { type: 'string', minLength: 2 }, quantity: { type: 'integer', minimum: 1 } }, required: ['sku', 'quantity'], additionalProperties: false }
  },
  nodes: [{ id: 'quote', type: 'set', config: { values: { sku: '{{triggerData.arguments.sku}}', quantity: '{{triggerData.arguments.quantity}}', currency: 'EUR' } } }]
})
const failingId = await client.createWorkflow(owner.token, {
  name: 'Reserve stock',
  triggerType: 'AGENT',
  triggerConfig: { description: 'Reserves stock of a product', inputSchema: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } },
  nodes: [{ id: 'reserve', type: 'code', config: { code: 'throw new Error("out of stock: " + input.triggerData.arguments.sku)' } }]
})
const slowId = await client.createWorkflow(owner.token, {
  name: 'Slow count',
  triggerType: 'AGENT',
  triggerConfig: { description: 'Counts slowly', inputSchema: { type: 'object', properties: { seconds: { type: 'number' } }, required: ['seconds'] } },
  nodes: [{ id: 'pause', type: 'wait', config: { seconds: '{{triggerData.arguments.seconds}}' }, next: 'done' }, { id: 'done', type: 'set', config: { values: { counted: true } } }]
})
// Not tools: no description, or not an AGENT workflow.
await client.createWorkflow(owner.token, { name: 'No description', triggerType: 'AGENT', triggerConfig: { inputSchema: { type: 'object', properties: {} } }, nodes: [] })
await client.createWorkflow(owner.token, { name: 'Manual one', triggerType: 'MANUAL', nodes: [] })
const strangersId = await client.createWorkflow(stranger.token, {
  name: 'Refund everything',
  triggerType: 'AGENT',
  triggerConfig: { description: 'Refunds every order', inputSchema: { type: 'object', properties: {} } },
  nodes: [{ id: 'x', type: 'set', config: { values: { refunded: true } } }]
})

const mcpKey = await keyOf(owner.token, ['mcp'])
const mcp = await connect(mcpKey)

t.test('tools/list: the owner\'s active AGENT workflows with a description and a schema, named as the assistant names them; nobody else\'s', async (t) => {
  const { tools } = await mcp.listTools()
  t.same(tools.map((tool) => tool.name).sort(), ['price_quote', 'reserve_stock', 'slow_count'])
  t.match(tools.find((tool) => tool.name === 'price_quote'), {
    description: 'Quotes a price for a quantity of a product',
    inputSchema: { type: 'object', required: ['sku', 'quantity'], properties: { quantity: { type: 'integer', minimum: 1 } } }
  })
  t.notOk(tools.some((tool) => tool.name === 'refund_everything'), 'another user\'s tool is not listed')

  const limited = await connect(await keyOf(owner.token, ['mcp'], [quoteId]))
  t.same((await limited.listTools()).tools.map((tool) => tool.name), ['price_quote'], 'a key limited to workflows lists only those')
  await t.rejects(limited.callTool({ name: 'reserve_stock', arguments: { sku: 'AB' } }), /Unknown tool: reserve_stock/, 'nor calls the others')
  await t.rejects(mcp.callTool({ name: 'refund_everything', arguments: {} }), /Unknown tool: refund_everything/)
  t.equal((await client.runsOf(stranger.token, strangersId)).length, 0, 'the other user\'s workflow never ran')
})

t.test('tools/call runs the workflow as the owner and answers its output', async (t) => {
  const result = await mcp.callTool({ name: 'price_quote', arguments: { sku: 'BIKE-7', quantity: 3 } })
  t.notOk(result.isError, textOf(result))
  t.same(JSON.parse(textOf(result)), { quote: { sku: 'BIKE-7', quantity: 3, currency: 'EUR' } })
  const [run] = await client.runsOf(owner.token, quoteId)
  t.match(run, { status: 'SUCCESS', triggerData: { arguments: { sku: 'BIKE-7', quantity: 3 } } }, 'a run of the owner, its arguments in triggerData')
})

t.test('invalid arguments are a tool error and start no run', async (t) => {
  const before = await runCountOf(quoteId)
  const result = await mcp.callTool({ name: 'price_quote', arguments: { sku: 'B', quantity: 0, extra: true } })
  t.equal(result.isError, true)
  t.match(textOf(result), /^the arguments do not match the tool's schema: /)
  const missing = await mcp.callTool({ name: 'price_quote', arguments: {} })
  t.equal(missing.isError, true)
  t.match(textOf(missing), /quantity|sku/)
  t.equal(await runCountOf(quoteId), before, 'no run was started')
})

t.test('a failing workflow answers isError with the run\'s error', async (t) => {
  const result = await mcp.callTool({ name: 'reserve_stock', arguments: { sku: 'BIKE-7' } })
  t.equal(result.isError, true)
  t.match(textOf(result), /out of stock: BIKE-7/)
  const [run] = await client.runsOf(owner.token, failingId)
  t.equal(run?.status, 'FAILED')
})

t.test('a client that asks for progress hears from a run that takes a while', async (t) => {
  const progress: Array<{ progress: number, message?: string }> = []
  const result = await mcp.callTool({ name: 'slow_count', arguments: { seconds: 5 } }, undefined, {
    onprogress: (update) => { progress.push(update) },
    resetTimeoutOnProgress: true
  })
  t.notOk(result.isError, textOf(result))
  t.same(JSON.parse(textOf(result)).done, { counted: true })
  t.ok(progress.length >= 2, `${progress.length} progress notifications: one as the run starts, one 3 s on`)
  t.match(progress[0]!.message, /^run \S+ is (PENDING|RUNNING|WAITING)$/, 'the first names the run')
  t.ok(progress[1]!.progress - progress[0]!.progress >= 3000, 'the next comes 3 s on')
  t.ok(progress.every((update, n) => n === 0 || update.progress > progress[n - 1]!.progress), 'progress only rises')
  t.equal((await client.runsOf(owner.token, slowId))[0]?.status, 'SUCCESS')
})

t.test('auth: a key without scope mcp is 403 Forbidden, no credential 401, a person\'s token works', async (t) => {
  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }
  const post = async (authorization?: string) => fetch(`${stack.baseUrl}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization !== undefined && { authorization }) },
    body: JSON.stringify(initialize)
  })
  const readKey = await post(`Bearer ${await keyOf(owner.token, ['runs:read'])}`)
  t.equal(readKey.status, 403)
  t.same(await readKey.json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: 'Forbidden' })
  const nobody = await post()
  t.equal(nobody.status, 401)
  t.match(await nobody.json(), { statusCode: 401, code: 'UNAUTHORIZED' })
  const withKey = await post(`Bearer ${mcpKey}`)
  t.equal(withKey.status, 200)
  t.match(await withKey.text(), /"serverInfo":\{"name":"switchboard"/)

  const noAccept = await fetch(`${stack.baseUrl}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${mcpKey}` }, body: JSON.stringify(initialize) })
  t.equal(noAccept.status, 406)
  t.match(await noAccept.json(), { statusCode: 406, code: 'NOT_ACCEPTABLE', message: /text\/event-stream/ }, 'the transport\'s refusals in the API\'s error body')

  const person = await connect(owner.token)
  t.ok((await person.listTools()).tools.some((tool) => tool.name === 'price_quote'), 'a JWT lists the same tools')
  const get = await fetch(`${stack.baseUrl}/mcp`, { headers: { authorization: `Bearer ${mcpKey}`, accept: 'text/event-stream' } })
  t.equal(get.status, 405, 'stateless: no stream to GET')
  await get.body?.cancel()
})

/**
 * A POST that declares a body of `length` bytes and sends none of it: the 413 must come from the
 * declared length, before the body (writing it races the server closing the connection).
 */
async function declaredOnly (path: string, key: string, length: number): Promise<{ status: number, body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${stack.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': String(length) }
    }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => {
        req.destroy()
        resolve({ status: res.statusCode!, body: JSON.parse(text) })
      })
    })
    req.on('error', reject)
    req.flushHeaders()
  })
}

t.test('a call of 10 MB is refused 413 and starts no run', async (t) => {
  const before = await runCountOf(quoteId)
  const refused = await declaredOnly('/mcp', mcpKey, 10 * 1024 * 1024)
  t.equal(refused.status, 413)
  t.equal(refused.body.code, 'PAYLOAD_TOO_LARGE')
  t.equal(await runCountOf(quoteId), before)
})
