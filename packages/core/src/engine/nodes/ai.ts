import { Type } from 'typebox'
import { Value } from 'typebox/value'
import { NodeError, RetryableNodeError, type NodeDependencies, type NodeModelAnswer, type NodeModelFailureKind, type NodeModelProvider, type NodeModelRequest } from '../types.ts'
import { objectSchemaProblem } from '../json-schema.ts'
import { optionalChoice, optionalNumber, optionalObject } from './config.ts'
import { oneOfAnyCase, templated } from './definition.ts'

/** The most AI_MAX_OUTPUT_TOKENS may be (README, Configuration); a node's own bound is checked against the setting when it runs. */
const MAX_OUTPUT_TOKENS_CEILING = 128_000

/** Failures the provider may get over: retried by the node's `retry` (the client already retried 429 and 5xx answers). */
const PASSING: ReadonlySet<NodeModelFailureKind> = new Set(['rate_limited', 'unavailable', 'timeout'])

/** The fields both ai nodes have. */
export const AI_FIELDS = {
  model: Type.Optional(templated(Type.String({ minLength: 1, maxLength: 200, description: 'The model to ask; AI_MODEL when absent.' })))
}

export const MAX_OUTPUT_TOKENS_FIELD = Type.Optional(Type.Integer({
  minimum: 1,
  maximum: MAX_OUTPUT_TOKENS_CEILING,
  description: 'The most the model may write (tokens); AI_MAX_OUTPUT_TOKENS when absent, and never more.'
}))

/** The provider, or the node's failure when the worker has none (no retry: it will not have one on the next attempt). */
export function providerOf (deps: NodeDependencies): NodeModelProvider {
  if (deps.ai === null) throw new NodeError('No AI model is configured (AI_MODEL)')
  return deps.ai
}

/** The node's `maxOutputTokens` within AI_MAX_OUTPUT_TOKENS, or the setting itself. */
export function outputTokensOf (config: Record<string, unknown>, provider: NodeModelProvider): number {
  const asked = optionalNumber(config, 'maxOutputTokens', 1, MAX_OUTPUT_TOKENS_CEILING)
  if (asked === undefined) return provider.maxOutputTokens
  if (!Number.isInteger(asked)) throw new NodeError('maxOutputTokens must be a whole number')
  if (asked > provider.maxOutputTokens) throw new NodeError(`maxOutputTokens ${asked} is more than AI_MAX_OUTPUT_TOKENS (${provider.maxOutputTokens})`)
  return asked
}

/** Text the node sends the model, at most `maxBytes` of UTF-8 once rendered; an object or a list rendered alone is sent as JSON. */
export function promptText (config: Record<string, unknown>, field: string, maxBytes: number): string | undefined {
  const value = config[field]
  if (value === undefined || value === null || value === '') return undefined
  const text = typeof value === 'string' ? value : JSON.stringify(value)
  const bytes = Buffer.byteLength(text)
  if (bytes > maxBytes) throw new NodeError(`${field} is ${bytes} bytes once rendered: at most ${maxBytes}`)
  return text
}

/** One model call: a failure that may pass is retryable (the node's `retry`), any other fails the node. */
export async function askModel (provider: NodeModelProvider, request: NodeModelRequest): Promise<NodeModelAnswer> {
  try {
    return await provider.complete(request)
  } catch (err) {
    const message = `The AI model call failed: ${err instanceof Error ? err.message : String(err)}`
    const kind = (err as { kind?: unknown } | null)?.kind
    if (PASSING.has(kind as NodeModelFailureKind)) throw new RetryableNodeError(message, { cause: err })
    throw new NodeError(message, { cause: err })
  }
}

/** A line for the run's log: what the model used. */
export const usageLine = (answer: NodeModelAnswer): string =>
  `${answer.model} answered: ${answer.tokensIn} tokens in, ${answer.tokensOut} out`

/** The JSON of a jsonSchema, checked when the workflow is saved. */
const MAX_JSON_SCHEMA_BYTES = 8 * 1024
const OUTPUTS = ['text', 'json'] as const

/** Without a schema the provider cannot hold the model to JSON: it is asked to write nothing else. */
const JSON_ONLY = 'Answer with one JSON value and nothing else: no prose, no code fence.'

/** What the model's answer becomes (ai_generate, ai_agent): `output` and, with json, its `jsonSchema`. */
export const AI_OUTPUT_FIELDS = {
  output: Type.Optional(oneOfAnyCase(OUTPUTS, { default: 'text', description: 'text: the answer as text; json: the answer parsed as JSON (the node fails when it is not).' })),
  jsonSchema: Type.Optional(Type.Object({}, {
    additionalProperties: true,
    description: 'With output json: the JSON Schema of an object the answer must match, given to the provider and checked (at most 8 KiB; no pattern or $ref).'
  }))
}

/** The save-time check of AI_OUTPUT_FIELDS: a jsonSchema only with output json, and one the checks accept. */
export function validateAiOutput (config: Record<string, unknown>): void {
  if (config.jsonSchema === undefined || config.jsonSchema === null) return
  if (typeof config.output !== 'string' || config.output.toLowerCase() !== 'json') throw new NodeError('jsonSchema is only for output json')
  const problem = objectSchemaProblem(config.jsonSchema, 'jsonSchema', MAX_JSON_SCHEMA_BYTES)
  if (problem !== undefined) throw new NodeError(problem)
}

/** The answer a node asks for: its form, the schema a JSON answer must match, and what the system prompt must add for it. */
export interface AskedOutput {
  output: typeof OUTPUTS[number]
  jsonSchema?: Record<string, unknown>
  /** Added to the system prompt: JSON_ONLY for JSON without a schema. */
  instruction?: string
}

export function askedOutput (config: Record<string, unknown>): AskedOutput {
  const output = optionalChoice(config, 'output', OUTPUTS) ?? 'text'
  const jsonSchema = output === 'json' ? optionalObject(config, 'jsonSchema') : undefined
  return { output, ...(jsonSchema !== undefined && { jsonSchema }), ...(output === 'json' && jsonSchema === undefined && { instruction: JSON_ONLY }) }
}

/** The model's final answer as the node's output: `{text}`, or `{json}` parsed (never run) and checked against the schema. */
export function answerOutput (content: string | null, asked: AskedOutput): { text: string } | { json: unknown } {
  const text = (content ?? '').trim()
  if (text === '') throw new NodeError('The model gave no answer')
  if (asked.output === 'text') return { text }
  const json = parseAnswer(text)
  const mismatch = asked.jsonSchema === undefined ? undefined : schemaMismatch(asked.jsonSchema, json)
  if (mismatch !== undefined) throw new NodeError(`The model's JSON does not match jsonSchema: ${mismatch}`)
  return { json }
}

/** A model's JSON, tolerating the one code fence models put around it; anything else that is not JSON fails the node. */
function parseAnswer (content: string): unknown {
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/i.exec(content)
  try {
    return JSON.parse(fenced === null ? content : fenced[1]!)
  } catch {
    const shown = content.length > 200 ? `${content.slice(0, 200)}…` : content
    throw new NodeError(`The model's answer is not JSON: ${JSON.stringify(shown)}`)
  }
}

/** The first way `value` does not follow `schema`, as `/path message`. */
function schemaMismatch (schema: Record<string, unknown>, value: unknown): string | undefined {
  if (Value.Check(schema as never, value)) return undefined
  const [first] = Value.Errors(schema as never, value)
  return first === undefined ? 'it does not match' : `${first.instancePath === '' ? '/' : first.instancePath} ${first.message}`
}
