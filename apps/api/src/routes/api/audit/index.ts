import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { AuditRow } from '@switchboard/core/audit'
import { DomainError } from '@switchboard/core/errors'
import { errorResponses } from '../../../schemas/common.ts'
import { keyScopes } from '../key-scopes.ts'
import { AuditEntry, ListAuditQuery } from './schemas.ts'

/**
 * A date-time the schema's format accepts but a Date cannot hold (a leap second) is refused
 * like a malformed one rather than reaching SQL as NaN.
 */
function instantOf (field: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined
  const instant = new Date(value)
  if (Number.isNaN(instant.getTime())) throw new DomainError('VALIDATION_ERROR', `${field} must be an ISO 8601 date-time`)
  return instant
}

const entryOf = (row: AuditRow) => ({
  id: row.id,
  at: row.at,
  actor: { type: row.actorType, id: row.actorId, label: row.actorLabel, apiKeyId: row.apiKeyId },
  action: row.action,
  target: { type: row.targetType, id: row.targetId },
  requestId: row.requestId,
  clientAddress: row.clientAddress,
  details: row.details
})

/** GET /api/audit (README, Audit log): admins only, like user management; an API key needs `audit:read`. */
const audit: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRoute', keyScopes('audit:read', 'audit:read'))
  fastify.addHook('onRequest', fastify.requireAdmin)

  fastify.get('', {
    schema: {
      tags: ['audit'],
      summary: 'The audit log, newest first, filtered by actor, action, target and time',
      querystring: ListAuditQuery,
      response: { 200: Type.Array(AuditEntry), ...errorResponses(400, 401, 403) }
    }
  }, async (request) => {
    const from = instantOf('from', request.query.from)
    const to = instantOf('to', request.query.to)
    if (from !== undefined && to !== undefined && to <= from) throw new DomainError('VALIDATION_ERROR', 'to must be after from')
    const { actorId, action, targetType, targetId, limit, offset } = request.query
    return (await fastify.audit.list({ actorId, action, targetType, targetId, from, to, limit, offset })).map(entryOf)
  })
}

export default audit
