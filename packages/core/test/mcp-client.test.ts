import { createServer } from 'node:net'
import t, { type Test } from 'tap'
import { startFakeMcpServer, type FakeMcpServer, type FakeMcpServerOptions } from '@switchboard/testing/fake-mcp-server'
import { createHttpClient } from '../src/engine/nodes/http-client.ts'
import {
  callMcpTool, listMcpTools, mcpServerOf, MCP_MAX_ARGUMENTS_BYTES, MCP_MAX_TOOL_SCHEMA_BYTES, MCP_MAX_TOOLS, MCP_SESSION_END_MS,
  type McpClientOptions, type McpServer
} from '../src/engine/nodes/mcp-client.ts'
import { NodeError, RetryableNodeError } from '../src/engine/types.ts'

/**
 * The MCP client (README, MCP client) against the fake MCP server of the test kit: tools listed
 * and called through the SSRF-guarded dispatcher, and each hostile server ended within its bound.
 */

const API_KEY = 'mcp-key-3f9a1c77'
/** A time bound short enough to keep the file quick, long enough for a loopback exchange on a busy machine. */
const TIMEOUT_MS = 800
/** What an exchange cut at TIMEOUT_MS may take at most: the time bound, the session's end, a busy machine's slack. */
const TIMED_OUT_WITHIN_MS = TIMEOUT_MS + MCP_SESSION_END_MS + 1500

const guarded = createHttpClient({ allowPrivate: true })
const strict = createHttpClient({ allowPrivate: false })
t.teardown(async () => { await Promise.all([guarded.close(), strict.close()]) })

const options = (overrides: Partial<McpClientOptions> = {}): McpClientOptions => ({
  dispatcher: guarded.dispatcher,
  signal: new AbortController().signal,
  timeoutMs: 10_000,
  maxResponseBytes: 1024 * 1024,
  ...overrides
})

async function started (t: Test, fakeOptions: FakeMcpServerOptions = {}): Promise<{ fake: FakeMcpServer, server: McpServer }> {
  const server = await startFakeMcpServer(fakeOptions)
  t.teardown(server.close)
  return { fake: server, server: { url: server.url, headers: { 'X-Api-Key': API_KEY } } }
}

/** What `promise` failed with, and how long it took to. */
async function failure (promise: Promise<unknown>): Promise<{ error: Error, elapsedMs: number }> {
  const started = performance.now()
  try {
    await promise
  } catch (err) {
    return { error: err as Error, elapsedMs: performance.now() - started }
  }
  throw new Error('expected a failure')
}

t.test('listMcpTools: every tool with its description and schema; the credential\'s headers on every request; the session ended', async (t) => {
  const { fake, server } = await started(t)
  const tools = await listMcpTools(server, options())
  t.same(tools.map((tool) => tool.name), ['lookup_order', 'echo', 'fail'])
  t.same(tools[0], {
    name: 'lookup_order',
    description: 'Looks up an order by its id',
    inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] }
  })
  t.same(fake.requests.map((request) => request.rpcMethod ?? request.httpMethod).filter((what) => what !== 'GET'),
    ['initialize', 'notifications/initialized', 'tools/list', 'DELETE'], 'initialized, listed, then the session ended')
  t.ok(fake.requests.every((request) => request.headers['x-api-key'] === API_KEY), 'every request carries the header')
  t.same(fake.sessions(), { opened: 1, ended: 1 })
})

t.test('listMcpTools: pages are followed; past MCP_MAX_TOOLS tools, or 20 pages, the list is refused', async (t) => {
  const { server: paged } = await started(t, { pageSize: 2, extraTools: 5 })
  t.equal((await listMcpTools(paged, options())).length, 8, 'four pages')

  const { server: crowded } = await started(t, { extraTools: MCP_MAX_TOOLS })
  const tooMany = await failure(listMcpTools(crowded, options()))
  t.type(tooMany.error, NodeError)
  t.notOk(tooMany.error instanceof RetryableNodeError, 'not a failure that may pass')
  t.equal(tooMany.error.message, `The MCP server lists more than ${MCP_MAX_TOOLS} tools`)

  const { server: endless } = await started(t, { pageSize: 1, extraTools: 30 })
  t.equal((await failure(listMcpTools(endless, options()))).error.message, 'The MCP server\'s list of tools goes on past 20 pages')
})

