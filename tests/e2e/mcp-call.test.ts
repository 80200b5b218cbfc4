import t from 'tap'
import { startFakeMcpServer } from '@switchboard/testing/fake-mcp-server'
import { startStack } from '@switchboard/testing/processes'
import type { RunBody } from '@switchboard/testing/client'

/**
 * The mcp_call node end to end (README, MCP client): real api and worker processes, mcp
 * credentials made through the API, and the test kit's fake MCP server on loopback (so the
 * worker allows private addresses, as the other e2e files reaching the test's servers do).
 */

const API_KEY = 'orders-key-51f2c9a0d7'
/** The hanging server's node gives each attempt this long. */
const HANG_TIMEOUT_MS = 1500

const orders = await startFakeMcpServer()
const hanging = await startFakeMcpServer({ hostile: { kind: 'hang' } })
t.teardown(async () => { await Promise.all([orders.close(), hanging.close()]) })
const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
const adminToken = await stack.adminToken()
const owner = await stack.client.newUser(adminToken)
const { client } = stack

async function credential (name: string, type: string, data: Record<string, unknown>): Promise<{ status: number, body: any }> {
  return stack.call('POST', '/api/automation/credentials', { token: owner.token, body: { name, type, data } })
}

const created = await credential('orders', 'mcp', { url: orders.url, headers: JSON.stringify({ 'X-Api-Key': API_KEY }) })
if (created.status !== 201) throw new Error(`mcp credential refused: ${JSON.stringify(created.body)}`)
await credential('hanging', 'mcp', { url: hanging.url })
await credential('crm', 'bearer', { token: 'crm-token-1234567' })

const callNode = (config: Record<string, unknown>) => ({ id: 'call', type: 'mcp_call', config: { credential: 'orders', ...config } })
const run = async (config: Record<string, unknown>, triggerData: unknown = {}): Promise<RunBody> =>
  client.runWorkflow(owner.token, { name: 'orders', nodes: [callNode(config)] }, triggerData, { timeoutMs: 30_000 })

t.test('an mcp credential: made with its url and headers, never shown again; bad bodies are 400 naming the field, never the value', async (t) => {
  t.match(created.body, { name: 'orders', type: 'mcp', fields: ['url', 'headers'] })
  t.notMatch(JSON.stringify(created.body), API_KEY)
  const refusals: Array<[Record<string, unknown>, string]> = [
    [{ headers: '{"X-Api-Key": "x-api-key-value"}' }, 'data.url is required'],
    [{ url: 'ftp://files.example.com/mcp' }, 'data.url must be an http or https URL'],
    [{ url: 'https://user:secret-pass@mcp.example.com/mcp' }, 'data.url must not hold a user name or password: send them in headers'],
    [{ url: orders.url, headers: 'X-Api-Key: x-api-key-value' }, 'data.headers must be the text of a JSON object of header names to values, e.g. {"Authorization": "Bearer …"}'],
    [{ url: orders.url, headers: '{"X-Api-Key": "short"}' }, 'data.headers.X-Api-Key must be at least 8 characters: shorter values cannot be masked in what runs store'],
    [{ url: orders.url, headers: '{"Mcp-Session-Id": "session-12345"}' }, 'data.headers cannot set Mcp-Session-Id: the MCP transport writes it']
  ]
  for (const [data, message] of refusals) {
    const res = await credential('bad', 'mcp', data)
    t.equal(res.status, 400, message)
    t.equal(res.body.message, message)
  }
})

t.test('a save refuses an mcp_call with a credential of another type, and another node with an mcp credential', async (t) => {
  const save = async (node: Record<string, unknown>) => stack.call('POST', '/api/automation/workflows', { token: owner.token, body: { name: 'refused', triggerType: 'MANUAL', nodes: [node] } })
  const bearer = await save(callNode({ credential: 'crm', tool: 'lookup_order' }))
  t.equal(bearer.status, 400)
  t.equal(bearer.body.message, 'Node call: credential crm is bearer; mcp_call takes mcp')
  const http = await save({ id: 'call', type: 'http_request', config: { url: 'https://example.com/hook', credential: 'orders' } })
  t.equal(http.status, 400)
  t.equal(http.body.message, 'Node call: credential orders is mcp; http_request takes bearer, basic, header, hmac')
  const none = await save({ id: 'call', type: 'mcp_call', config: { tool: 'lookup_order' } })
  t.equal(none.status, 400)
  t.equal(none.body.message, 'Node call: credential is required: the name of an mcp credential')
})

