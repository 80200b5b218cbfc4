import type { FastifyRequest } from 'fastify'
import type { AuditContext } from '@switchboard/core/audit'

type Actor = Pick<AuditContext, 'actorType' | 'actorId' | 'actorLabel' | 'apiKeyId'>

/** Where a request comes from: its request id and client address (`request.ip`, which TRUST_PROXY decides). */
const withOrigin = (request: FastifyRequest, actor: Actor): AuditContext => ({ ...actor, requestId: request.id, clientAddress: request.ip })

/**
 * Who a signed-in request acts as, for the audit log (README, Audit log): its user, or the API
 * key it came with, acting as the key's owner.
 */
export function auditContextOf (request: FastifyRequest): AuditContext {
  return withOrigin(request, {
    actorType: request.apiKey === null ? 'user' : 'api_key',
    actorId: request.user.sub,
    actorLabel: request.user.email,
    apiKeyId: request.apiKey?.id ?? null
  })
}

/** A login's actor: the user it signed in, or, for a failed one, nobody, labelled with the email it tried. */
export function loginAuditContextOf (request: FastifyRequest, user: { id: string, email: string } | null, attemptedEmail: string): AuditContext {
  return withOrigin(request, user === null
    ? { actorType: 'anonymous', actorId: null, actorLabel: attemptedEmail, apiKeyId: null }
    : { actorType: 'user', actorId: user.id, actorLabel: user.email, apiKeyId: null })
}
