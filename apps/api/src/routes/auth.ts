import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { AppError, badRequest } from '@switchboard/core/errors'
import { DUMMY_PASSWORD_HASH, verifyPassword } from '@switchboard/core/auth/password'
import { usersRepository } from '@switchboard/core/repositories/users'
import { errorResponses } from '../schemas/common.ts'

export const LoginBody = Type.Object({
  email: Type.Optional(Type.String({ maxLength: 320 })),
  password: Type.Optional(Type.String({ maxLength: 1024 }))
}, { additionalProperties: false })

export const PublicUser = Type.Object({
  id: Type.String(),
  email: Type.String(),
  role: Type.String()
})

export const LoginResponse = Type.Object({ token: Type.String(), user: PublicUser })

const auth: FastifyPluginAsyncTypebox = async (fastify) => {
  const users = usersRepository(fastify.db)

  fastify.post('/api/auth/login', {
    config: {
      public: true,
      // Per address and account: slows password guessing without locking out a shared office IP.
      rateLimit: {
        max: 10,
        timeWindow: '1 minute',
        keyGenerator: (request) => `${request.ip}:${String((request.body as { email?: unknown } | undefined)?.email ?? '').toLowerCase()}`
      }
    },
    schema: {
      tags: ['auth'],
      security: [],
      body: LoginBody,
      response: { 200: LoginResponse, ...errorResponses(400, 401, 429) }
    }
  }, async (request) => {
    const { email, password } = request.body ?? {}
    if (!email || !password) throw badRequest('email and password are required')
    const user = await users.findByEmail(email)
    // Verify against a dummy hash for unknown emails so timing does not reveal which exist.
    const valid = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH)
    if (user === null || !valid) throw new AppError(401, 'INVALID_CREDENTIALS', 'Invalid email or password')
    const token = fastify.jwt.sign({ sub: user.id, email: user.email, role: user.role })
    return { token, user: { id: user.id, email: user.email, role: user.role } }
  })
}

export default auth
