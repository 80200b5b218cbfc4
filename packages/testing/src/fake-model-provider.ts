import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify, { type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify'
import { waitFor } from './wait.ts'

/**
 * A stand-in for an AI model provider that speaks the OpenAI Chat Completions wire
 * format (`POST /v1/chat/completions`), so tests and the demo mode drive the service's
 * real client without an account, a network or answers that change between runs. Each
 * test scripts the answers it needs (replies, tool calls, the provider's errors, delays,
 * hangs, raw bodies) and reads back what was asked. Production never uses it.
 */

export const FAKE_MODEL_API_KEY = 'sk-fake-switchboard'

/** The settings that point the service's assistant and AI nodes at a fake provider. */
export const fakeModelEnv = (provider: { url: string }): Record<string, string> => ({
  AI_API_URL: `${provider.url}/v1`,
  AI_API_KEY: FAKE_MODEL_API_KEY,
  AI_MODEL: 'fake-model'
})

/** What the real API accepts as one request body; larger ones answer 413. */
const BODY_LIMIT = 4 * 1024 * 1024

export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool'
  /** A string, or content parts of which the `text` ones count. */
  content?: string | Array<{ type: string, text?: string }> | null
  tool_calls?: WireToolCall[]
  tool_call_id?: string
  name?: string
}

export interface WireToolCall {
  id: string
  type: 'function'
  /** `arguments` is a JSON-encoded string on the wire, and a model may get it wrong. */
  function: { name: string, arguments: string }
}

export interface ModelRequestBody {
  model: string
  messages: ChatMessage[]
  tools?: Array<{ type: 'function', function: { name: string, description?: string, parameters?: unknown } }>
  tool_choice?: unknown
  response_format?: unknown
  max_tokens?: number
  max_completion_tokens?: number
  temperature?: number
  stream?: boolean
}

export interface RecordedModelRequest {
  headers: Record<string, string | string[] | undefined>
  /** As sent: refused requests (401, 400) are recorded too, and their bodies need not have this shape. */
  body: ModelRequestBody
  receivedAt: Date
}

/** The `error` object of OpenAI's error bodies. */
export interface ModelError {
  message: string
  type: string
  param?: string | null
  code: string | null
}

export interface ScriptedToolCall {
  name: string
  /** An object is JSON-encoded into the wire's `arguments` string; a string is sent as it is, valid JSON or not. */
  arguments: unknown
}

/** How one request is answered. */
export type ModelStep =
  | { reply: string }
  | { toolCalls: ScriptedToolCall[] }
  /**
   * An error answer. 429 and 5xx have the provider's default errors; `error` replaces parts of them.
   * `retryAfterSeconds` sets `Retry-After` (whole seconds, rounded up) and `retry-after-ms` (exact),
   * which the official client prefers, so tests can retry after a fraction of a second.
   */
  | { status: number, error?: Partial<ModelError>, retryAfterSeconds?: number }
  /** Answers `then` (or the default step) after the delay, unless the client gives up first. */
  | { delayMs: number, then?: ModelStep }
  /** Never answers; the connection is dropped when the client gives up or the fake closes. */
  | { hang: true }
  /** Exactly this body with status 200, for huge or malformed answers. */
  | { rawBody: string, contentType?: string }
  /** The step computed from the request itself. */
  | { handler: (request: RecordedModelRequest) => ModelStep | Promise<ModelStep> }

export interface FakeModelProviderOptions {
  /** Listen port; 0 (default) picks a free one. */
  port?: number
  /** Bearer keys the provider accepts; anything else answers 401 `invalid_api_key`. */
  apiKeys?: string[]
  /** The step for requests when the script is empty; by default a reply echoing the last user message. */
  defaultReply?: ModelStep
  /** Called with each request as it is received (the standalone process prints them). */
  onRequest?: (request: RecordedModelRequest) => void
}

