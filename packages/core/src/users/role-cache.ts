import { LRUCache } from 'lru-cache'
import type { UserRole } from '../db/schema/index.ts'

/**
 * What the database says of a token's user now: their role and token version (raised by
 * every password change: a token of another version is refused), or null when the user no
 * longer exists.
 */
export type TokenHolder = { role: UserRole, tokenVersion: number } | null

interface RoleCacheOptions {
  /** Reads the user's current role and token version; null when the user is gone. */
  load: (userId: string) => Promise<TokenHolder>
  /** How long an answer is trusted without a notification (the bound when one is missed). */
  ttlMs: number
  /** Users remembered at most; the least recently used are forgotten first. */
  maxEntries: number
}

export interface RoleCache {
  holderOf: (userId: string) => Promise<TokenHolder>
  /** The user was deleted, or their role or password changed: the next request reads the database. */
  forget: (userId: string) => void
  /** Notifications may have been missed (the listener reconnected): forget everyone. */
  clear: () => void
}

/**
 * The role each authenticated request is authorized with, and the token version its token
 * must carry, read from the database rather than trusted from the token, at most once per
 * user per TTL:
 * concurrent misses for one user share one query, and an answer whose user is
 * forgotten while it is being read is handed to the requests already waiting
 * (they arrived before the change) but never cached.
 */
export function createRoleCache (options: RoleCacheOptions): RoleCache {
  // Boxed: LRUCache cannot hold null, the answer for a deleted user, which is worth caching too.
  const answers = new LRUCache<string, { holder: TokenHolder }>({ max: options.maxEntries, ttl: options.ttlMs })
  const loading = new Map<string, Promise<TokenHolder>>()

  function load (userId: string): Promise<TokenHolder> {
    const pending: Promise<TokenHolder> = options.load(userId)
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
    forget (userId) {
      answers.delete(userId)
      loading.delete(userId)
    },
    clear () {
      answers.clear()
      loading.clear()
    }
  }
}
