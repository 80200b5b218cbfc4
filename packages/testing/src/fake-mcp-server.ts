import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js'

/**
 * A remote MCP server for tests of the MCP client (mcp_call, ai_agent): the official SDK's
 * `McpServer` behind its Streamable HTTP transport, on a loopback port, with a few tools, a record
 * of every request and call, and hostile ways of answering (never, an endless event stream, too
 * many bytes, an HTTP error) that tests switch on for the requests of one JSON-RPC method.
 * Production never uses it.
 *
 * Its tools:
 * - `lookup_order {orderId}`: text `Order <orderId>: shipped` and structuredContent `{orderId, status: 'shipped'}`;
 * - `echo {…}`: its arguments, as JSON text and as structuredContent;
 * - `fail {reason?}`: a tool error (`isError: true`) with text `Order system unavailable: <reason>`;
 * - `tool_1` … `tool_<extraTools>`: do-nothing tools, to pass a client's bound on tools.
 * Any other name is the protocol's InvalidParams error (`Unknown tool: <name>`).
 */

/** How the requests a hostility applies to are answered. */
export type FakeMcpHostility =
  /** Never: no status, no headers; the connection stays open until the client gives up or the fake closes. */
  | { kind: 'hang' }
  /** 200 and an event stream of log notifications every `everyMs` (default 10), never the result. */
  | { kind: 'stream-forever', everyMs?: number }
  /** A JSON result of about `bytes` bytes (one text part of `x`s): within a client's bound, a valid answer. */
  | { kind: 'oversized', bytes: number }
  /** This HTTP status with a short JSON body, and these headers (a redirect's `location`). */
  | { kind: 'status', status: number, headers?: Record<string, string> }

export interface FakeMcpServerOptions {
  /**
   * Answer with JSON rather than an event stream (the transport's `enableJsonResponse`).
   * @defaultValue false
   */
  jsonResponse?: boolean
  /**
   * No sessions: a server and a transport per request, as Switchboard's own /mcp is; the default
   * gives each client a session, which it ends with a DELETE.
   * @defaultValue false
   */
  stateless?: boolean
  /** Do-nothing tools added after the three, named `tool_1`, `tool_2`… */
  extraTools?: number
  /** Tools per page of `tools/list` (default: one page). */
  pageSize?: number
  /** The description and input schema of every extra tool, to pass a client's bounds on them (default: `A tool that does nothing`, no properties). */
  extraTool?: Partial<Pick<Tool, 'description' | 'inputSchema'>>
  hostile?: FakeMcpHostility
  /**
   * The JSON-RPC method whose requests `hostile` answers (`initialize`, `tools/list`, `tools/call`), or `*` for every request.
   * @defaultValue 'tools/call'
   */
  hostileOn?: string
}

/** One HTTP request the fake received. */
export interface FakeMcpRequest {
  /** GET, POST, DELETE. */
  httpMethod: string
  /** The JSON-RPC method of a POST carrying one message. */
  rpcMethod?: string
  headers: IncomingHttpHeaders
}

/** One call of a tool that reached it (hostile answers never do). */
export interface FakeMcpCall {
  tool: string
  arguments: Record<string, unknown>
  /** The session it was made in (undefined when stateless). */
  sessionId?: string
}

export interface FakeMcpServer {
  /** The MCP endpoint: `http://127.0.0.1:<port>/mcp`. */
  url: string
  requests: FakeMcpRequest[]
  calls: FakeMcpCall[]
  /** How many calls reached `tool`. */
  callsOf: (tool: string) => number
  /** Sessions the server gave, and those a client ended with DELETE. */
  sessions: () => { opened: number, ended: number }
  /** Switches the hostility (none: answer normally) for the requests of `on` (default `tools/call`). */
  setHostile: (hostile?: FakeMcpHostility, on?: string) => void
  /** Forgets the requests and calls recorded. */
  reset: () => void
  close: () => Promise<void>
}

const ORDER_TOOLS: Tool[] = [
  {
    name: 'lookup_order',
    description: 'Looks up an order by its id',
    inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] }
  },
  {
    name: 'echo',
    description: 'Answers its arguments',
    inputSchema: { type: 'object', properties: {}, additionalProperties: true }
  },
  {
    name: 'fail',
    description: 'Always fails, as a tool whose system is down',
    inputSchema: { type: 'object', properties: { reason: { type: 'string' } } }
  }
]

