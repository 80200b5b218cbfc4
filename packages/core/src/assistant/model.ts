import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai'
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions'
import type { AiConfig } from '../config.ts'
import type { NodeModelProvider } from '../engine/types.ts'

/**
 * The model provider: any OpenAI-compatible Chat Completions endpoint, through the official
 * `openai` client (README, The assistant: why this client). The client retries 429 and 5xx
 * answers itself, with backoff and the provider's Retry-After; this module bounds what it reads.
 */

export type ModelMessage = ChatCompletionMessageParam
export type ModelTool = ChatCompletionTool

export interface ModelToolCall {
  id: string
  name: string
  /** The model's arguments as it wrote them: JSON text, not yet trusted. */
  arguments: string
}

export interface ModelAnswer {
  content: string | null
  toolCalls: ModelToolCall[]
  model: string
  tokensIn: number
  tokensOut: number
}

export interface ModelRequest {
  model: string
  messages: ModelMessage[]
  tools?: ModelTool[]
  /** A JSON Schema the answer must follow (`response_format: json_schema`). */
  jsonSchema?: Record<string, unknown>
  maxOutputTokens: number
  signal?: AbortSignal
}

/** Why a model call failed, in words a turn's log and a node's error can show. */
export class ModelCallError extends Error {
  override name = 'ModelCallError'

  constructor (message: string, readonly kind: 'timeout' | 'rate_limited' | 'unavailable' | 'refused' | 'too_large' | 'aborted', readonly status?: number) {
    super(message)
  }
}

export interface ModelClientOptions {
  apiUrl: string
  apiKey?: string
  timeoutMs: number
  maxRetries: number
  maxResponseBytes: number
}

/** The error type of the answer `boundedFetch` puts in place of one too large. */
const TOO_LARGE_TYPE = 'switchboard_response_too_large'

/**
 * `fetch` that reads at most `maxBytes` of an answer's body: a provider (or anything at its
 * address) answering 10 MB of text fails the call instead of filling the worker's memory. The
 * failure is an answer the client does not retry (`x-should-retry: false`): asking again would
 * read the same 10 MB.
 */
function boundedFetch (maxBytes: number): typeof fetch {
  const tooLarge = (message: string): Response => new Response(JSON.stringify({ error: { message, type: TOO_LARGE_TYPE } }), {
    status: 413,
    headers: { 'content-type': 'application/json', 'x-should-retry': 'false' }
  })
  return async (input, init) => {
    const response = await fetch(input, init)
    const declared = Number(response.headers.get('content-length'))
    if (Number.isFinite(declared) && declared > maxBytes) {
      await response.body?.cancel()
      return tooLarge(`the provider's answer is ${declared} bytes, more than AI_MAX_RESPONSE_BYTES (${maxBytes})`)
    }
    if (response.body === null) return response
    const chunks: Uint8Array[] = []
    let size = 0
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength
      if (size > maxBytes) return tooLarge(`the provider's answer is more than AI_MAX_RESPONSE_BYTES (${maxBytes} bytes)`)
      chunks.push(chunk)
    }
    return new Response(Buffer.concat(chunks), { status: response.status, statusText: response.statusText, headers: response.headers })
  }
}

function callError (err: unknown): ModelCallError {
  if (err instanceof ModelCallError) return err
  if (err instanceof APIError && err.type === TOO_LARGE_TYPE) {
    return new ModelCallError((err.error as { message?: string } | undefined)?.message ?? 'the provider\'s answer is too large', 'too_large')
  }
  if (err instanceof APIUserAbortError) return new ModelCallError('the model call was cancelled', 'aborted')
  if (err instanceof APIConnectionTimeoutError) return new ModelCallError('the model did not answer in time (AI_TIMEOUT_MS)', 'timeout')
  if (err instanceof APIError && err.status !== undefined) {
    const detail = err.message.slice(0, 300)
    if (err.status === 429) return new ModelCallError(`the provider is rate limiting: ${detail}`, 'rate_limited', 429)
    if (err.status >= 500) return new ModelCallError(`the provider failed: ${detail}`, 'unavailable', err.status)
    return new ModelCallError(`the provider refused the call: ${detail}`, 'refused', err.status)
  }
  const message = err instanceof Error ? err.message : String(err)
  return new ModelCallError(`the provider could not be reached: ${message.slice(0, 300)}`, 'unavailable')
}

const MAX_TOOL_CALLS_READ = 20
/** A provider's tool call ids are short; a longer one is cut (it keys the call's run). */
const MAX_TOOL_CALL_ID_CHARS = 100