t.test('listMcpTools: a long description is cut; a schema past its bound refuses the list, naming the tool', async (t) => {
  const { server: wordy } = await started(t, { extraTools: 1, extraTool: { description: 'w'.repeat(5000) } })
  const [, , , tool] = await listMcpTools(wordy, options())
  t.equal(tool!.description, `${'w'.repeat(2048)}…`)

  const huge = { type: 'object' as const, properties: { note: { type: 'string', description: 'd'.repeat(MCP_MAX_TOOL_SCHEMA_BYTES) } } }
  const { server: heavy } = await started(t, { extraTools: 1, extraTool: { inputSchema: huge } })
  t.match((await failure(listMcpTools(heavy, options()))).error.message, new RegExp(`^The input schema of MCP tool tool_1 takes \\d+ bytes, more than ${MCP_MAX_TOOL_SCHEMA_BYTES}$`))
})

for (const jsonResponse of [false, true]) {
  t.test(`callMcpTool (${jsonResponse ? 'JSON answers' : 'event streams'}): the tool's content, structured content and text`, async (t) => {
    const { fake, server } = await started(t, { jsonResponse })
    const result = await callMcpTool(server, 'lookup_order', { orderId: 'A-1001' }, options())
    t.same(result, {
      content: [{ type: 'text', text: 'Order A-1001: shipped' }],
      structuredContent: { orderId: 'A-1001', status: 'shipped' },
      isError: false,
      text: 'Order A-1001: shipped'
    })
    t.same(fake.calls.map(({ tool, arguments: args }) => ({ tool, args })), [{ tool: 'lookup_order', args: { orderId: 'A-1001' } }])
    t.equal(fake.callsOf('lookup_order'), 1)
    t.same(fake.sessions(), { opened: 1, ended: 1 }, 'the session was ended')
  })
}

t.test('callMcpTool: a stateless server (no session, nothing to end) answers the same', async (t) => {
  const { fake, server } = await started(t, { stateless: true })
  t.equal((await callMcpTool(server, 'lookup_order', { orderId: 'B-7' }, options())).text, 'Order B-7: shipped')
  t.notOk(fake.requests.some((request) => request.httpMethod === 'DELETE'), 'no DELETE without a session')
})

t.test('callMcpTool: a tool error is a result with isError; an unknown tool is a refusal that may not pass', async (t) => {
  const { server } = await started(t)
  t.same(await callMcpTool(server, 'fail', { reason: 'maintenance' }, options()), {
    content: [{ type: 'text', text: 'Order system unavailable: maintenance' }],
    isError: true,
    text: 'Order system unavailable: maintenance'
  })
  const unknown = await failure(callMcpTool(server, 'nope', {}, options()))
  t.type(unknown.error, NodeError)
  t.notOk(unknown.error instanceof RetryableNodeError)
  t.equal(unknown.error.message, 'The MCP server refused the request (-32602): Unknown tool: nope')
})

