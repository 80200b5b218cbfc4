import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import jwt from '@fastify/jwt'
import { forbidden, unauthorized } from '@switchboard/core/errors'
import type { UserRole } from '@switchboard/core/db/schema/index'

export interface TokenClaims {
  sub: string
  email: string
  role: UserRole
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenClaims
    user: TokenClaims & { iat: number, exp: number }
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Public routes skip the bearer token (spec section 5). */
    public?: boolean
  }
  interface FastifyInstance {
    requireAdmin: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
  }
}

export const TOKEN_LIFETIME_SECONDS = 24 * 3600

/**
 * Every /api route needs a valid HS256 token unless it is marked public.
 * Any failure, whatever its cause, is the same 401 `Unauthorized`.
 */
async function auth (fastify: FastifyInstance): Promise<void> {
  await fastify.register(jwt, {
    secret: fastify.config.jwtSecret,
    sign: { algorithm: 'HS256', expiresIn: TOKEN_LIFETIME_SECONDS },
    verify: { algorithms: ['HS256'] }
  })

  fastify.addHook('onRequest', async (request) => {
    // The matched route's pattern, not the raw URL: the router decodes `/%61pi/users` to `/api/users`.
    const path = request.routeOptions.url ?? request.url
    if (request.routeOptions.config.public === true || !path.startsWith('/api/')) return
    try {
      await request.jwtVerify()
    } catch {
      throw unauthorized()
    }
  })

  fastify.decorate('requireAdmin', async (request: FastifyRequest) => {
    if (request.user.role !== 'admin') throw forbidden()
  })
}

export default fp(auth, { name: 'auth', dependencies: ['context'] })
