import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { normalizeIP } from '@fastify/rate-limit'
import { Counter } from 'prom-client'
import { DomainError, unauthorized } from '@switchboard/core/errors'
import { DUMMY_PASSWORD_HASH, verifyPassword } from '@switchboard/core/users'
import type { User } from '@switchboard/core/db'
import { auditContextOf, loginAuditContextOf } from '../../../audit-context.ts'
import { errorResponses } from '../../../schemas/common.ts'
import apiKeys from './api-keys/index.ts'
import { createKnownAddresses } from './known-addresses.ts'
import { ChangePasswordBody, LoginBody, LoginResponse } from './schemas.ts'

/**
 * Login attempts allowed per minute, checked in this order before any password is hashed.
 * Per address: one client spraying a password over many accounts. Per email, only from addresses
 * the account has not signed in from (KNOWN_ADDRESS_DAYS): many clients (a botnet) guessing one
 * account's password, without locking its owner out on the devices they use. Per address and
 * email: one client guessing one account, below the per-email limit so that a user mistyping
 * their password on one device can still sign in from another (docs/decisions.md, "Login floods,
 * the metrics port and /docs").
 */
export const LOGIN_LIMITS_PER_MINUTE = { address: 30, email: 20, addressAndEmail: 10 }

/**
 * Password checks (scrypt runs, 16 MiB and tens of milliseconds of a libuv thread each) running or
 * waiting at once in one process; attempts beyond it are refused at once with 429 and Retry-After,
 * so that a flood of distinct valid-looking attempts cannot monopolize the CPU and thread pool.
 */
export const MAX_PASSWORD_CHECKS_IN_FLIGHT = 16

const emailOf = (request: FastifyRequest): string => String((request.body as { email?: unknown } | undefined)?.email ?? '').toLowerCase()

/**
 * Password changes allowed per user per minute: each checks the current password, so a stolen
 * token must not become a way to guess it faster than the login allows.
 */
export const PASSWORD_CHANGES_PER_MINUTE = LOGIN_LIMITS_PER_MINUTE.addressAndEmail

const seconds = (n: number): string => `${n} second${n === 1 ? '' : 's'}`
const tooManyAttempts = (retryAfterSeconds: number): DomainError =>
  new DomainError('TOO_MANY_REQUESTS', `Too many login attempts, retry in ${seconds(retryAfterSeconds)}`)

