import { LRUCache } from 'lru-cache'
import type { UserRole } from '../db/schema/index.ts'

/**
 * What the database says of a token's user now: their role and token version (raised by
 * every password change: a token of another version is refused), or null when the user no
 * longer exists.
 */
export type TokenHolder = { role: UserRole, tokenVersion: number, email: string } | null

interface HolderCacheOptions<T> {
  /** Reads the current answer for a key (a user's role and token version, an API key's holder); null when it is gone. */
  load: (key: string) => Promise<T | null>
  /** How long an answer is trusted without a notification (the bound when one is missed). */
  ttlMs: number
  /** Users remembered at most; the least recently used are forgotten first. */
  maxEntries: number
}

export interface HolderCache<T> {
  holderOf: (key: string) => Promise<T | null>
  /** Whether an answer for the key is cached now (holderOf will not read the database). */
  has: (key: string) => boolean
  /** It changed (a user deleted, their role or password changed): the next request reads the database. */
  forget: (key: string) => void
  /** Forgets every answer `changed` picks (the API keys of a user who changed). */
  forgetWhere: (changed: (holder: T) => boolean) => void
  /** Notifications may have been missed (the listener reconnected): forget everyone. */
  clear: () => void
}

export type RoleCache = HolderCache<NonNullable<TokenHolder>>

/**
 * The role each authenticated request is authorized with, and the token version its token
 * must carry, read from the database rather than trusted from the token, at most once per
 * user per TTL:
 * concurrent misses for one user share one query, and an answer whose user is
 * forgotten while it is being read is handed to the requests already waiting
 * (they arrived before the change) but never cached.
 */
export function createHolderCache<T> (options: HolderCacheOptions<T>): HolderCache<T> {
  // Boxed: LRUCache cannot hold null, the answer for a deleted user, which is worth caching too.
  const answers = new LRUCache<string, { holder: T | null }>({ max: options.maxEntries, ttl: options.ttlMs })
  const loading = new Map<string, Promise<T | null>>()

  function load (userId: string): Promise<T | null> {
    const pending: Promise<T | null> = options.load(userId)
      .then((holder) => {
        if (loading.get(userId) === pending) answers.set(userId, { holder })
        return holder
      })
      .finally(() => {
        if (loading.get(userId) === pending) loading.delete(userId)
      })
    loading.set(userId, pending)
    return pending
  }

  return {
    async holderOf (userId) {
      const cached = answers.get(userId)
      if (cached !== undefined) return cached.holder
      return loading.get(userId) ?? load(userId)
    },
    has (key) {
      return answers.has(key)
    },
    forget (userId) {
      answers.delete(userId)
      loading.delete(userId)
    },
    forgetWhere (changed) {
      for (const [key, { holder }] of answers.entries()) {
        if (holder !== null && changed(holder)) answers.delete(key)
      }
      // An answer being read may be from before the change: no one is handed it later.
      loading.clear()
    },
    clear () {
      answers.clear()
      loading.clear()
    }
  }
}
