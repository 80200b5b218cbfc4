import type { RedisConnection } from '../queues/connections.ts'

/**
 * The sends of one platform number within a sliding window, shared by every worker through Redis
 * (README, Broadcasts): a send may go when fewer than `limit` went within the window, else the
 * answer is how long to wait. Redis's own clock decides, so workers on skewed clocks agree. The
 * window is a second and a fifth: the platform counts what it receives, and two sends admitted a
 * window apart may reach it up to 200 ms closer (a busy event loop, a slow connection) and still
 * fall in different seconds.
 */
const WINDOW_MS = 1200

const ADMIT = `
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], nowMs, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - nowMs)
`

export interface SendRate {
  /** Resolves when a send from `phoneNumberId` may go at `limit` a second; `member` names the send (unique). */
  admit: (phoneNumberId: string, limit: number, member: string, signal?: AbortSignal) => Promise<void>
}

/** `keyPrefix`: QUEUE_PREFIX's `<prefix>:rate-limit:` (no hash tag: one key per number, spread over a cluster). */
export function createSendRate (redis: RedisConnection, keyPrefix: string): SendRate {
  return {
    async admit (phoneNumberId, limit, member, signal) {
      const key = `${keyPrefix}chat-sends:${phoneNumberId}`
      for (;;) {
        signal?.throwIfAborted()
        const waitMs = Number(await redis.eval(ADMIT, 1, key, WINDOW_MS, limit, member))
        if (waitMs === 0) return
        await new Promise((resolve) => setTimeout(resolve, waitMs))
      }
    }
  }
}
