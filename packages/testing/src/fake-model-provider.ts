import { randomBytes } from 'node:crypto'
import { once, setMaxListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify, { type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify'
import { waitFor } from './wait.ts'

/**
 * A stand-in for an AI model provider that speaks the OpenAI wire format for chat
 * completions (`POST /v1/chat/completions`) and embeddings (`POST /v1/embeddings`), so
 * tests and the demo mode drive the service's real client without an account, a network
 * or answers that change between runs. Each test scripts the answers it needs (replies,
 * tool calls, the provider's errors, delays, hangs, raw bodies) and reads back what was
 * asked. Production never uses it.
 */

export const FAKE_MODEL_API_KEY = 'sk-fake-switchboard'
export const FAKE_EMBEDDING_MODEL = 'fake-embedding'

/**
 * The settings that point the service's assistant and AI nodes at a fake provider;
 * with `embeddings`, the knowledge base's embeddings too (AI_EMBEDDING_MODEL).
 */
export const fakeModelEnv = (provider: { url: string }, { embeddings = false } = {}): Record<string, string> => ({
  AI_API_URL: `${provider.url}/v1`,
  AI_API_KEY: FAKE_MODEL_API_KEY,
  AI_MODEL: 'fake-model',
  ...(embeddings ? { AI_EMBEDDING_MODEL: FAKE_EMBEDDING_MODEL } : {})
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

// The steps both endpoints take, `Step` being the endpoint's own kind and `Request` its recorded requests.
// Interfaces, as a type alias may refer to itself through an interface's type arguments but not an alias's.
/**
 * An error answer. 429 and 5xx have the provider's default errors; `error` replaces parts of them.
 * `retryAfterSeconds` sets `Retry-After` (whole seconds, rounded up) and `retry-after-ms` (exact),
 * which the official client prefers, so tests can retry after a fraction of a second.
 */
interface StatusStep { status: number, error?: Partial<ModelError>, retryAfterSeconds?: number }
/** Answers `then` (or the default step) after the delay, unless the client gives up first. */
interface DelayStep<Step> { delayMs: number, then?: Step }
/** Never answers; the connection is dropped when the client gives up or the fake closes. */
interface HangStep { hang: true }
/** Exactly this body with status 200, for huge or malformed answers. */
interface RawBodyStep { rawBody: string, contentType?: string }
/** The step computed from the request itself. */
interface HandlerStep<Step, Request> { handler: (request: Request) => Step | Promise<Step> }
type SharedStep<Step, Request> = StatusStep | DelayStep<Step> | HangStep | RawBodyStep | HandlerStep<Step, Request>

/** How one chat completion request is answered. */
export type ModelStep =
  | { reply: string }
  | { toolCalls: ScriptedToolCall[] }
  /**
   * Answers from the knowledge passages of the system (or developer) prompt, so a test sees that
   * retrieval reached the prompt. The passages are a block of the last such message that has one:
   *
   * ```text
   * Knowledge passages:
   * [1] Returns policy › Shoes (page 3)
   * Shoes can be returned within 30 days. Keep the box.
   *
   * [2] Shipping
   * We ship to 40 countries.
   * ```
   *
   * Each passage is a line `[n] <title> › <heading> (page p)` (heading and page optional), then its
   * text up to a blank line; the block ends at the first line after a blank line that is not such a
   * header. The reply is `According to [n]: <the first sentence of passage n's text>` for the passage
   * whose header and text share the most distinct words (as `fakeEmbedding` sees words) with the last
   * user message, the lowest `n` among equals, or `I do not know.` when there is no passage.
   */
  | { answerFromPassages: true }
  | StatusStep | DelayStep<ModelStep> | HangStep | RawBodyStep | HandlerStep<ModelStep, RecordedModelRequest>

export interface EmbeddingRequestBody {
  model: string
  input: string | string[]
  encoding_format?: 'float' | 'base64'
  dimensions?: number
  user?: string
}

export interface RecordedEmbeddingRequest {
  headers: Record<string, string | string[] | undefined>
  /** As sent: refused requests (401, 400) are recorded too, and their bodies need not have this shape. */
  body: EmbeddingRequestBody
  receivedAt: Date
}

/** How one embeddings request is answered. */
export type EmbeddingStep =
  /** The fake's vectors (`fakeEmbedding` of each input), as unscripted requests get. */
  | { embed: true }
  /**
   * These vectors as the answer's data in order, whatever the inputs were (so also too few, or of other sizes);
   * the base64 encoding, which the official client asks for by default, rounds them to float32.
   */
  | { vectors: number[][] }
  | StatusStep | DelayStep<EmbeddingStep> | HangStep | RawBodyStep | HandlerStep<EmbeddingStep, RecordedEmbeddingRequest>

export interface FakeModelProviderOptions {
  /** Listen port; 0 (default) picks a free one. */
  port?: number
  /** Bearer keys the provider accepts; anything else answers 401 `invalid_api_key`. */
  apiKeys?: string[]
  /** The step for requests when the script is empty; by default a reply echoing the last user message. */
  defaultReply?: ModelStep
  /** The step for embeddings requests when their script is empty; by default `{ embed: true }`. */
  defaultEmbedding?: EmbeddingStep
  /** Called with each chat completion request as it is received (the standalone process prints them). */
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
  /** The embeddings endpoint's requests and script, apart from the chat completions'. */
  embeddings: {
    /** Every embeddings request received, oldest first. */
    requests: RecordedEmbeddingRequest[]
    /** Queues steps, one per valid embeddings request in order (refused requests take none). */
    script: (...steps: EmbeddingStep[]) => void
    /** Scripted steps not yet taken. */
    pending: () => number
    /** Resolves with the requests once there are `count` of them. */
    waitForRequests: (count: number, timeoutMs?: number) => Promise<RecordedEmbeddingRequest[]>
  }
  /** Empties both scripts and the recorded requests, between tests. */
  reset: () => void
  close: () => Promise<void>
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool'])

// Any content a request carries, not only the valid kinds: the fake never throws on an odd body.
const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.map((part: { text?: unknown } | null) => typeof part?.text === 'string' ? part.text : '').join('')
}

/** Deterministic stand-in for a tokenizer: about four characters a token. */
const tokens = (text: string): number => Math.ceil(text.length / 4)

const lastUserText = (messages: ChatMessage[]): string => textOf(messages.findLast((m) => m.role === 'user')?.content)

const echo: ModelStep = { handler: ({ body }) => ({ reply: `Echo: ${lastUserText(body.messages)}` }) }

// Words that say little about what a text is about, left out of its bag of words.
const STOP_WORDS = new Set([
  'a', 'about', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'can', 'could', 'did', 'do', 'does', 'for', 'from',
  'had', 'has', 'have', 'he', 'her', 'his', 'how', 'i', 'if', 'in', 'into', 'is', 'it', 'its', 'me', 'my', 'of', 'on',
  'or', 'our', 'she', 'so', 'than', 'that', 'the', 'their', 'them', 'then', 'there', 'these', 'they', 'this', 'to',
  'us', 'was', 'we', 'were', 'what', 'when', 'where', 'which', 'who', 'why', 'will', 'with', 'would', 'you', 'your'
])

/** The words of a text as the fake sees them: lowercase, stop words left out, a plural's `s` cut ("shoes" is "shoe"). */
const wordsOf = (text: string): string[] => text.normalize('NFKC').toLowerCase()
  .split(/[^\p{L}\p{M}\p{N}]+/u)
  .filter((word) => word !== '' && !STOP_WORDS.has(word))
  .map((word) => word.length > 3 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word)

const utf8 = new TextEncoder()
/** FNV-1a, 32 bits, of the word's UTF-8 bytes. */
const fnv1a = (word: string): number => {
  let hash = 0x811c9dc5
  for (const byte of utf8.encode(word)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0
  return hash
}

const DEFAULT_DIMENSIONS = 64
const MAX_DIMENSIONS = 4096
const MAX_INPUTS = 2048
const MAX_INPUT_TOKENS = 8192

/**
 * The fake's embedding of a text: a bag of words hashed into `dimensions` signed buckets, L2-normalised,
 * so texts that share words have a high cosine and texts that share none about 0. A text without words
 * is the unit vector along the first dimension. The components are float32 values, so the base64
 * encoding (float32) carries exactly the vector the float encoding does.
 */
export function fakeEmbedding (text: string, dimensions = DEFAULT_DIMENSIONS): number[] {
  const vector = new Array<number>(dimensions).fill(0)
  for (const word of wordsOf(text)) {
    const hash = fnv1a(word)
    // The top bit picks the sign: independent of the bucket, so colliding words cancel as often as they add.
    vector[hash % dimensions] += hash >>> 31 === 1 ? -1 : 1
  }
  const norm = Math.hypot(...vector)
  // No words, or words that cancelled out: still a unit vector, as a real model's always is.
  if (norm === 0) return vector.map((_, index) => index === 0 ? 1 : 0)
  return vector.map((value) => Math.fround(value / norm))
}

/** Float32 little-endian, base64-encoded: the API's `encoding_format: 'base64'`. */
const base64Of = (vector: number[]): string => {
  const bytes = new DataView(new ArrayBuffer(vector.length * 4))
  vector.forEach((value, index) => { bytes.setFloat32(index * 4, value, true) })
  return Buffer.from(bytes.buffer).toString('base64')
}

interface Passage { number: number, header: string, lines: string[] }

/** The passages of the last system or developer message with a `Knowledge passages:` block (see `answerFromPassages`). */
function passagesOf (messages: ChatMessage[]): Passage[] {
  for (const message of messages.toReversed()) {
    if (message.role !== 'system' && message.role !== 'developer') continue
    const lines = textOf(message.content).split(/\r?\n/).map((line) => line.trim())
    const start = lines.lastIndexOf('Knowledge passages:')
    if (start === -1) continue
    const passages: Passage[] = []
    let current: Passage | undefined
    for (const line of lines.slice(start + 1)) {
      if (line === '') {
        current = undefined
      } else if (current !== undefined) {
        current.lines.push(line)
      } else {
        const header = /^\[(\d+)\]\s*(.*)$/.exec(line)
        if (header === null) break
        current = { number: Number(header[1]), header: header[2].replace(/\s*\(page \d+\)$/, ''), lines: [] }
        passages.push(current)
      }
    }
    return passages
  }
  return []
}

/** The `answerFromPassages` reply to a request. */
function fromPassages (messages: ChatMessage[]): string {
  const asked = new Set(wordsOf(lastUserText(messages)))
  const shared = (passage: Passage): number =>
    [...new Set(wordsOf([passage.header, ...passage.lines].join(' ')))].filter((word) => asked.has(word)).length
  const best = passagesOf(messages)
    .map((passage) => ({ passage, shared: shared(passage) }))
    .sort((a, b) => b.shared - a.shared || a.passage.number - b.passage.number)[0]?.passage
  if (best === undefined) return 'I do not know.'
  const text = best.lines.join(' ')
  const firstSentence = /^.*?[.!?](?=\s|$)/.exec(text)?.[0] ?? text
  return `According to [${best.number}]: ${firstSentence}`.trimEnd()
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

/** The first thing the real API would refuse in an embeddings body, among what the fake checks. */
function embeddingRefusal (body: unknown): ModelError | undefined {
  const { model, input, encoding_format: encodingFormat, dimensions } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  if (typeof model !== 'string') return { message: 'you must provide a model parameter', type: 'invalid_request_error', code: null }
  if (input === undefined) return { message: "Missing required parameter: 'input'.", type: 'invalid_request_error', param: 'input', code: 'missing_required_parameter' }
  const inputs: unknown[] = Array.isArray(input) ? input : [input]
  // The real API also takes token ids (an array of integers, or arrays of them), which the fake cannot turn into words.
  if (inputs.length > 0 && inputs.every((item) => Number.isInteger(item) || (Array.isArray(item) && item.every((id) => Number.isInteger(id))))) {
    return { message: 'token inputs are not supported by the fake', type: 'invalid_request_error', param: 'input', code: null }
  }
  // The real API's one vague answer to an empty input, an empty string among them, too many inputs or a wrong type.
  if (inputs.length === 0 || inputs.length > MAX_INPUTS || !inputs.every((item) => typeof item === 'string' && item !== '')) {
    return { message: "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", type: 'invalid_request_error', code: null }
  }
  const longest = Math.max(...(inputs as string[]).map(tokens))
  if (longest > MAX_INPUT_TOKENS) {
    return {
      message: `This model's maximum context length is ${MAX_INPUT_TOKENS} tokens, however you requested ${longest} tokens (${longest} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.`,
      type: 'invalid_request_error',
      code: null
    }
  }
  if (encodingFormat !== undefined && encodingFormat !== 'float' && encodingFormat !== 'base64') {
    return { message: `Invalid value: '${String(encodingFormat)}'. Supported values are: 'float' and 'base64'.`, type: 'invalid_request_error', param: 'encoding_format', code: 'invalid_value' }
  }
  if (dimensions === undefined) return undefined
  if (!Number.isInteger(dimensions)) {
    return { message: `Invalid type for 'dimensions': expected an integer, but got ${typeof dimensions === 'number' ? 'a decimal number' : typeof dimensions} instead.`, type: 'invalid_request_error', param: 'dimensions', code: 'invalid_type' }
  }
  if ((dimensions as number) < 1) {
    return { message: `Invalid 'dimensions': integer below minimum value. Expected a value >= 1, but got ${String(dimensions)} instead.`, type: 'invalid_request_error', param: 'dimensions', code: 'integer_below_min_value' }
  }
  if ((dimensions as number) > MAX_DIMENSIONS) {
    return { message: `Invalid 'dimensions': integer above maximum value. Expected a value <= ${MAX_DIMENSIONS}, but got ${String(dimensions)} instead.`, type: 'invalid_request_error', param: 'dimensions', code: 'integer_above_max_value' }
  }
}

export async function startFakeModelProvider (options: FakeModelProviderOptions = {}): Promise<FakeModelProvider> {
  const apiKeys = options.apiKeys ?? [FAKE_MODEL_API_KEY]
  const defaultReply = options.defaultReply ?? echo
  const defaultEmbedding = options.defaultEmbedding ?? { embed: true }
  const requests: RecordedModelRequest[] = []
  const script: ModelStep[] = []
  const embeddingRequests: RecordedEmbeddingRequest[] = []
  const embeddingScript: EmbeddingStep[] = []
  // Aborted by close(), so that delayed and hanging answers let the server stop at once.
  const closing = new AbortController()
  // One listener per request in flight: a bench's dozens of delayed answers at once are not a leak.
  setMaxListeners(0, closing.signal)
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

  /** Answers the steps both endpoints share; `next` answers the endpoint's step a handler or a delay leads to. */
  const answerShared = async <Step, Request>(
    step: SharedStep<Step, Request>, request: Request, reply: FastifyReply, signal: AbortSignal,
    next: (step: Step) => Promise<FastifyReply>, otherwise: Step
  ): Promise<FastifyReply> => {
    if ('handler' in step) return next(await step.handler(request))
    if ('delayMs' in step) {
      try {
        await sleep(step.delayMs, undefined, { signal })
      } catch {
        return drop(reply)
      }
      return next(step.then ?? otherwise)
    }
    if ('hang' in step) {
      if (!signal.aborted) await once(signal, 'abort')
      return drop(reply)
    }
    if ('rawBody' in step) return reply.code(200).type(step.contentType ?? 'application/json').send(step.rawBody)
    if (step.retryAfterSeconds !== undefined) {
      reply.header('retry-after', String(Math.ceil(step.retryAfterSeconds))).header('retry-after-ms', String(step.retryAfterSeconds * 1000))
    }
    return fail(reply, step.status, { ...errorFor(step.status), ...step.error })
  }

  const answer = async (step: ModelStep, request: RecordedModelRequest, reply: FastifyReply, signal: AbortSignal): Promise<FastifyReply> => {
    if ('reply' in step) return reply.send(completion(request.body, { content: step.reply }, 'stop'))
    if ('answerFromPassages' in step) return reply.send(completion(request.body, { content: fromPassages(request.body.messages) }, 'stop'))
    if ('toolCalls' in step) {
      const toolCalls = step.toolCalls.map((call): WireToolCall => ({
        id: `call_${randomBytes(18).toString('base64url')}`,
        type: 'function',
        function: { name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments) }
      }))
      return reply.send(completion(request.body, { content: null, tool_calls: toolCalls }, 'tool_calls'))
    }
    return answerShared(step, request, reply, signal, async (next) => answer(next, request, reply, signal), defaultReply)
  }

  const embeddingList = (body: EmbeddingRequestBody, vectors: number[][]): unknown => {
    const promptTokens = [body.input].flat().reduce((sum, input) => sum + tokens(input), 0)
    return {
      object: 'list',
      data: vectors.map((vector, index) => ({ object: 'embedding', index, embedding: body.encoding_format === 'base64' ? base64Of(vector) : vector })),
      model: body.model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens }
    }
  }

  const embed = async (step: EmbeddingStep, request: RecordedEmbeddingRequest, reply: FastifyReply, signal: AbortSignal): Promise<FastifyReply> => {
    const { body } = request
    if ('embed' in step) return reply.send(embeddingList(body, [body.input].flat().map((input) => fakeEmbedding(input, body.dimensions))))
    if ('vectors' in step) return reply.send(embeddingList(body, step.vectors))
    return answerShared(step, request, reply, signal, async (next) => embed(next, request, reply, signal), defaultEmbedding)
  }

  /** The real API's 401 for a request without one of the keys the fake accepts. */
  const unauthorized = (request: FastifyRequest): ModelError | undefined => {
    const key = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1]
    if (key === undefined) {
      return {
        message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        type: 'invalid_request_error',
        code: null
      }
    }
    if (apiKeys.includes(key)) return undefined
    const shown = key.length > 8 ? `${key.slice(0, 3)}${'*'.repeat(key.length - 7)}${key.slice(-4)}` : key
    return {
      message: `Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`,
      type: 'invalid_request_error',
      code: 'invalid_api_key'
    }
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
    const denied = unauthorized(request)
    if (denied !== undefined) return fail(reply, 401, denied)
    const refused = refusal(request.body)
    if (refused !== undefined) return fail(reply, 400, refused)
    return answer(script.shift() ?? defaultReply, recorded, reply, givenUp(request, reply))
  }
  for (const path of ['/v1/chat/completions', '/chat/completions']) server.post<{ Body: ModelRequestBody }>(path, completions)

  const embeddings = async (request: FastifyRequest<{ Body: EmbeddingRequestBody }>, reply: FastifyReply): Promise<FastifyReply> => {
    const recorded: RecordedEmbeddingRequest = { headers: request.headers, body: request.body, receivedAt: new Date() }
    embeddingRequests.push(recorded)
    const denied = unauthorized(request)
    if (denied !== undefined) return fail(reply, 401, denied)
    const refused = embeddingRefusal(request.body)
    if (refused !== undefined) return fail(reply, 400, refused)
    return embed(embeddingScript.shift() ?? defaultEmbedding, recorded, reply, givenUp(request, reply))
  }
  for (const path of ['/v1/embeddings', '/embeddings']) server.post<{ Body: EmbeddingRequestBody }>(path, embeddings)

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
    embeddings: {
      requests: embeddingRequests,
      script: (...steps) => { embeddingScript.push(...steps) },
      pending: () => embeddingScript.length,
      waitForRequests: async (count, timeoutMs) => waitFor(
        async () => embeddingRequests.length >= count ? embeddingRequests.slice() : undefined,
        { timeoutMs, what: `${count} embeddings requests` }
      )
    },
    reset: () => {
      script.length = 0
      requests.length = 0
      embeddingScript.length = 0
      embeddingRequests.length = 0
    },
    close: async () => {
      closing.abort()
      await server.close()
    }
  }
}
