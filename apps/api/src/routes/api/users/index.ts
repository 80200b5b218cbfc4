import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { effectiveQuotas, type Quotas, type UserManager } from '@switchboard/core/users'
import { auditContextOf } from '../../../audit-context.ts'
import { errorResponses, IdParams, Pagination } from '../../../schemas/common.ts'
import { CreateUserBody, UpdateUserBody, User } from './schemas.ts'
import { keyScopes } from '../key-scopes.ts'

const userNotFound = (): DomainError => new DomainError('USER_NOT_FOUND', 'User not found')

/** An API key (users:admin) manages members only; a person's token, every account (README, API keys). */
const managerOf = (request: FastifyRequest): UserManager => ({ membersOnly: request.apiKey !== null })

/** Admin-only user management (README, Signing in; Security: Passwords). */
const users: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRoute', keyScopes('users:admin', 'users:admin'))
  fastify.addHook('onRequest', fastify.requireAdmin)
  // A user's quotas as they apply: their own settings over the installation's defaults.
  const answered = <T extends { quotas: unknown }>(user: T): T & { quotas: Quotas } => ({ ...user, quotas: effectiveQuotas(fastify.config.quotas, user.quotas) })

  fastify.get('', {
    schema: { tags: ['users'], querystring: Type.Object(Pagination), response: { 200: Type.Array(User), ...errorResponses(400, 401, 403) } }
  }, async (request) => (await fastify.users.list(request.query)).map(answered))

  fastify.post('', {
    schema: { tags: ['users'], body: CreateUserBody, response: { 201: User, ...errorResponses(400, 401, 403, 409) } }
  }, async (request, reply) => {
    const user = await fastify.users.create({ ...request.body, role: request.body.role ?? 'member' }, auditContextOf(request), managerOf(request))
    if (user === null) throw new DomainError('EMAIL_TAKEN', 'Email already registered')
    return reply.code(201).send(answered(user))
  })

  // A new password ends the user's tokens; a new role applies to the tokens they hold; quotas apply to what comes next.
  fastify.patch('/:id', {
    schema: { tags: ['users'], params: IdParams, body: UpdateUserBody, response: { 200: User, ...errorResponses(400, 401, 403, 404, 409) } }
  }, async (request) => {
    const { role, password, quotas } = request.body
    if (role === undefined && password === undefined && quotas === undefined) throw new DomainError('BAD_REQUEST', 'role, password or quotas is required')
    const user = await fastify.users.update(request.params.id, { role, password, quotas }, auditContextOf(request), managerOf(request))
    if (user === null) throw userNotFound()
    // The other replicas hear of it from Postgres; this one need not wait for that.
    fastify.userRoles.forget(request.params.id)
    return answered(user)
  })

  fastify.delete('/:id', {
    schema: { tags: ['users'], params: IdParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } }
  }, async (request, reply) => {
    if (!await fastify.users.delete(request.params.id, auditContextOf(request), managerOf(request))) throw userNotFound()
    fastify.userRoles.forget(request.params.id)
    return reply.code(204).send(null)
  })
}

export default users
