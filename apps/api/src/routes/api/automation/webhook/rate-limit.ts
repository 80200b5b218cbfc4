import type { FastifyInstance, FastifyRequest } from 'fastify'
import { TimeoutError, withTimeout, type Deadline } from '@switchboard/core/timeout'

/** A workflow's `webhookRateLimit`: at most `max` inbound webhooks per `windowSeconds`. */
interface WebhookRateLimit {
  max: number
  windowSeconds: number
}

/**
 * Redis's count is waited for this long at most (within the request's deadline); a slower
 * answer lets the request through, like an unreachable Redis.
 */
const CHECK_BUDGET_MS = 500

/**
 * The inbound webhook's limit per workflow (README, Limits per workflow): a fixed window per
 * workflow counted in Redis by `@fastify/rate-limit`, like the login limits, in one key
 * (`<prefix>:rate-limit:…webhook:<workflowId>:<windowSeconds>`, no hash tag: one key per
 * script, so it works on a Redis Cluster). A changed window starts a new count. Redis down or
 * slow lets requests through (`skipOnError`): the webhook's own start then answers its 500 if
 * Redis is needed there too, so a sender retries rather than being told to slow down.
 *
 * Returns the check: the seconds a request over the limit should wait before it is retried,
 * or undefined when it may go on.
 */
export function createWebhookRateLimit (fastify: FastifyInstance) {
  // The limiter reads the workflow's limit through the request it is given (kept while the request is).
  const limits = new WeakMap<FastifyRequest, { workflowId: string, limit: WebhookRateLimit }>()
  const limitOf = (request: FastifyRequest): { workflowId: string, limit: WebhookRateLimit } => limits.get(request)!
  const limiter = fastify.createRateLimit({
    keyGenerator: (request) => `webhook:${limitOf(request).workflowId}:${limitOf(request).limit.windowSeconds}`,
    max: (request) => limitOf(request).limit.max,
    timeWindow: (request) => limitOf(request).limit.windowSeconds * 1000
  })

  return async (request: FastifyRequest, workflowId: string, limit: WebhookRateLimit, deadline: Deadline): Promise<number | undefined> => {
    limits.set(request, { workflowId, limit })
    try {
      const answer = await withTimeout(limiter(request), Math.min(CHECK_BUDGET_MS, deadline.remainingMs()), 'count the webhook')
      return !answer.isAllowed && answer.isExceeded ? Math.max(1, answer.ttlInSeconds) : undefined
    } catch (err) {
      if (err instanceof TimeoutError) return undefined
      throw err
    }
  }
}