export interface FakeModelProvider {
  /** The server's root: the OpenAI client's `baseURL` (and AI_API_URL) is `${url}/v1`. */
  url: string
  /** Every chat completion request received, oldest first. */
  requests: RecordedModelRequest[]
  /** Queues steps, one per valid request in order (refused requests take none). */
  script: (...steps: ModelStep[]) => void
  /** Scripted steps not yet taken. */
  pending: () => number
  /** Resolves with the requests once there are `count` of them. */
  waitForRequests: (count: number, timeoutMs?: number) => Promise<RecordedModelRequest[]>
  /** Empties the script and the recorded requests, between tests. */
  reset: () => void
  close: () => Promise<void>
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool'])

const textOf = (content: ChatMessage['content']): string => typeof content === 'string'
  ? content
  : (content ?? []).map((part) => part.text ?? '').join('')

/** Deterministic stand-in for a tokenizer: about four characters a token. */
const tokens = (text: string): number => Math.ceil(text.length / 4)

const echo: ModelStep = {
  handler: ({ body }) => ({ reply: `Echo: ${textOf(body.messages.findLast((m) => m.role === 'user')?.content)}` })
}

const errorFor = (status: number): ModelError => {
  if (status === 429) return { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' }
  if (status >= 500) return { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', code: null }
  return { message: `The fake was scripted to answer ${status}`, type: 'invalid_request_error', code: null }
}

/** The first thing the real API would refuse in the body, among what the fake checks. */
function refusal (body: unknown): ModelError | undefined {
  const { model, messages, stream } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  if (typeof model !== 'string') return { message: 'you must provide a model parameter', type: 'invalid_request_error', code: null }
  if (!Array.isArray(messages)) return { message: "Missing required parameter: 'messages'.", type: 'invalid_request_error', param: 'messages', code: 'missing_required_parameter' }
  if (messages.length === 0) {
    return { message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", type: 'invalid_request_error', param: 'messages', code: 'empty_array' }
  }
  if (stream === true) return { message: 'stream is not supported by the fake', type: 'invalid_request_error', param: 'stream', code: null }
  // Tool messages answer the tool calls of the assistant message just before them, every one of them.
  let open: { index: number, ids: Set<unknown> } | undefined
  const unanswered = (): ModelError | undefined => open === undefined || open.ids.size === 0
    ? undefined
    : {
        message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open.ids].join(', ')}`,
        type: 'invalid_request_error',
        param: `messages.[${open.index}].role`,
        code: null
      }
  for (const [index, message] of (messages as unknown[]).entries()) {
    if (typeof message !== 'object' || message === null) {
      return { message: `Invalid type for 'messages[${index}]': expected an object, but got ${typeof message} instead.`, type: 'invalid_request_error', param: `messages[${index}]`, code: 'invalid_type' }
    }
    const { role, tool_calls: toolCalls, tool_call_id: toolCallId } = message as Record<string, unknown>
    if (typeof role !== 'string' || !ROLES.has(role)) {
      return { message: `Invalid value: '${String(role)}'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.`, type: 'invalid_request_error', param: `messages[${index}].role`, code: 'invalid_value' }
    }
    if (role === 'tool') {
      if (open?.ids.delete(toolCallId) === true) continue
      return { message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", type: 'invalid_request_error', param: `messages.[${index}].role`, code: null }
    }
    const notAnswered = unanswered()
    if (notAnswered !== undefined) return notAnswered
    open = role === 'assistant' && Array.isArray(toolCalls)
      ? { index, ids: new Set(toolCalls.map((call: { id?: unknown } | null) => call?.id)) }
      : undefined
  }
  return unanswered()
}

export async function startFakeModelProvider (options: FakeModelProviderOptions = {}): Promise<FakeModelProvider> {
  const apiKeys = options.apiKeys ?? [FAKE_MODEL_API_KEY]
  const defaultReply = options.defaultReply ?? echo
  const requests: RecordedModelRequest[] = []
  const script: ModelStep[] = []
  // Aborted by close(), so that delayed and hanging answers let the server stop at once.
  const closing = new AbortController()
  const server = Fastify({ logger: false, bodyLimit: BODY_LIMIT })

  const fail = (reply: FastifyReply, status: number, error: ModelError): FastifyReply =>
    reply.code(status).send({ error: { message: error.message, type: error.type, param: error.param ?? null, code: error.code } })

  // Aborted when the client disconnects before the answer, or the fake closes.
  const givenUp = (request: FastifyRequest, reply: FastifyReply): AbortSignal => {
    const stop = new AbortController()
    const abort = (): void => { stop.abort() }
    if (request.raw.socket.destroyed) abort()
    closing.signal.addEventListener('abort', abort, { once: true })
    reply.raw.once('close', () => {
      closing.signal.removeEventListener('abort', abort)
      abort()
    })
    return stop.signal
  }
  const drop = (reply: FastifyReply): FastifyReply => {
    reply.hijack()
    reply.raw.destroy()
    return reply
  }

  const completion = (body: ModelRequestBody, message: { content: string | null, tool_calls?: WireToolCall[] }, finishReason: string): unknown => {
    const promptTokens = tokens(body.messages.map((m) => textOf(m.content)).join(''))
    const completionTokens = tokens(message.content ?? (message.tool_calls ?? []).map((c) => c.function.name + c.function.arguments).join(''))
    return {
      id: `chatcmpl-${randomBytes(21).toString('base64url')}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', ...message, refusal: null }, finish_reason: finishReason, logprobs: null }],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens }
    }
  }

  const answer = async (step: ModelStep, request: RecordedModelRequest, reply: FastifyReply, signal: AbortSignal): Promise<FastifyReply> => {
    if ('handler' in step) return answer(await step.handler(request), request, reply, signal)
    if ('delayMs' in step) {
      try {
        await sleep(step.delayMs, undefined, { signal })
      } catch {
        return drop(reply)
      }
      return answer(step.then ?? defaultReply, request, reply, signal)
    }
    if ('hang' in step) {
      if (!signal.aborted) await once(signal, 'abort')
      return drop(reply)
    }
    if ('rawBody' in step) return reply.code(200).type(step.contentType ?? 'application/json').send(step.rawBody)
    if ('status' in step) {
      if (step.retryAfterSeconds !== undefined) {
        reply.header('retry-after', String(Math.ceil(step.retryAfterSeconds))).header('retry-after-ms', String(step.retryAfterSeconds * 1000))
      }
      return fail(reply, step.status, { ...errorFor(step.status), ...step.error })
    }
    if ('toolCalls' in step) {
      const toolCalls = step.toolCalls.map((call): WireToolCall => ({
        id: `call_${randomBytes(18).toString('base64url')}`,
        type: 'function',
        function: { name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments) }
      }))
      return reply.send(completion(request.body, { content: null, tool_calls: toolCalls }, 'tool_calls'))
    }
    return reply.send(completion(request.body, { content: step.reply }, 'stop'))
  }

