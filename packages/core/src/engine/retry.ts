import { NodeError } from './types.ts'
import type { NodeDefinition } from './nodes/definition.ts'

/** What the retry rules read of a node type: its name and its `retries` trait. */
type RetryTraits = Pick<NodeDefinition, 'type'> & { traits: Pick<NodeDefinition['traits'], 'retries'> }

/**
 * The bounds of a node's `retry` and `timeoutMs` (README, Retries and time-outs), so that one
 * node holds a worker's slot for a bounded time: at most 10 attempts of at most 5 minutes
 * each, and 5 minutes of waiting between them in all.
 */
const RETRY_LIMITS = {
  /** Attempts of a node in all, the first included. */
  maxAttempts: 10,
  maxBackoffMs: 60_000,
  maxBackoffFactor: 10,
  /** The longest wait before one retry, a server's Retry-After included: a server asking for longer is not retried. */
  maxDelayMs: 60_000,
  /** The most a node waits between its attempts in all. */
  maxTotalDelayMs: 300_000,
  /** One attempt's time limit. */
  maxTimeoutMs: 300_000
} as const

/** http_request's older `retries`: 0–10 retries, 0.5 s doubling up to 10 s, as it always was. */
const LEGACY_RETRIES = { max: 10, backoffMs: 500, backoffFactor: 2, maxDelayMs: 10_000 } as const

const RETRY_DEFAULTS = { backoffMs: 1000, backoffFactor: 2 } as const
const RETRY_KEYS = ['attempts', 'backoffMs', 'backoffFactor'] as const

/** How often and how long a node is attempted. */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number
  /** The wait before the first retry; each later one is `backoffFactor` times the one before. */
  backoffMs: number
  backoffFactor: number
  /** The longest wait before one retry. */
  maxDelayMs: number
  /** One attempt's time limit; undefined: none. */
  timeoutMs: number | undefined
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const isAbsent = (value: unknown): boolean => value === undefined || value === null || value === ''

/** A number, or numeric text (a single-placeholder template keeps a number's type), within bounds. */
function numberIn (field: string, value: unknown, min: number, max: number, integer: boolean): number {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
  if (typeof number !== 'number' || !Number.isFinite(number) || number < min || number > max || (integer && !Number.isInteger(number))) {
    throw new NodeError(`${field} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`)
  }
  return number
}

function parseRetry (retry: unknown): Omit<RetryPolicy, 'timeoutMs'> {
  if (!isRecord(retry)) throw new NodeError('retry must be an object: {attempts, backoffMs?, backoffFactor?}')
  const unknown = Object.keys(retry).find((key) => !(RETRY_KEYS as readonly string[]).includes(key))
  if (unknown !== undefined) throw new NodeError(`retry.${unknown} is not a retry setting (${RETRY_KEYS.join(', ')})`)
  if (isAbsent(retry.attempts)) throw new NodeError('retry.attempts is required')
  return {
    attempts: numberIn('retry.attempts', retry.attempts, 1, RETRY_LIMITS.maxAttempts, true),
    backoffMs: isAbsent(retry.backoffMs) ? RETRY_DEFAULTS.backoffMs : numberIn('retry.backoffMs', retry.backoffMs, 0, RETRY_LIMITS.maxBackoffMs, true),
    backoffFactor: isAbsent(retry.backoffFactor) ? RETRY_DEFAULTS.backoffFactor : numberIn('retry.backoffFactor', retry.backoffFactor, 1, RETRY_LIMITS.maxBackoffFactor, false),
    maxDelayMs: RETRY_LIMITS.maxDelayMs
  }
}

/** The wait before retry `retry` (1: the first), backoff alone. */
const backoffDelayMs = (policy: RetryPolicy, retry: number): number =>
  Math.min(Math.round(policy.backoffMs * policy.backoffFactor ** (retry - 1)), policy.maxDelayMs)

/** What the backoff of every retry adds up to. */
function totalBackoffMs (policy: RetryPolicy): number {
  let total = 0
  for (let retry = 1; retry < policy.attempts; retry++) total += backoffDelayMs(policy, retry)
  return total
}

/**
 * A node's retry policy from its config (rendered, when the engine reads it): `retry`
 * `{attempts, backoffMs, backoffFactor}` and `timeoutMs` on any node type whose `retries` trait
 * allows them; the others (wait) run once without a time limit. A type may have a default time
 * limit, and http_request keeps its older `retries` (n retries: `retry` `{attempts: n + 1}` with
 * its own backoff; `retry` wins if a stored node has both). Throws a NodeError naming the field.
 */