t.test('callMcpTool: arguments and a tool name past their bounds are refused before any request', async (t) => {
  const { fake, server } = await started(t)
  const big = await failure(callMcpTool(server, 'echo', { text: 'x'.repeat(MCP_MAX_ARGUMENTS_BYTES) }, options()))
  t.match(big.error.message, new RegExp(`^The arguments of MCP tool echo take \\d+ bytes, more than ${MCP_MAX_ARGUMENTS_BYTES}$`))
  t.match((await failure(callMcpTool(server, 'n'.repeat(129), {}, options()))).error.message, /^An MCP tool's name is 1 to 128 characters: "n{128}"…$/)
  t.equal(fake.requests.length, 0)
})

t.test('a server that never answers the call: the exchange ends at its time bound, as a failure that may pass', async (t) => {
  const { fake, server } = await started(t, { hostile: { kind: 'hang' } })
  const { error, elapsedMs } = await failure(callMcpTool(server, 'lookup_order', { orderId: 'A-1' }, options({ timeoutMs: TIMEOUT_MS })))
  t.type(error, RetryableNodeError)
  t.equal(error.message, `The MCP server did not answer within ${TIMEOUT_MS}ms`)
  t.ok(elapsedMs >= TIMEOUT_MS - 50 && elapsedMs < TIMED_OUT_WITHIN_MS, `ended after ${Math.round(elapsedMs)} ms`)
  t.equal(fake.callsOf('lookup_order'), 0, 'the call never reached a tool')
  t.same(fake.sessions(), { opened: 1, ended: 1 }, 'the session was ended all the same')
})

t.test('a server that never answers at all (not even initialize): ended at the time bound', async (t) => {
  const { server } = await started(t, { hostile: { kind: 'hang' }, hostileOn: '*' })
  const { error, elapsedMs } = await failure(listMcpTools(server, options({ timeoutMs: TIMEOUT_MS })))
  t.equal(error.message, `The MCP server did not answer within ${TIMEOUT_MS}ms`)
  t.ok(elapsedMs < TIMED_OUT_WITHIN_MS, `ended after ${Math.round(elapsedMs)} ms`)
})

t.test('a server that streams events forever without a result: ended at the time bound, or at the byte bound first', async (t) => {
  const { server } = await started(t, { hostile: { kind: 'stream-forever', everyMs: 20 } })
  const timed = await failure(callMcpTool(server, 'lookup_order', { orderId: 'A-1' }, options({ timeoutMs: TIMEOUT_MS })))
  t.type(timed.error, RetryableNodeError)
  t.equal(timed.error.message, `The MCP server did not answer within ${TIMEOUT_MS}ms`)
  t.ok(timed.elapsedMs >= TIMEOUT_MS - 50 && timed.elapsedMs < TIMED_OUT_WITHIN_MS, `ended after ${Math.round(timed.elapsedMs)} ms`)

  const { server: fast } = await started(t, { hostile: { kind: 'stream-forever', everyMs: 1 } })
  const counted = await failure(callMcpTool(fast, 'lookup_order', { orderId: 'A-1' }, options({ timeoutMs: 20_000, maxResponseBytes: 16 * 1024 })))
  t.type(counted.error, NodeError)
  t.notOk(counted.error instanceof RetryableNodeError, 'too large is not a failure that may pass')
  t.equal(counted.error.message, 'The MCP server\'s answers passed 16384 bytes')
  t.ok(counted.elapsedMs < 10_000, `cut by its bytes after ${Math.round(counted.elapsedMs)} ms, long before its time bound`)
})

t.test('an answer larger than maxResponseBytes fails the call; within it, it is the result', async (t) => {
  const { server } = await started(t, { hostile: { kind: 'oversized', bytes: 300_000 } })
  const { error } = await failure(callMcpTool(server, 'lookup_order', { orderId: 'A-1' }, options({ maxResponseBytes: 200_000 })))
  t.equal(error.message, 'The MCP server\'s answers passed 200000 bytes')
  const within = await callMcpTool(server, 'lookup_order', { orderId: 'A-1' }, options({ maxResponseBytes: 400_000 }))
  t.ok(within.text.length > 290_000 && /^x+$/.test(within.text), 'the large answer, whole')
})

t.test('HTTP refusals: 5xx and 429 may pass, a refused credential may not; no message quotes a header value', async (t) => {
  const { fake: failing, server } = await started(t, { hostile: { kind: 'status', status: 500 } })
  const broken = await failure(callMcpTool(server, 'lookup_order', { orderId: 'A-1' }, options()))
  t.type(broken.error, RetryableNodeError)
  t.equal(broken.error.message, 'The MCP server answered 500')

  failing.setHostile({ kind: 'status', status: 429 })
  t.type((await failure(callMcpTool(server, 'lookup_order', { orderId: 'A-1' }, options()))).error, RetryableNodeError)

  failing.setHostile({ kind: 'status', status: 401 }, 'initialize')
  const refused = await failure(listMcpTools(server, options()))
  t.notOk(refused.error instanceof RetryableNodeError)
  t.equal(refused.error.message, 'The MCP server refused the credential (401): check its headers')
  for (const { error } of [broken, refused]) t.notMatch(error.message, API_KEY)
})

t.test('a redirect to another origin is not followed: the credential\'s headers reach no other server', async (t) => {
  const { fake: elsewhere } = await started(t)
  const { server } = await started(t, { hostile: { kind: 'status', status: 307, headers: { location: elsewhere.url } }, hostileOn: 'initialize' })
  const { error } = await failure(listMcpTools(server, options()))
  t.notOk(error instanceof RetryableNodeError)
  t.equal(error.message, 'The MCP server answered 307: a redirect to another origin is not followed')
  t.equal(elsewhere.requests.length, 0, 'nothing reached the other origin')
})

t.test('the caller\'s signal stops the exchange at once', async (t) => {
  const { server } = await started(t, { hostile: { kind: 'hang' } })
  const caller = new AbortController()
  setTimeout(() => { caller.abort() }, 100)
  const { error, elapsedMs } = await failure(callMcpTool(server, 'lookup_order', { orderId: 'A-1' }, options({ signal: caller.signal })))
  t.equal(error.message, 'The MCP call was stopped: the run was stopped')
  t.ok(elapsedMs < 100 + MCP_SESSION_END_MS + 1500, `stopped after ${Math.round(elapsedMs)} ms, not at its 10 s bound`)
})

t.test('the SSRF guard: loopback refused without HTTP_REQUEST_ALLOW_PRIVATE and metadata always, before connecting', async (t) => {
  const { fake, server } = await started(t)
  const loopback = await failure(listMcpTools(server, options({ dispatcher: strict.dispatcher })))
  t.notOk(loopback.error instanceof RetryableNodeError)
  t.equal(loopback.error.message, 'Blocked request to private address 127.0.0.1 (HTTP_REQUEST_ALLOW_PRIVATE=true on the worker allows private and loopback addresses)')
  t.equal(fake.requests.length, 0, 'nothing reached the server')

  const metadata = await failure(listMcpTools({ url: 'http://169.254.169.254/mcp', headers: {} }, options()))
  t.equal(metadata.error.message, 'Blocked request to cloud metadata address 169.254.169.254', 'refused by the connector\'s address check, with private addresses allowed')
})

t.test('a server that is not listening: a failure that may pass', async (t) => {
  const probe = createServer()
  await new Promise<void>((resolve) => { probe.listen(0, '127.0.0.1', resolve) })
  const { port } = probe.address() as { port: number }
  await new Promise<void>((resolve) => { probe.close(() => { resolve() }) })
  const { error } = await failure(listMcpTools({ url: `http://127.0.0.1:${port}/mcp`, headers: {} }, options()))
  t.type(error, RetryableNodeError)
  t.equal(error.message, 'Could not reach the MCP server (ECONNREFUSED)')
})

t.test('mcpServerOf: an mcp credential\'s url and headers; another type is refused naming it', async (t) => {
  t.same(mcpServerOf({ name: 'orders', type: 'mcp', data: { url: 'https://mcp.example.com/mcp', headers: '{"X-Api-Key": "key-123456"}' } }),
    { url: 'https://mcp.example.com/mcp', headers: { 'X-Api-Key': 'key-123456' } })
  t.same(mcpServerOf({ name: 'orders', type: 'mcp', data: { url: 'https://mcp.example.com/mcp' } }), { url: 'https://mcp.example.com/mcp', headers: {} })
  t.throws(() => mcpServerOf({ name: 'crm', type: 'bearer', data: { token: 'token-12345678' } }),
    new NodeError('Credential crm is bearer: an MCP server is reached with an mcp credential'))
})
