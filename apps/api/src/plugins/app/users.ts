import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { apiKeysRepository, usersRepository, type ApiKeysRepository, type UsersRepository } from '@switchboard/core/users'

declare module 'fastify' {
  interface FastifyInstance {
    users: UsersRepository
    apiKeys: ApiKeysRepository
  }
}

/** User accounts (login, admin management, the role cache and the admin created at start) and their API keys. */
async function users (fastify: FastifyInstance): Promise<void> {
  fastify.decorate('users', usersRepository(fastify.db))
  fastify.decorate('apiKeys', apiKeysRepository(fastify.db))
}

export default fp(users, { name: 'users', dependencies: ['context'] })
