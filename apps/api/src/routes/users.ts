import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { USER_ROLES } from '@switchboard/core/db'
import { usersRepository } from '@switchboard/core/users'
import { errorResponses, IdParams, Pagination, Timestamp } from '../schemas/common.ts'

export const User = Type.Object({
  id: Type.String(),
  email: Type.String(),
  role: Type.String(),
  createdAt: Timestamp
})

export const CreateUserBody = Type.Object({
  email: Type.String({ format: 'email', maxLength: 320 }),
  password: Type.String({ minLength: 8, maxLength: 1024 }),
  role: Type.Optional(Type.Union(USER_ROLES.map((role) => Type.Literal(role)), { errorMessage: 'role must be one of admin, member' }))
}, { additionalProperties: false })

/** Admin-only user management (contract section 4, Users). */
const users: FastifyPluginAsyncTypebox = async (fastify) => {
  const repo = usersRepository(fastify.db)
  fastify.addHook('onRequest', fastify.requireAdmin)

  fastify.get('/api/users', {
    schema: { tags: ['users'], querystring: Type.Object(Pagination), response: { 200: Type.Array(User), ...errorResponses(400, 401, 403) } }
  }, async (request) => repo.list(request.query))

  fastify.post('/api/users', {
    schema: { tags: ['users'], body: CreateUserBody, response: { 201: User, ...errorResponses(400, 401, 403, 409) } }
  }, async (request, reply) => {
    const user = await repo.create({ ...request.body, role: request.body.role ?? 'member' })
    if (user === null) throw new DomainError('EMAIL_TAKEN', 'Email already registered')
    return reply.code(201).send(user)
  })

  fastify.delete('/api/users/:id', {
    schema: { tags: ['users'], params: IdParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404) } }
  }, async (request, reply) => {
    if (!await repo.delete(request.params.id)) throw new DomainError('USER_NOT_FOUND', 'User not found')
    // The other replicas hear of it from Postgres; this one need not wait for that.
    fastify.userRoles.forget(request.params.id)
    return reply.code(204).send(null)
  })
}

export default users
