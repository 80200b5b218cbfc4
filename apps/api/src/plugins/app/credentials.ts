import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { createCredentialService, credentialsRepository, type CredentialService, type CredentialsRepository } from '@switchboard/core/credentials'
import { keyringOf } from '@switchboard/core/encryption'

type Credentials = CredentialService & {
  list: CredentialsRepository['list']
  find: CredentialsRepository['find']
}

declare module 'fastify' {
  interface FastifyInstance {
    credentials: Credentials
  }
}

/** Credentials: reads without their data, and writes that encrypt it (one keyring for the process). */
async function credentials (fastify: FastifyInstance): Promise<void> {
  const repository = credentialsRepository(fastify.db)
  fastify.decorate('credentials', {
    ...createCredentialService({ db: fastify.db, keyring: keyringOf(fastify.config), quotas: fastify.config.quotas }),
    list: repository.list,
    find: repository.find
  })
}

export default fp(credentials, { name: 'credentials', dependencies: ['context'] })