export function retryPolicyOf ({ traits: { retries: traits } }: RetryTraits, config: Record<string, unknown>): RetryPolicy {
  if (!traits.allowed) return { attempts: 1, backoffMs: 0, backoffFactor: 1, maxDelayMs: 0, timeoutMs: undefined }
  const timeoutMs = isAbsent(config.timeoutMs)
    ? traits.defaultTimeoutMs
    : numberIn('timeoutMs', config.timeoutMs, 1, RETRY_LIMITS.maxTimeoutMs, false)
  if (!isAbsent(config.retry)) {
    const policy = { ...parseRetry(config.retry), timeoutMs }
    const total = totalBackoffMs(policy)
    if (total > RETRY_LIMITS.maxTotalDelayMs) {
      throw new NodeError(`retry waits ${total}ms between attempts in all, more than ${RETRY_LIMITS.maxTotalDelayMs}ms`)
    }
    return policy
  }
  if (traits.legacyRetries === true && !isAbsent(config.retries)) {
    const retries = Math.floor(numberIn('retries', config.retries, 0, LEGACY_RETRIES.max, false))
    return { attempts: retries + 1, backoffMs: LEGACY_RETRIES.backoffMs, backoffFactor: LEGACY_RETRIES.backoffFactor, maxDelayMs: LEGACY_RETRIES.maxDelayMs, timeoutMs }
  }
  return { attempts: 1, backoffMs: 0, backoffFactor: 1, maxDelayMs: 0, timeoutMs }
}

const isTemplate = (value: unknown): boolean => typeof value === 'string' && value.includes('{{')

/**
 * The checks made when a workflow is saved, on the config as written: what `retryPolicyOf`
 * would refuse, and what cannot be meant: `retry` or `timeoutMs` on a type that takes none (wait),
 * `retry` beside http_request's `retries`. `timeoutMs` and `retries` may be templates (as http_request's always
 * could), checked when the node runs; `retry` is a property of the workflow, never a template.
 * Throws a NodeError naming the field.
 */
export function checkRetryConfig (definition: RetryTraits, config: Record<string, unknown>): void {
  const { type, traits: { retries: traits } } = definition
  if (!traits.allowed) {
    if (!isAbsent(config.retry) || !isAbsent(config.timeoutMs)) {
      throw new NodeError(`${type} takes no retry or timeoutMs: it lasts what its config says and has nothing to retry`)
    }
    return
  }
  if (traits.legacyRetries === true && !isAbsent(config.retry) && !isAbsent(config.retries)) {
    throw new NodeError('give retry or retries, not both (retries n is retry {attempts: n + 1})')
  }
  const { timeoutMs, retries } = config
  retryPolicyOf(definition, { ...config, timeoutMs: isTemplate(timeoutMs) ? undefined : timeoutMs, retries: isTemplate(retries) ? undefined : retries })
}

/** What the engine does after an attempt failed in a way that may pass. */
export type RetryDecision =
  | { retry: true, delayMs: number }
  /** `reason`: why not, when attempts were left. */
  | { retry: false, reason?: string }

/**
 * The retries of one execution of a node: how many are left and how long it has waited,
 * so that a server's Retry-After cannot stretch the node past its bounds.
 */
export function retrySchedule (policy: RetryPolicy) {
  let retries = 0
  let waitedMs = 0
  return {
    /** Retries done so far. */
    get retries (): number { return retries },
    /** Whether, and after how long, the next attempt would be made; `retryAfterMs`: the wait a server asked for. */
    decide (retryAfterMs?: number): RetryDecision {
      if (retries + 1 >= policy.attempts) return { retry: false }
      if (retryAfterMs !== undefined && retryAfterMs > RETRY_LIMITS.maxDelayMs) {
        return { retry: false, reason: `Retry-After asks for ${retryAfterMs}ms, more than the longest retry delay (${RETRY_LIMITS.maxDelayMs}ms)` }
      }
      const delayMs = Math.max(backoffDelayMs(policy, retries + 1), retryAfterMs ?? 0)
      if (waitedMs + delayMs > RETRY_LIMITS.maxTotalDelayMs) {
        return { retry: false, reason: `waiting ${delayMs}ms more would pass the ${RETRY_LIMITS.maxTotalDelayMs}ms a node may wait between its attempts` }
      }
      return { retry: true, delayMs }
    },
    /** A retry is made after `delayMs`. */
    record (delayMs: number): void {
      retries++
      waitedMs += delayMs
    }
  }
}
