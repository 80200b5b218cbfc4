import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { normalizeIP } from '@fastify/rate-limit'
import { DomainError, forbidden, unauthorized } from '@switchboard/core/errors'
import { createHolderCache, hashApiKey, isWellFormedApiKey, type KeyHolder, type KeyUse, type RoleCache } from '@switchboard/core/users'
import { auditContextOf } from '../audit-context.ts'

/**
 * Key lookups (keys this replica has not seen in the last ROLE_CACHE_TTL_MS) allowed per client
 * address per minute: a client trying keys at random meets this long before it could find one
 * (a key has 256 random bits), and a client using keys it holds rarely needs a lookup at all.
 */
export const API_KEY_LOOKUPS_PER_MINUTE = 60
/** How often each replica writes its keys' lastUsedAt, in one statement: the field's precision. */
export const API_KEY_LAST_USED_FLUSH_MS = 10_000

interface KeyAuthOptions {
  userRoles: RoleCache
  ttlMs: number
  maxEntries: number
}

/**
 * API keys on the bearer header (README, API keys). A key is answered from a per-replica cache
 * of its holder, forgotten when its owner's changes are announced (a revocation is announced as
 * one), so the hot paths make no database round trip per request, and lastUsedAt is gathered in
 * memory and written every API_KEY_LAST_USED_FLUSH_MS.
 */
export function createKeyAuth (fastify: FastifyInstance, options: KeyAuthOptions) {
  const keys = createHolderCache<KeyHolder>({ load: fastify.apiKeys.holderOf, ttlMs: options.ttlMs, maxEntries: options.maxEntries })
  const lookups = fastify.createRateLimit({
    max: API_KEY_LOOKUPS_PER_MINUTE, timeWindow: '1 minute', keyGenerator: (request) => `api-key:address:${normalizeIP(request.ip)}`
  })
  let lastUsed = new Map<string, KeyUse>()

  /** Never rejects: a failed write keeps its keys for the next flush. */
  async function flushLastUsed (): Promise<void> {
    if (lastUsed.size === 0) return
    const batch = lastUsed
    lastUsed = new Map()
    await fastify.apiKeys.recordUse(batch).catch((error: unknown) => {
      // Kept for the next flush, unless a newer use of the key is there already.
      for (const [id, use] of batch) {
        const newer = lastUsed.get(id)
        lastUsed.set(id, newer === undefined ? use : { ...newer, first: use.first })
      }
      fastify.log.warn({ err: error, keys: batch.size }, 'could not record when API keys were last used; retrying at the next flush')
    })
  }
  const flushing = setInterval(() => { flushLastUsed().catch(() => {}) }, API_KEY_LAST_USED_FLUSH_MS).unref()
  fastify.addHook('onClose', async () => {
    clearInterval(flushing)
    await flushLastUsed()
  })

  return {
    /** The owner of this user id changed (deleted, role, password, a key revoked): forget their keys. */
    forgetOwner (userId: string): void { keys.forgetWhere((key) => key.userId === userId) },
    clear (): void { keys.clear() },

    /**
     * Authenticates the request as the key's owner, within the key's scopes: 401 for a key that
     * is malformed, unknown, revoked, expired or whose owner is gone; 403 when the route needs a
     * scope the key lacks (or is not open to keys at all: no `config.scope`).
     */
    async authenticate (request: FastifyRequest, reply: FastifyReply, token: string, deadlineMs: number): Promise<void> {
      if (!isWellFormedApiKey(token)) throw unauthorized()
      const hash = hashApiKey(token)
      if (!keys.has(hash)) {
        const limit = await lookups(request)
        if (!limit.isAllowed && limit.isExceeded) {
          reply.header('retry-after', limit.ttlInSeconds)
          throw new DomainError('TOO_MANY_REQUESTS', `Too many API key attempts, retry in ${limit.ttlInSeconds} seconds`)
        }
      }
      const key = await request.deadline.race(keys.holderOf(hash), 'read the API key', deadlineMs)
      if (key === null || key.revoked || (key.expiresAt !== null && key.expiresAt.getTime() <= Date.now())) throw unauthorized()
      const owner = await request.deadline.race(options.userRoles.holderOf(key.userId), 'read the API key\'s owner', deadlineMs)
      if (owner === null) throw unauthorized()
      const scope = request.routeOptions.config.scope
      if (scope === undefined || !key.scopes.includes(scope)) throw forbidden()
      request.user = { sub: key.userId, email: owner.email, role: owner.role, iat: 0, exp: 0, workflowIds: key.workflowIds }
      request.apiKey = { id: key.id, workflowIds: key.workflowIds, expiresAt: key.expiresAt }
      const use = lastUsed.get(key.id)
      lastUsed.set(key.id, { at: new Date(), first: use?.first ?? auditContextOf(request) })
    }
  }
}
