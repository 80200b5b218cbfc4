import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { usersRepository } from '@switchboard/core/users'

declare module 'fastify' {
  interface FastifyInstance {
    users: ReturnType<typeof usersRepository>
  }
}

/** User accounts: login, admin management, the role cache and the admin created at start. */
async function users (fastify: FastifyInstance): Promise<void> {
  fastify.decorate('users', usersRepository(fastify.db))
}

export default fp(users, { name: 'users', dependencies: ['context'] })
