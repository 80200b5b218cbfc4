import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { auditRepository, type AuditRepository } from '@switchboard/core/audit'

declare module 'fastify' {
  interface FastifyInstance {
    audit: AuditRepository
  }
}

/** The audit log: the rows of what is not written by a domain's own transaction (logins), and its reads. */
async function audit (fastify: FastifyInstance): Promise<void> {
  fastify.decorate('audit', auditRepository(fastify.db))
}

export default fp(audit, { name: 'audit', dependencies: ['context'] })
