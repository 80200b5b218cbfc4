import type { Queue } from 'bullmq'
import type { Logger } from '../logger.ts'
import { connectionOf } from '../queues/connections.ts'
import { withTimeout } from '../timeout.ts'

/**
 * The pace of the runs parents start (README, Quotas): child runs count against their parent
 * owner's `runsPerMinute`, by clock minute. Those beyond a minute's room are not refused: they
 * wait PENDING, their jobs delayed to the first minute with room. One script takes the places
 * of a whole batch, so that parallel fan-outs of one owner share the minutes.
 */
const TAKE_PLACES = `
local n = tonumber(ARGV[1])
local max = math.max(tonumber(ARGV[2]), 1)
local minute = tonumber(ARGV[3])
local places = {}
local m = minute
while n > 0 do
  local key = KEYS[1] .. ':' .. m
  local take = math.min(max - tonumber(redis.call('GET', key) or '0'), n)
  if take > 0 then
    redis.call('INCRBY', key, take)
    redis.call('PEXPIREAT', key, (m + 2) * 60000)
    table.insert(places, m - minute)
    table.insert(places, take)
    n = n - take
  end
  m = m + 1
end
return places
`

/** Redis is waited for this long at most: a slower answer lets the runs start now, as the api's start quota does. */
const PACE_BUDGET_MS = 500

const MINUTE_MS = 60_000

/**
 * The delay of each of `count` runs `userId`'s runs start, in order: 0 for those within the
 * current minute's room of `perMinute`, the time to the start of a later minute for the others.
 * Redis unreachable or slow: no delay (a quota must not stop what the stores could still run).
 */
export async function paceStarts (queue: Queue, logger: Pick<Logger, 'warn'>, userId: string, count: number, perMinute: number): Promise<number[]> {
  const now = Date.now()
  const minute = Math.floor(now / MINUTE_MS)
  let places: number[]
  try {
    places = await withTimeout(
      connectionOf(queue).eval(TAKE_PLACES, 1, queue.toKey(`runs-started:${userId}`), count, perMinute, minute) as Promise<number[]>,
      PACE_BUDGET_MS, 'pace child runs')
  } catch (err) {
    logger.warn({ err, userId }, 'child runs not paced: Redis did not answer')
    return Array<number>(count).fill(0)
  }
  const delays: number[] = []
  for (let i = 0; i < places.length; i += 2) {
    const ahead = places[i]!
    const delayMs = ahead === 0 ? 0 : (minute + ahead) * MINUTE_MS - now
    for (let taken = 0; taken < places[i + 1]!; taken++) delays.push(delayMs)
  }
  return delays
}
