import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import jwt from '@fastify/jwt'
import { forbidden, unauthorized } from '@switchboard/core/errors'
import type { ApiKeyScope, UserRole } from '@switchboard/core/db'
import { createHolderCache, isApiKeyShaped, type RoleCache, USER_CHANGES_CHANNEL } from '@switchboard/core/users'
import { createKeyAuth } from './api-key-auth.ts'

export interface TokenClaims {
  sub: string
  email: string
  role: UserRole
  /** The user's token version when it was issued: a password change raises it, ending the token. */
  ver: number
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenClaims
    // Tokens issued before token versions existed carry none: they stand for version 0.
    user: Omit<TokenClaims, 'ver'> & {
      ver?: number
      /** The JWT's; 0 for an API key, whose end is its own `expiresAt` (credentialEndsAt). */
      iat: number
      exp: number
      /** An API key's limit to these workflows (README, API keys); absent for a person's token. */
      workflowIds?: readonly string[] | null
    }
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Public routes skip the bearer token (README, Signing in). */
    public?: boolean
    /** What an API key needs to call the route (README, API keys); a key without it is refused 403. */
    scope?: ApiKeyScope
  }
  interface FastifySchema {
    /** The route's `config.scope`, on its OpenAPI operation (routes/api/key-scopes.ts). */
    'x-api-key-scope'?: ApiKeyScope
  }
  interface FastifyRequest {
    /** The API key the request authenticated with (README, API keys); null for a person's token. */
    apiKey: { id: string, workflowIds: readonly string[] | null, expiresAt: Date | null } | null
  }
  interface FastifyInstance {
    requireAdmin: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
    /** Current roles and token versions of token holders; routes that change or delete a user forget them here at once. */
    userRoles: RoleCache
    /** A key of this user was revoked: this replica forgets their keys at once. */
    forgetApiKeysOf: (userId: string) => void
  }
}

export const TOKEN_LIFETIME_SECONDS = 24 * 3600
/**
 * The longest a deleted user's token, a token issued before a password change, or a changed
 * role is honoured by a replica that missed the notification.
 */
export const ROLE_CACHE_TTL_MS = 5000
const ROLE_CACHE_MAX_ENTRIES = 10_000

/**
 * When the request's credential stops working, in ms since the epoch: its token's `exp`, or its
 * API key's `expiresAt` (Infinity for a key without one). A revocation, a password change or the
 * user's deletion ends it sooner (announced on USER_CHANGES_CHANNEL).
 */
export const credentialEndsAt = (request: FastifyRequest): number =>
  request.apiKey === null ? request.user.exp * 1000 : request.apiKey.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY

/** The routes behind the bearer token: /api, and the MCP server (routes/mcp), which an API key of scope `mcp` calls. */
const needsBearer = (path: string): boolean => path.startsWith('/api/') || path === '/mcp'

/**
 * Every /api route (and /mcp) needs a valid HS256 token unless it is marked public, its user
 * must still exist and its token version must be the user's current one (a password
 * change or reset raises it): the role a request is authorized with is the user's
 * current one from the database, not the token's claim. Any failure, whatever its
 * cause, is the same 401 `Unauthorized`.
 */
async function auth (fastify: FastifyInstance): Promise<void> {
  await fastify.register(jwt, {
    secret: fastify.config.jwtSecret,
    sign: { algorithm: 'HS256', expiresIn: TOKEN_LIFETIME_SECONDS },
    verify: { algorithms: ['HS256'] }
  })

  const userRoles = createHolderCache({ load: fastify.users.tokenHolder, ttlMs: ROLE_CACHE_TTL_MS, maxEntries: ROLE_CACHE_MAX_ENTRIES })
  fastify.decorate('userRoles', userRoles)
  const keys = createKeyAuth(fastify, { userRoles, ttlMs: ROLE_CACHE_TTL_MS, maxEntries: ROLE_CACHE_MAX_ENTRIES })
  fastify.decorate('forgetApiKeysOf', keys.forgetOwner)
  // Changes on any replica reach every replica's cache at once. After a reconnection,
  // announcements made while the listener was away are lost: forget everything.
  fastify.addHook('onReady', async () => {
    await fastify.database.listener.listen(
      USER_CHANGES_CHANNEL,
      (userId) => { userRoles.forget(userId); keys.forgetOwner(userId) },
      () => { userRoles.clear(); keys.clear() }
    )
  })

  fastify.decorateRequest('apiKey', null)
  fastify.addHook('onRequest', async (request, reply) => {
    // The matched route's pattern, not the raw URL: the router decodes `/%61pi/users` to `/api/users`.
    const path = request.routeOptions.url ?? request.url
    if (request.routeOptions.config.public === true || !needsBearer(path)) return
    // Half the request's deadline at most, so that a route that promises an answer within it
    // (`/fire`) still has time; beyond, the request is answered 503.
    const readDeadlineMs = fastify.config.timeouts.requestDeadlineMs / 2
    const bearer = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1]
    if (bearer !== undefined && isApiKeyShaped(bearer)) {
      await keys.authenticate(request, reply, bearer, readDeadlineMs)
      return
    }
    try {
      await request.jwtVerify()
    } catch {
      throw unauthorized()
    }
    const { sub, ver = 0 } = request.user
    const readHolder = async () => request.deadline.race(userRoles.holderOf(sub), 'read the token\'s user', readDeadlineMs)
    let holder = await readHolder()
    // Versions only rise: a token newer than the cached answer was issued after a change
    // this replica has not heard of yet, so the answer is stale.
    if (holder !== null && ver > holder.tokenVersion) {
      userRoles.forget(sub)
      holder = await readHolder()
    }
    if (holder === null || ver !== holder.tokenVersion) throw unauthorized()
    request.user.role = holder.role
  })

  fastify.decorate('requireAdmin', async (request: FastifyRequest) => {
    if (request.user.role !== 'admin') throw forbidden()
  })
}

export default fp(auth, { name: 'auth', dependencies: ['context', 'deadline', 'users'] })