export function createModelClient (options: ModelClientOptions) {
  const client = new OpenAI({
    baseURL: options.apiUrl,
    // Local servers (Ollama, vLLM, llama.cpp) take no key; the client wants one all the same.
    apiKey: options.apiKey ?? 'none',
    timeout: options.timeoutMs,
    maxRetries: options.maxRetries,
    fetch: boundedFetch(options.maxResponseBytes)
  })

  return {
    async complete (request: ModelRequest): Promise<ModelAnswer> {
      let completion: OpenAI.Chat.Completions.ChatCompletion
      try {
        completion = await client.chat.completions.create({
          model: request.model,
          messages: request.messages,
          ...(request.tools !== undefined && request.tools.length > 0 && { tools: request.tools }),
          ...(request.jsonSchema !== undefined && {
            response_format: { type: 'json_schema', json_schema: { name: 'output', schema: request.jsonSchema, strict: false } }
          }),
          max_tokens: request.maxOutputTokens
        }, { signal: request.signal })
      } catch (err) {
        throw callError(err)
      }
      const choice = Array.isArray(completion?.choices) ? completion.choices[0] : undefined
      if (choice?.message === undefined || choice.message === null) throw new ModelCallError('the provider answered without a message', 'refused')
      const toolCalls = (Array.isArray(choice.message.tool_calls) ? choice.message.tool_calls : [])
        .slice(0, MAX_TOOL_CALLS_READ)
        .flatMap((call): ModelToolCall[] => call.type === 'function' && typeof call.function?.name === 'string'
          ? [{ id: String(call.id).slice(0, MAX_TOOL_CALL_ID_CHARS), name: call.function.name, arguments: typeof call.function.arguments === 'string' ? call.function.arguments : '' }]
          : [])
      const usage = completion.usage
      return {
        content: typeof choice.message.content === 'string' ? choice.message.content : null,
        toolCalls,
        model: typeof completion.model === 'string' ? completion.model : request.model,
        tokensIn: Number.isSafeInteger(usage?.prompt_tokens) ? usage!.prompt_tokens : 0,
        tokensOut: Number.isSafeInteger(usage?.completion_tokens) ? usage!.completion_tokens : 0
      }
    },

    /**
     * The embeddings of `inputs` (README, Knowledge), in their order, each scaled to length 1 so that
     * a dot product is their cosine. An answer of another count, or of vectors of unequal or
     * unreasonable length, or with values that are not finite numbers, fails the call.
     */
    async embed (request: { model: string, inputs: string[], dimensions?: number, signal?: AbortSignal }): Promise<Float32Array[]> {
      let answer: OpenAI.Embeddings.CreateEmbeddingResponse
      try {
        answer = await client.embeddings.create({
          model: request.model,
          input: request.inputs,
          encoding_format: 'float',
          ...(request.dimensions !== undefined && { dimensions: request.dimensions })
        }, { signal: request.signal })
      } catch (err) {
        throw callError(err)
      }
      const data = Array.isArray(answer?.data) ? answer.data : []
      if (data.length !== request.inputs.length) throw new ModelCallError(`the provider answered ${data.length} embeddings for ${request.inputs.length} inputs`, 'refused')
      const vectors: Float32Array[] = new Array(data.length)
      for (const [position, item] of data.entries()) {
        const index = Number.isSafeInteger(item?.index) ? item.index : position
        const values = item?.embedding
        if (!Array.isArray(values) || values.length === 0 || values.length > MAX_EMBEDDING_DIMENSIONS || index < 0 || index >= data.length) {
          throw new ModelCallError('the provider answered an embedding that is not a list of numbers', 'refused')
        }
        vectors[index] = unitVector(values)
      }
      const dimensions = vectors[0]?.length
      if (vectors.some((vector) => vector === undefined || vector.length !== dimensions)) throw new ModelCallError('the provider answered embeddings of unequal lengths', 'refused')
      return vectors
    }
  }
}

/** The longest embedding read (the largest models have 4,096 dimensions). */
const MAX_EMBEDDING_DIMENSIONS = 8192

function unitVector (values: unknown[]): Float32Array {
  const vector = new Float32Array(values.length)
  let norm = 0
  for (const [i, value] of values.entries()) {
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new ModelCallError('the provider answered an embedding with a value that is not a number', 'refused')
    vector[i] = value
    norm += value * value
  }
  norm = Math.sqrt(norm)
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i] = vector[i]! / norm
  return vector
}

export type ModelClient = ReturnType<typeof createModelClient>

/** The provider of the ai nodes (ai_generate, ai_reply): AI_MODEL at AI_API_URL with AI_API_KEY, or null when AI_MODEL is unset. */
export function nodeModelProvider (ai: AiConfig): NodeModelProvider | null {
  if (ai.model === undefined) return null
  const client = createModelClient(ai)
  return { model: ai.model, maxOutputTokens: ai.maxOutputTokens, historyMaxChars: ai.historyMaxChars, complete: client.complete }
}