t.test('a call: the rendered arguments reach the tool with the credential\'s headers; its answer is the node\'s output, logged first', async (t) => {
  orders.reset()
  const done = await run({ tool: '{{triggerData.tool}}', arguments: { orderId: '{{triggerData.orderId}}' } }, { tool: 'lookup_order', orderId: 'A-1001' })
  t.equal(done.status, 'SUCCESS', done.error ?? '')
  t.same(done.result.call, {
    tool: 'lookup_order',
    content: [{ type: 'text', text: 'Order A-1001: shipped' }],
    structuredContent: { orderId: 'A-1001', status: 'shipped' },
    text: 'Order A-1001: shipped',
    isError: false
  })
  t.same(orders.calls.map(({ tool, arguments: args }) => ({ tool, args })), [{ tool: 'lookup_order', args: { orderId: 'A-1001' } }])
  t.ok(orders.requests.length >= 3 && orders.requests.every((request) => request.headers['x-api-key'] === API_KEY), 'every request carried the header')
  t.same(orders.sessions().opened, orders.sessions().ended, 'the session was ended')
  const messages = done.logs.filter((line) => line.nodeId === 'call').map((line) => line.message)
  t.ok(messages.includes('Calling MCP tool lookup_order of orders (attempt 1)'), 'the call is logged before it is made')
  t.ok(messages.includes('MCP tool lookup_order of orders answered'))
  t.notMatch(JSON.stringify(done), API_KEY, 'no header value in the run')
})

t.test('a server echoing the credential\'s header value: masked in the output', async (t) => {
  const echoed = await run({ tool: 'echo', arguments: { note: '{{triggerData.note}}' } }, { note: `my key is ${API_KEY}` })
  t.equal(echoed.status, 'SUCCESS', echoed.error ?? '')
  t.equal(echoed.result.call.text, '{"note":"my key is [credential]"}')
  t.notMatch(JSON.stringify({ result: echoed.result.call, logs: echoed.logs }), API_KEY, 'nowhere in the output or the logs')
})

t.test('a tool error fails the run with the tool\'s text; with failOnToolError false it is the output', async (t) => {
  const failed = await run({ tool: 'fail', arguments: { reason: 'maintenance' } })
  t.equal(failed.status, 'FAILED')
  t.equal(failed.error, 'MCP tool fail failed: Order system unavailable: maintenance')
  t.same(failed.result.call, undefined, 'no output')
  t.ok(failed.logs.some((line) => line.level === 'WARN' && line.message === 'MCP tool fail of orders answered with an error'))

  const kept = await run({ tool: 'fail', arguments: { reason: 'maintenance' }, failOnToolError: false })
  t.equal(kept.status, 'SUCCESS', kept.error ?? '')
  t.match(kept.result.call, { tool: 'fail', isError: true, text: 'Order system unavailable: maintenance' })
})

t.test('an unknown tool fails the run at once (a refusal is not retried)', async (t) => {
  orders.reset()
  const failed = await run({ tool: 'refund_everything', retry: { attempts: 3, backoffMs: 0 } })
  t.equal(failed.status, 'FAILED')
  t.equal(failed.error, 'The MCP server refused the request (-32602): Unknown tool: refund_everything')
  t.equal(orders.requests.filter((request) => request.rpcMethod === 'tools/call').length, 1, 'one attempt')
})

t.test('a server answering 503: retried as the node\'s retry says, then the run fails', async (t) => {
  orders.reset()
  orders.setHostile({ kind: 'status', status: 503 })
  t.teardown(() => { orders.setHostile(undefined) })
  const failed = await run({ tool: 'lookup_order', arguments: { orderId: 'A-1' }, retry: { attempts: 2, backoffMs: 100 } })
  t.equal(failed.status, 'FAILED')
  t.equal(failed.error, 'The MCP server answered 503')
  t.equal(orders.requests.filter((request) => request.rpcMethod === 'tools/call').length, 2, 'two attempts')
  t.ok(failed.logs.some((line) => line.message === 'Calling MCP tool lookup_order of orders (attempt 2)'))
})

t.test('a server that never answers, or streams events forever: the run fails within the node\'s time limit', async (t) => {
  for (const hostility of [{ kind: 'hang' as const }, { kind: 'stream-forever' as const, everyMs: 20 }]) {
    hanging.setHostile(hostility)
    const failed = await run({ credential: 'hanging', tool: 'lookup_order', arguments: { orderId: 'A-1' }, timeoutMs: HANG_TIMEOUT_MS })
    t.equal(failed.status, 'FAILED', hostility.kind)
    t.match(failed.error, new RegExp(`^(Timed out after ${HANG_TIMEOUT_MS}ms|The MCP server did not answer within ${HANG_TIMEOUT_MS}ms)$`), hostility.kind)
    t.ok(failed.durationMs! >= HANG_TIMEOUT_MS && failed.durationMs! < HANG_TIMEOUT_MS + 5000, `${hostility.kind}: failed after ${failed.durationMs} ms`)
  }
  t.equal(hanging.callsOf('lookup_order'), 0, 'no call reached the tool')
})
