import { setMaxListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { CallToolResultSchema, ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js'
import type { JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js'
import { fetch, Response, type Dispatcher } from 'undici'
import { NodeError, RetryableNodeError, type NodeCredential } from '../types.ts'
import { ALLOW_PRIVATE_HINT, BlockedAddressError } from './http-client.ts'

/**
 * The MCP client (README, MCP client): a remote server's tools listed and called over the
 * protocol's Streamable HTTP transport, with the official SDK's `Client`, every request through
 * the SSRF-guarded dispatcher of http_request (http-client.ts). One exchange is one session:
 * connect and initialize, the list or the call, then the session ended; the whole of it within a
 * time bound and a byte bound, whatever the server does.
 */

/** An MCP server as an mcp credential names it: its endpoint and the headers sent with every request. */
export interface McpServer { url: string, headers: Record<string, string> }

/** A tool a server lists, within the bounds below. */
export interface McpTool { name: string, description: string, inputSchema: Record<string, unknown> }

/** A tool's answer: its content parts as the server sent them, and its text parts joined, for a model or a template. */
export interface McpCallResult { content: unknown[], structuredContent?: unknown, isError: boolean, text: string }

export interface McpClientOptions {
  /** The node dependencies' `http`: the SSRF-guarded dispatcher every request goes through. */
  dispatcher: Dispatcher
  /** The caller's signal (a node's: a cancel, a takeover, its attempt's time limit). */
  signal: AbortSignal
  /** The whole exchange: connect, initialize, the list or the call. */
  timeoutMs: number
  /** Every answer of the exchange together, JSON or event streams, in bytes. */
  maxResponseBytes: number
}

/** One exchange's time bound when its caller sets none: mcp_call's default `timeoutMs`, each of ai_agent's lists and calls. */
export const MCP_DEFAULT_TIMEOUT_MS = 30_000

/**
 * Tools one server may list. More is refused rather than cut: an agent would otherwise work with
 * whichever part the server happened to list first.
 * @internal exported for its tests
 */
export const MCP_MAX_TOOLS = 200
/** Pages of `tools/list` followed: a server whose cursor never ends is stopped here. */
const MCP_MAX_TOOL_PAGES = 20
/** A tool's name, as the protocol bounds it. */
const MCP_MAX_TOOL_NAME_LENGTH = 128
/** A tool's description is cut to this many characters: it is text for a model to choose by. */
const MCP_MAX_TOOL_DESCRIPTION_CHARS = 2048
/**
 * The JSON of one tool's input schema, in bytes.
 * @internal exported for its tests
 */
export const MCP_MAX_TOOL_SCHEMA_BYTES = 16 * 1024
/**
 * The JSON of a call's arguments, in bytes.
 * @internal exported for its tests
 */
export const MCP_MAX_ARGUMENTS_BYTES = 256 * 1024
/**
 * Ending a session the server gave (DELETE), after the exchange and on top of its time bound:
 * best effort, as a server that never answers it only keeps a session it will expire itself.
 * @internal exported for its tests
 */
export const MCP_SESSION_END_MS = 1000
/** What an error message quotes of a server's own message at most. */
const MAX_QUOTED_CHARS = 300

const CLIENT_INFO = { name: 'switchboard', version: '1.0.0' }

/**
 * Output schemas are not checked: a tool's answer is data passed on as it came, and compiling a
 * schema a remote server wrote would spend the worker's time on it.
 */
const UNCHECKED_OUTPUT: jsonSchemaValidator = {
  getValidator<T> (): JsonSchemaValidator<T> {
    return (input) => ({ valid: true, data: input as T, errorMessage: undefined })
  }
}

/** A stream the server drops is not opened again: an exchange is one request and its answer. */
const NO_RECONNECTION = { maxRetries: 0, initialReconnectionDelay: 0, maxReconnectionDelay: 0, reconnectionDelayGrowFactor: 1 }

/** How far an error's `cause` chain is followed (undici wraps a socket's error once or twice). */
const MAX_CAUSE_DEPTH = 10

const tooLarge = (maxBytes: number): NodeError => new NodeError(`The MCP server's answers passed ${maxBytes} bytes`)

const quoted = (text: string): string => text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}…` : text

/** The server of an mcp credential; its headers are a JSON object's text, checked when it was saved (credentials/data.ts). */
export function mcpServerOf (credential: NodeCredential): McpServer {
  const { name, type, data } = credential
  if (type !== 'mcp') throw new NodeError(`Credential ${name} is ${type}: an MCP server is reached with an mcp credential`)
  if (data.url === undefined) throw new NodeError(`Credential ${name} has no url`)
  if (data.headers === undefined) return { url: data.url, headers: {} }
  let headers: unknown
  try {
    headers = JSON.parse(data.headers)
  } catch {
    headers = undefined
  }
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers) || Object.values(headers).some((value) => typeof value !== 'string')) {
    throw new NodeError(`Credential ${name}: its headers are not a JSON object of header names to values`)
  }
  return { url: data.url, headers: headers as Record<string, string> }
}

/**
 * A fetch for the transport: undici's, through `dispatcher`, never following a redirect itself
 * (the transport follows one within the server's origin, each hop through here), every body it
 * gives counted into one budget of `maxBytes` for the exchange. Past it the body errors and
 * `onTooLarge` cuts the exchange: an event stream's error is otherwise only reported, not thrown.
 */
function boundedFetch (dispatcher: Dispatcher, maxBytes: number, onTooLarge: () => void): FetchLike {
  let received = 0
  return async (url, init) => {
    const response = await fetch(url, { ...init, redirect: 'manual', dispatcher } as Parameters<typeof fetch>[1])
    if (response.body === null) return response as unknown as globalThis.Response
    const body = response.body as unknown as ReadableStream<Uint8Array>
    const counted = body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
      transform (chunk, controller) {
        received += chunk.byteLength
        if (received > maxBytes) {
          onTooLarge()
          controller.error(tooLarge(maxBytes))
          return
        }
        controller.enqueue(chunk)
      }
    }))
    return new Response(counted as unknown as ConstructorParameters<typeof Response>[0], { status: response.status, statusText: response.statusText, headers: response.headers }) as unknown as globalThis.Response
  }
}

/** The first error of `err`'s cause chain that `matches`. */
function causeOf (err: unknown, matches: (cause: unknown) => boolean): unknown {
  for (let cause = err, depth = 0; cause !== undefined && cause !== null && depth < MAX_CAUSE_DEPTH; cause = (cause as { cause?: unknown }).cause, depth++) {
    if (matches(cause)) return cause
  }
  return undefined
}

/** A network error's code (ECONNREFUSED, UND_ERR_SOCKET…), or 'network' for undici's fetch failing without one; undefined for anything else. */
function networkFailure (err: unknown): string | undefined {
  const coded = causeOf(err, (cause) => typeof (cause as { code?: unknown }).code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test((cause as { code: string }).code))
  if (coded !== undefined) return (coded as { code: string }).code
  return err instanceof TypeError && (err.message === 'fetch failed' || err.message === 'terminated') ? 'network' : undefined
}

/** A refusal in HTTP: what may pass (429, 5xx) may be retried; a redirect elsewhere, a refused credential, a wrong url may not. */
function httpFailure (status: number | undefined): NodeError {
  if (status === undefined || status < 0) return new NodeError('The MCP server answered with neither JSON nor an event stream')
  if (status === 429 || status >= 500) return new RetryableNodeError(`The MCP server answered ${status}`)
  if (status === 401 || status === 403) return new NodeError(`The MCP server refused the credential (${status}): check its headers`)
  if (status === 404 || status === 405) return new NodeError(`The MCP server answered ${status}: is the credential's url the server's MCP endpoint?`)
  if (status >= 300 && status < 400) return new NodeError(`The MCP server answered ${status}: a redirect to another origin is not followed`)
  return new NodeError(`The MCP server answered ${status}`)
}

/** How the exchange was cut short on this side, if it was. */
interface Cut { tooLarge: boolean, stopped: boolean, timedOut: boolean }

/**
 * A failed exchange as the workflow author reads it. The network, a time-out, 429 and 5xx may
 * pass (RetryableNodeError); a blocked address, a refusal, a protocol error and a JSON-RPC error
 * of the server may not. No message quotes the credential's url or headers.
 */
function failureOf (err: unknown, cut: Cut, options: McpClientOptions): NodeError {
  if (cut.tooLarge) return tooLarge(options.maxResponseBytes)
  if (cut.stopped) return new NodeError('The MCP call was stopped: the run was stopped')
  if (cut.timedOut || (err instanceof McpError && err.code === ErrorCode.RequestTimeout)) {
    return new RetryableNodeError(`The MCP server did not answer within ${options.timeoutMs}ms`)
  }
  if (err instanceof NodeError) return err
  const blocked = causeOf(err, (cause) => cause instanceof BlockedAddressError) as BlockedAddressError | undefined
  if (blocked !== undefined) return new NodeError(blocked.allowedWithPrivate ? `${blocked.message} ${ALLOW_PRIVATE_HINT}` : blocked.message)
  if (err instanceof StreamableHTTPError) return httpFailure(err.code)
  if (err instanceof McpError) {
    if (err.code === ErrorCode.ConnectionClosed) return new RetryableNodeError('The MCP server closed the connection before answering')
    // The SDK writes `MCP error <code>: ` before a message, and a server built with it has often written it already.
    return new NodeError(`The MCP server refused the request (${err.code}): ${quoted(err.message.replace(/^(MCP error -?\d+: )+/, ''))}`)
  }
  const network = networkFailure(err)
  if (network !== undefined) return new RetryableNodeError(`Could not reach the MCP server (${network})`)
  return new NodeError(`The MCP server's answer does not follow the protocol: ${quoted(err instanceof Error ? err.message : String(err))}`)
}

/** Ends the session the server gave, if it gave one, within MCP_SESSION_END_MS; then closes every stream still open. */
async function endSession (client: Client, transport: StreamableHTTPClientTransport): Promise<void> {
  if (transport.sessionId !== undefined) {
    const waited = new AbortController()
    await Promise.race([
      transport.terminateSession().catch(() => {}),
      sleep(MCP_SESSION_END_MS, undefined, { signal: waited.signal }).catch(() => {})
    ])
    waited.abort()
  }
  await client.close()
}

/**
 * One session with `server`: connected and initialized, given to `work`, then ended. Bounded by
 * `timeoutMs` and the caller's signal as a whole (each SDK request is given the one signal) and by
 * `maxResponseBytes` over every answer.
 */
async function withSession<T> (server: McpServer, options: McpClientOptions, work: (client: Client, request: RequestOptions) => Promise<T>): Promise<T> {
  const url = URL.parse(server.url)
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new NodeError('The MCP server\'s url is not an http or https URL')
  const overflow = new AbortController()
  const deadline = AbortSignal.timeout(options.timeoutMs)
  const signal = AbortSignal.any([options.signal, deadline, overflow.signal])
  // The SDK listens on it once per request (every page of a list, with initialize and its notification).
  setMaxListeners(MCP_MAX_TOOL_PAGES + 2, signal)
  const request: RequestOptions = { signal, timeout: options.timeoutMs }
  const transport = new StreamableHTTPClientTransport(url, {
    fetch: boundedFetch(options.dispatcher, options.maxResponseBytes, () => { overflow.abort() }),
    requestInit: { headers: server.headers },
    reconnectionOptions: NO_RECONNECTION
  })
  const client = new Client(CLIENT_INFO, { jsonSchemaValidator: UNCHECKED_OUTPUT })
  try {
    await client.connect(transport, request)
    return await work(client, request)
  } catch (err) {
    throw failureOf(err, { tooLarge: overflow.signal.aborted, stopped: options.signal.aborted, timedOut: deadline.aborted }, options)
  } finally {
    await endSession(client, transport)
  }
}

function checkToolName (name: string): void {
  if (name.length === 0 || name.length > MCP_MAX_TOOL_NAME_LENGTH) {
    throw new NodeError(`An MCP tool's name is 1 to ${MCP_MAX_TOOL_NAME_LENGTH} characters: ${JSON.stringify(name.slice(0, MCP_MAX_TOOL_NAME_LENGTH))}${name.length > MCP_MAX_TOOL_NAME_LENGTH ? '…' : ''}`)
  }
}

/** A listed tool within its bounds: its name checked, its description cut, its schema's size checked. */
function boundedTool (tool: Tool): McpTool {
  checkToolName(tool.name)
  const schemaBytes = Buffer.byteLength(JSON.stringify(tool.inputSchema))
  if (schemaBytes > MCP_MAX_TOOL_SCHEMA_BYTES) {
    throw new NodeError(`The input schema of MCP tool ${tool.name} takes ${schemaBytes} bytes, more than ${MCP_MAX_TOOL_SCHEMA_BYTES}`)
  }
  const description = tool.description ?? ''
  return {
    name: tool.name,
    description: description.length > MCP_MAX_TOOL_DESCRIPTION_CHARS ? `${description.slice(0, MCP_MAX_TOOL_DESCRIPTION_CHARS)}…` : description,
    inputSchema: tool.inputSchema
  }
}

/**
 * The tools `server` lists, every page of them (at most MCP_MAX_TOOL_PAGES), at most MCP_MAX_TOOLS:
 * what ai_agent offers its model.
 */
export async function listMcpTools (server: McpServer, options: McpClientOptions): Promise<McpTool[]> {
  return withSession(server, options, async (client, request) => {
    const tools: McpTool[] = []
    let cursor: string | undefined
    for (let page = 1; ; page++) {
      const listed = await client.listTools(cursor === undefined ? undefined : { cursor }, request)
      if (tools.length + listed.tools.length > MCP_MAX_TOOLS) throw new NodeError(`The MCP server lists more than ${MCP_MAX_TOOLS} tools`)
      tools.push(...listed.tools.map(boundedTool))
      cursor = listed.nextCursor
      if (cursor === undefined) return tools
      if (page === MCP_MAX_TOOL_PAGES) throw new NodeError(`The MCP server's list of tools goes on past ${MCP_MAX_TOOL_PAGES} pages`)
    }
  })
}

/**
 * Calls `tool` with `args`. A result with `isError` is returned as it is (the caller decides what
 * a tool's own failure means); a JSON-RPC error of the call (an unknown tool, bad arguments) throws.
 */
export async function callMcpTool (server: McpServer, tool: string, args: Record<string, unknown>, options: McpClientOptions): Promise<McpCallResult> {
  checkToolName(tool)
  const argumentBytes = Buffer.byteLength(JSON.stringify(args))
  if (argumentBytes > MCP_MAX_ARGUMENTS_BYTES) {
    throw new NodeError(`The arguments of MCP tool ${tool} take ${argumentBytes} bytes, more than ${MCP_MAX_ARGUMENTS_BYTES}`)
  }
  return withSession(server, options, async (client, request) => {
    const result = await client.callTool({ name: tool, arguments: args }, CallToolResultSchema, request)
    const content = (result.content ?? []) as Array<{ type: string, text?: unknown }>
    const text = content.filter((part) => part.type === 'text' && typeof part.text === 'string').map((part) => part.text as string).join('\n')
    return {
      content,
      ...(result.structuredContent !== undefined && { structuredContent: result.structuredContent }),
      isError: result.isError === true,
      text
    }
  })
}
