import type { EventSubscriptionsConfig } from '../config.ts'

export type RetryPolicy = Pick<EventSubscriptionsConfig, 'retryBaseMs' | 'retryMaxDelayMs' | 'retryWindowMs'>

/** The wait after failed attempt `attempt` (1 for the first): the base, doubled each time, capped. No jitter: a retry's time is what the delivery shows. */
function retryDelayMs (attempt: number, policy: RetryPolicy): number {
  // 2^31 is past any cap (a cap is at most a day): the exponent stops growing there.
  return Math.min(policy.retryBaseMs * 2 ** Math.min(attempt - 1, 31), policy.retryMaxDelayMs)
}

/** The waits after failed attempts 1 to `attempts`, added up (the doubling part is at most 32 steps, the capped rest is a product). */
function totalWaitMs (attempts: number, policy: RetryPolicy): number {
  let total = 0
  let attempt = 1
  for (; attempt <= attempts && retryDelayMs(attempt, policy) < policy.retryMaxDelayMs; attempt++) total += retryDelayMs(attempt, policy)
  return total + Math.max(0, attempts - attempt + 1) * policy.retryMaxDelayMs
}

/**
 * The wait before the next attempt after `attempts` failed ones (since the delivery was created or
 * replayed), or null when the waits would add up to more than the retry window: the delivery is then failed.
 */
export function nextRetryDelayMs (attempts: number, policy: RetryPolicy): number | null {
  return totalWaitMs(attempts, policy) > policy.retryWindowMs ? null : retryDelayMs(attempts, policy)
}
