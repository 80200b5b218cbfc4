import { Type } from 'typebox'
import { NodeError, RetryableNodeError, type NodeDependencies, type NodeModelAnswer, type NodeModelFailureKind, type NodeModelProvider, type NodeModelRequest } from '../types.ts'
import { optionalNumber } from './config.ts'
import { templated } from './definition.ts'

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