function answerOf (tool: string, args: Record<string, unknown>, extraTools: number): CallToolResult {
  switch (tool) {
    case 'lookup_order': {
      const orderId = String(args.orderId)
      return { content: [{ type: 'text', text: `Order ${orderId}: shipped` }], structuredContent: { orderId, status: 'shipped' } }
    }
    case 'echo':
      return { content: [{ type: 'text', text: JSON.stringify(args) }], structuredContent: args }
    case 'fail':
      return { isError: true, content: [{ type: 'text', text: `Order system unavailable: ${typeof args.reason === 'string' ? args.reason : 'no reason given'}` }] }
  }
  const extra = /^tool_(\d+)$/.exec(tool)
  if (extra !== null && Number(extra[1]) >= 1 && Number(extra[1]) <= extraTools) return { content: [{ type: 'text', text: 'done' }] }
  throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${tool}`)
}

async function bodyOf (req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  if (text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const LOG_NOTIFICATION = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'still working' } })}\n\n`

/** Answers `res` as `hostile` says; `id` is the JSON-RPC id of the request. */
function answerHostile (hostile: FakeMcpHostility, id: unknown, res: ServerResponse): void {
  switch (hostile.kind) {
    case 'hang':
      return
    case 'stream-forever': {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      const timer = setInterval(() => { res.write(LOG_NOTIFICATION) }, hostile.everyMs ?? 10)
      res.once('close', () => { clearInterval(timer) })
      return
    }
    case 'oversized': {
      const envelope = JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: '' }] } })
      const body = envelope.replace('"text":""', `"text":"${'x'.repeat(Math.max(0, hostile.bytes - envelope.length))}"`)
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(body)
      return
    }
    case 'status':
      res.writeHead(hostile.status, { 'content-type': 'application/json', ...hostile.headers })
      res.end(JSON.stringify({ error: `refused with ${hostile.status}` }))
  }
}

/** Starts a fake MCP server on a free loopback port. */
export async function startFakeMcpServer (options: FakeMcpServerOptions = {}): Promise<FakeMcpServer> {
  const extraTools = options.extraTools ?? 0
  const tools: Tool[] = [
    ...ORDER_TOOLS,
    ...Array.from({ length: extraTools }, (_, i): Tool => ({
      name: `tool_${i + 1}`,
      description: options.extraTool?.description ?? 'A tool that does nothing',
      inputSchema: options.extraTool?.inputSchema ?? { type: 'object', properties: {} }
    }))
  ]
  const pageSize = options.pageSize ?? tools.length
  let hostile = options.hostile
  let hostileOn = options.hostileOn ?? 'tools/call'
  const requests: FakeMcpRequest[] = []
  const calls: FakeMcpCall[] = []
  const transports = new Map<string, StreamableHTTPServerTransport>()
  const open = new Set<StreamableHTTPServerTransport>()
  let opened = 0
  let ended = 0

  const toolServer = (): McpServer => {
    const server = new McpServer({ name: 'fake-orders', version: '1.0.0' }, { capabilities: { tools: {} } })
    server.server.setRequestHandler(ListToolsRequestSchema, (list) => {
      const start = list.params?.cursor === undefined ? 0 : Number(list.params.cursor)
      const next = start + pageSize
      return { tools: tools.slice(start, next), ...(next < tools.length && { nextCursor: String(next) }) }
    })
    server.server.setRequestHandler(CallToolRequestSchema, (call, extra) => {
      const args = call.params.arguments ?? {}
      calls.push({ tool: call.params.name, arguments: args, ...(extra.sessionId !== undefined && { sessionId: extra.sessionId }) })
      return answerOf(call.params.name, args, extraTools)
    })
    return server
  }

  const newTransport = async (): Promise<StreamableHTTPServerTransport> => {
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: options.stateless === true ? undefined : randomUUID,
      enableJsonResponse: options.jsonResponse === true,
      onsessioninitialized: (id) => {
        opened++
        transports.set(id, transport)
      },
      onsessionclosed: (id) => {
        ended++
        transports.delete(id)
      }
    })
    open.add(transport)
    transport.onclose = () => { open.delete(transport) }
    await toolServer().connect(transport)
    return transport
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await bodyOf(req)
    const message = typeof body === 'object' && body !== null && !Array.isArray(body) ? body as { method?: unknown, id?: unknown } : undefined
    const rpcMethod = typeof message?.method === 'string' ? message.method : undefined
    requests.push({ httpMethod: req.method ?? '', ...(rpcMethod !== undefined && { rpcMethod }), headers: req.headers })
    if (hostile !== undefined && (hostileOn === '*' || hostileOn === rpcMethod)) {
      answerHostile(hostile, message?.id, res)
      return
    }
    const sessionId = req.headers['mcp-session-id']
    if (typeof sessionId === 'string' && options.stateless !== true) {
      const transport = transports.get(sessionId)
      if (transport === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }))
        return
      }
      await transport.handleRequest(req, res, body)
      return
    }
    const transport = await newTransport()
    if (options.stateless === true) res.once('close', () => { transport.close().catch(() => {}) })
    await transport.handleRequest(req, res, body)
  }

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500)
      res.end()
    })
  })
  http.listen(0, '127.0.0.1')
  await once(http, 'listening')
  const { port } = http.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    calls,
    callsOf: (tool) => calls.filter((call) => call.tool === tool).length,
    sessions: () => ({ opened, ended }),
    setHostile: (next, on = 'tools/call') => {
      hostile = next
      hostileOn = on
    },
    reset: () => {
      requests.length = 0
      calls.length = 0
    },
    close: async () => {
      await Promise.all([...open].map(async (transport) => { await transport.close() }))
      http.closeAllConnections()
      await new Promise<void>((resolve) => { http.close(() => { resolve() }) })
    }
  }
}
