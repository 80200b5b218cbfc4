import type { FastifyInstance, FastifyRequest } from 'fastify'
import { TimeoutError, withTimeout, type Deadline } from '@switchboard/core/timeout'

/** One fixed window: at most `max` in `windowSeconds`, counted under `key`. */
export interface Window {
  key: string
  max: number
  windowSeconds: number
}

/**
 * Redis's count is waited for this long at most (within the request's deadline); a slower
 * answer lets the request through, like an unreachable Redis.
 */
const CHECK_BUDGET_MS = 500

/**
 * A limit counted in Redis by `@fastify/rate-limit` (the login limits' store), one fixed window
 * per key (`<prefix>:rate-limit:…<key>`, no hash tag: one key per script, so it works on a Redis
 * Cluster); a changed window starts a new count. Redis down or slow lets requests through
 * (`skipOnError`): a limit must not refuse what the stores could still serve.
 *
 * Returns the check: the seconds a request over the limit should wait before it is retried,
 * or undefined when it may go on.
 */
export function createCountedLimit (fastify: FastifyInstance) {
  // The limiter reads the window through the request it is given (kept while the request is).
  const windows = new WeakMap<FastifyRequest, Window>()
  const windowOf = (request: FastifyRequest): Window => windows.get(request)!
  const limiter = fastify.createRateLimit({
    keyGenerator: (request) => `${windowOf(request).key}:${windowOf(request).windowSeconds}`,
    max: (request) => windowOf(request).max,
    timeWindow: (request) => windowOf(request).windowSeconds * 1000
  })

  return async (request: FastifyRequest, window: Window, deadline: Deadline): Promise<number | undefined> => {
    windows.set(request, window)
    try {
      const answer = await withTimeout(limiter(request), Math.min(CHECK_BUDGET_MS, deadline.remainingMs()), `count ${window.key}`)
      return !answer.isAllowed && answer.isExceeded ? Math.max(1, answer.ttlInSeconds) : undefined
    } catch (err) {
      if (err instanceof TimeoutError) return undefined
      throw err
    }
  }
}
