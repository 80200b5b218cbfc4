import { and, desc, eq, gte, lt, sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { auditLog, type AuditActorType } from '../db/schema/index.ts'
import { createId } from '../ids.ts'
import { AUDIT_ACTIONS, AUDIT_TARGET_TYPES } from '../db/values.ts'

export { AUDIT_ACTIONS, AUDIT_TARGET_TYPES }

export type AuditAction = typeof AUDIT_ACTIONS[number]

export type AuditTargetType = typeof AUDIT_TARGET_TYPES[number]

/**
 * An email or a failed login's attempted email is kept to this many characters: enough for any
 * real address (RFC 5321 allows 254), and bounded whatever a caller sends.
 */
export const MAX_AUDIT_LABEL_LENGTH = 254

/** Who acts and from where: the same for every action of one request (the api's `auditContextOf`). */
export interface AuditContext {
  actorType: AuditActorType
  /** The user acting, a key's owner for a key; null for an anonymous actor. */
  actorId: string | null
  /** The actor's email as it is now, or the email a failed login tried. */
  actorLabel: string | null
  apiKeyId: string | null
  requestId: string | null
  clientAddress: string | null
}

/** What was done: never a secret in `details` (names, roles, counts, the fields changed). */
export interface AuditEvent {
  action: AuditAction
  targetType?: AuditTargetType
  targetId?: string
  details?: Record<string, unknown>
}

const label = (value: string | null): string | null => value === null ? null : value.slice(0, MAX_AUDIT_LABEL_LENGTH)

/**
 * Records `event` by `context` with `db`: pass the transaction of the action itself, so that the
 * row is written if and only if the action commits.
 */
export async function recordAudit (db: DbOrTx, context: AuditContext, event: AuditEvent): Promise<void> {
  await db.insert(auditLog).values({
    actorType: context.actorType,
    actorId: context.actorId,
    actorLabel: label(context.actorLabel),
    apiKeyId: context.apiKeyId,
    action: event.action,
    targetType: event.targetType ?? null,
    targetId: event.targetId ?? null,
    requestId: context.requestId,
    clientAddress: context.clientAddress,
    details: event.details ?? null
  })
}

/**
 * The insert of an audit row as a part of the action's own statement (a data-modifying CTE), for
 * an action written by one statement: `from` is the CTE of the changed row (one row at most:
 * the audit row's id is made here), `targetId` and `details` expressions over it.
 */
export function auditInsert (context: AuditContext, event: Pick<AuditEvent, 'action' | 'targetType'>, from: { cte: SQL, targetId: SQL, details?: SQL }): SQL {
  return sql`insert into ${auditLog} (id, actor_type, actor_id, actor_label, api_key_id, action, target_type, target_id, request_id, client_address, details)
    select ${createId()}, ${context.actorType}, ${context.actorId}, ${label(context.actorLabel)}, ${context.apiKeyId}, ${event.action},
      ${event.targetType ?? null}, ${from.targetId}, ${context.requestId}, ${context.clientAddress}, ${from.details ?? sql`null`}
    from ${from.cte}`
}

export interface AuditFilter {
  actorId?: string
  action?: AuditAction
  targetType?: AuditTargetType
  targetId?: string
  /** At or after this time. */
  from?: Date
  /** Before this time. */
  to?: Date
  limit: number
  offset: number
}

export type AuditRow = typeof auditLog.$inferSelect

/** The audit log as admins read it (`GET /api/audit`): newest first, each filter on an index of its own (`audit_log_*_idx`). */
export function auditRepository (db: DbOrTx) {
  return {
    record: async (context: AuditContext, event: AuditEvent): Promise<void> => recordAudit(db, context, event),

    async list (filter: AuditFilter): Promise<AuditRow[]> {
      return db.select().from(auditLog)
        .where(and(
          filter.actorId === undefined ? undefined : eq(auditLog.actorId, filter.actorId),
          filter.action === undefined ? undefined : eq(auditLog.action, filter.action),
          filter.targetType === undefined ? undefined : eq(auditLog.targetType, filter.targetType),
          filter.targetId === undefined ? undefined : eq(auditLog.targetId, filter.targetId),
          filter.from === undefined ? undefined : gte(auditLog.at, filter.from),
          filter.to === undefined ? undefined : lt(auditLog.at, filter.to)
        ))
        .orderBy(desc(auditLog.at), desc(auditLog.id))
        .limit(filter.limit)
        .offset(filter.offset)
    }
  }
}

export type AuditRepository = ReturnType<typeof auditRepository>
