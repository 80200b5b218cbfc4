import { createHmac } from 'node:crypto'
import type { RedisConnection } from '@switchboard/core/queues'

/** How long a sign-in from an address makes it known to that account. */
const KNOWN_ADDRESS_DAYS = 30
/** The most addresses an account keeps (the most recent), so that the set stays small. */
const MAX_KNOWN_ADDRESSES = 50

const KNOWN_ADDRESS_MS = KNOWN_ADDRESS_DAYS * 24 * 60 * 60 * 1000

export interface KnownAddresses {
  /** Whether `email`'s account signed in from `address` in the last KNOWN_ADDRESS_DAYS days. */
  has: (email: string, address: string) => Promise<boolean>
  /** Records a successful sign-in to `email` from `address`. */
  remember: (email: string, address: string) => Promise<void>
}

/**
 * The addresses each account signed in from, for the login limits (docs/decisions.md, "Login
 * floods, the metrics port and /docs"): one sorted set per email in Redis beside the limits'
 * counters (`<prefix>:rate-limit:login:known-addresses:<email>`, one key per command, so it works
 * on a Redis Cluster), scored by the time of the last sign-in. Members are HMACs of the email and
 * address under JWT_SECRET, so Redis holds no user's address and one address cannot be matched
 * across accounts; a new JWT_SECRET forgets them all.
 */
export function createKnownAddresses ({ redis, keyPrefix, secret }: { redis: RedisConnection, keyPrefix: string, secret: string }): KnownAddresses {
  const keyOf = (email: string): string => `${keyPrefix}login:known-addresses:${email}`
  const memberOf = (email: string, address: string): string => createHmac('sha256', secret).update(`known-address\0${email}\0${address}`).digest('base64url')

  return {
    has: async (email, address) => {
      const lastSignIn = await redis.zscore(keyOf(email), memberOf(email, address))
      return lastSignIn !== null && Number(lastSignIn) > Date.now() - KNOWN_ADDRESS_MS
    },
    remember: async (email, address) => {
      const key = keyOf(email)
      const now = Date.now()
      await redis.multi()
        .zadd(key, now, memberOf(email, address))
        .zremrangebyscore(key, '-inf', now - KNOWN_ADDRESS_MS)
        .zremrangebyrank(key, 0, -MAX_KNOWN_ADDRESSES - 1)
        .pexpire(key, KNOWN_ADDRESS_MS)
        .exec()
    }
  }
}