  // The provider's request ids, which its errors carry and clients log.
  server.addHook('onRequest', async (_request, reply) => {
    reply.header('x-request-id', `req_${randomBytes(16).toString('hex')}`)
  })
  // Fastify's own refusals (413 body too large, unparsable JSON, ...) in the provider's error shape.
  server.setErrorHandler((error: FastifyError, _request, reply) => {
    const status = error.statusCode ?? 500
    return fail(reply, status, { message: error.message, type: status < 500 ? 'invalid_request_error' : 'server_error', code: null })
  })
  server.setNotFoundHandler((request, reply) =>
    fail(reply, 404, { message: `Invalid URL (${request.method} ${request.url})`, type: 'invalid_request_error', code: null }))

  const completions = async (request: FastifyRequest<{ Body: ModelRequestBody }>, reply: FastifyReply): Promise<FastifyReply> => {
    const recorded: RecordedModelRequest = { headers: request.headers, body: request.body, receivedAt: new Date() }
    requests.push(recorded)
    options.onRequest?.(recorded)
    const key = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1]
    if (key === undefined) {
      return fail(reply, 401, {
        message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        type: 'invalid_request_error',
        code: null
      })
    }
    if (!apiKeys.includes(key)) {
      const shown = key.length > 8 ? `${key.slice(0, 3)}${'*'.repeat(key.length - 7)}${key.slice(-4)}` : key
      return fail(reply, 401, {
        message: `Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        type: 'invalid_request_error',
        code: 'invalid_api_key'
      })
    }
    const refused = refusal(request.body)
    if (refused !== undefined) return fail(reply, 400, refused)
    return answer(script.shift() ?? defaultReply, recorded, reply, givenUp(request, reply))
  }
  for (const path of ['/v1/chat/completions', '/chat/completions']) server.post<{ Body: ModelRequestBody }>(path, completions)

  await server.listen({ host: '127.0.0.1', port: options.port ?? 0 })
  const address = server.server.address()
  if (address === null || typeof address === 'string') throw new Error('fake model provider has no port')

  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    script: (...steps) => { script.push(...steps) },
    pending: () => script.length,
    waitForRequests: async (count, timeoutMs) => waitFor(
      async () => requests.length >= count ? requests.slice() : undefined,
      { timeoutMs, what: `${count} model requests` }
    ),
    reset: () => {
      script.length = 0
      requests.length = 0
    },
    close: async () => {
      closing.abort()
      await server.close()
    }
  }
}