const auth: FastifyPluginAsyncTypebox = async (fastify) => {
  await fastify.register(apiKeys, { prefix: '/api-keys' })
  const attempts = new Counter({
    name: 'login_attempts_total',
    help: 'Login attempts by outcome: success and invalid had their password checked; rate_limited and busy were refused before',
    labelNames: ['outcome'],
    registers: [fastify.metricsRegistry]
  })

  // Redis-backed, so the limits hold across api replicas; skipOnError (set for the plugin)
  // lets logins through when Redis is down rather than locking everyone out.
  // IPv6 clients are limited per /64, the block one subscriber is given.
  const addressOf = (request: FastifyRequest): string => normalizeIP(request.ip)
  const perAddress = fastify.createRateLimit({ max: LOGIN_LIMITS_PER_MINUTE.address, timeWindow: '1 minute', keyGenerator: (request) => `login:address:${addressOf(request)}` })
  const perEmail = fastify.createRateLimit({ max: LOGIN_LIMITS_PER_MINUTE.email, timeWindow: '1 minute', keyGenerator: (request) => `login:email:${emailOf(request)}` })
  const perAddressAndEmail = fastify.createRateLimit({ max: LOGIN_LIMITS_PER_MINUTE.addressAndEmail, timeWindow: '1 minute', keyGenerator: (request) => `login:address-email:${addressOf(request)}:${emailOf(request)}` })
  const knownAddresses = createKnownAddresses({ redis: fastify.redis, keyPrefix: `${fastify.config.queuePrefix}:rate-limit:`, secret: fastify.config.jwtSecret })
  /** Whether the account signed in from this address before; unknown while Redis does not answer (the limits are skipped then too). */
  const fromKnownAddress = async (request: FastifyRequest): Promise<boolean> => knownAddresses.has(emailOf(request), addressOf(request)).catch(() => false)
  const passwordChangeLimiter = fastify.createRateLimit({
    max: PASSWORD_CHANGES_PER_MINUTE, timeWindow: '1 minute', keyGenerator: (request) => `password-change:user:${request.user.sub}`
  })
  let passwordChecksInFlight = 0

  /** Runs a password check within MAX_PASSWORD_CHECKS_IN_FLIGHT, shared by logins and password changes. */
  async function checkingPassword<T> (reply: FastifyReply, check: () => Promise<T>): Promise<T> {
    if (passwordChecksInFlight >= MAX_PASSWORD_CHECKS_IN_FLIGHT) {
      attempts.inc({ outcome: 'busy' })
      reply.header('retry-after', 1)
      throw new DomainError('LOGIN_BUSY', 'Too many logins in progress, retry in 1 second')
    }
    passwordChecksInFlight++
    return check().finally(() => { passwordChecksInFlight-- })
  }

  /** The user whose password this is, or null. */
  async function authenticate (email: string, password: string): Promise<User | null> {
    const user = await fastify.users.findByEmail(email)
    // Verify against a dummy hash for unknown emails so timing does not reveal which exist.
    const valid = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH)
    return user !== null && valid ? user : null
  }

  const signedIn = (user: Pick<User, 'id' | 'email' | 'role' | 'tokenVersion'>) => ({
    token: fastify.jwt.sign({ sub: user.id, email: user.email, role: user.role, ver: user.tokenVersion }),
    user: { id: user.id, email: user.email, role: user.role }
  })

  fastify.post('/login', {
    config: { public: true },
    schema: {
      tags: ['auth'],
      security: [],
      body: LoginBody,
      response: { 200: LoginResponse, ...errorResponses(400, 401, 429) }
    },
    // In order, stopping at the first refusal: an attempt refused per address counts against no
    // account, and one from an address the account knows counts against no per-email limit.
    preHandler: async (request, reply) => {
      const check = async (limiter: typeof perAddress): Promise<void> => {
        const limit = await limiter(request)
        if (!limit.isAllowed && limit.isExceeded) {
          attempts.inc({ outcome: 'rate_limited' })
          reply.header('retry-after', limit.ttlInSeconds)
          throw tooManyAttempts(limit.ttlInSeconds)
        }
      }
      await check(perAddress)
      if (!await fromKnownAddress(request)) await check(perEmail)
      await check(perAddressAndEmail)
    }
  }, async (request, reply) => {
    const { email, password } = request.body ?? {}
    if (!email || !password) throw new DomainError('BAD_REQUEST', 'email and password are required')
    const user = await checkingPassword(reply, async () => authenticate(email, password))
    attempts.inc({ outcome: user === null ? 'invalid' : 'success' })
    // Only attempts the limiters admitted get here, so they bound the rows a caller can write.
    const audit = loginAuditContextOf(request, user, email)
    if (user === null) {
      await fastify.audit.record(audit, { action: 'auth.login_failed' })
      throw new DomainError('INVALID_CREDENTIALS', 'Invalid email or password')
    }
    await fastify.audit.record(audit, { action: 'auth.login', targetType: 'user', targetId: user.id })
    // A sign-in goes on without it while Redis does not answer (the redis state log says so).
    await knownAddresses.remember(emailOf(request), addressOf(request)).catch(() => {})
    return signedIn(user)
  })

  /**
   * Any signed-in user's own password (README, Security: Passwords). Every token issued
   * before it ends, the one of this request included; the answer carries a new one, as a
   * login's does, so that the client that made the change stays signed in.
   */
  fastify.post('/password', {
    schema: {
      tags: ['auth'],
      body: ChangePasswordBody,
      response: { 200: LoginResponse, ...errorResponses(400, 401, 429) }
    },
    preHandler: async (request, reply) => {
      const limit = await passwordChangeLimiter(request)
      if (!limit.isAllowed && limit.isExceeded) {
        reply.header('retry-after', limit.ttlInSeconds)
        throw new DomainError('TOO_MANY_REQUESTS', `Too many password changes, retry in ${seconds(limit.ttlInSeconds)}`)
      }
    }
  }, async (request, reply) => {
    const { sub } = request.user
    const user = await fastify.users.findById(sub)
    if (user === null) throw unauthorized()
    const valid = await checkingPassword(reply, async () => verifyPassword(request.body.currentPassword, user.passwordHash))
    if (!valid) throw new DomainError('INVALID_CURRENT_PASSWORD', 'Current password is incorrect')
    const tokenVersion = await fastify.users.setPassword(sub, request.body.newPassword, auditContextOf(request))
    if (tokenVersion === null) throw unauthorized()
    // The other replicas hear of it from Postgres; this one need not wait for that.
    fastify.userRoles.forget(sub)
    return signedIn({ ...user, tokenVersion })
  })
}

export default auth
