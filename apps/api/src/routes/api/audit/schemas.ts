import { Type } from 'typebox'
import { AUDIT_ACTIONS, AUDIT_ACTOR_TYPES, AUDIT_TARGET_TYPES } from '@switchboard/core/audit'
import { Pagination, Timestamp } from '../../../schemas/common.ts'

const instant = (field: string, description: string) =>
  Type.String({ format: 'date-time', maxLength: 64, description, errorMessage: `${field} must be an ISO 8601 date-time` })

export const ListAuditQuery = Type.Object({
  actorId: Type.Optional(Type.String({ maxLength: 64, description: 'the user who acted (a key\'s owner for a key)' })),
  action: Type.Optional(Type.Enum(AUDIT_ACTIONS)),
  targetType: Type.Optional(Type.Enum(AUDIT_TARGET_TYPES)),
  targetId: Type.Optional(Type.String({ maxLength: 64 })),
  from: Type.Optional(instant('from', 'rows written at or after this time')),
  to: Type.Optional(instant('to', 'rows written before this time')),
  ...Pagination
})

const NullableString = Type.Union([Type.String(), Type.Null()])

/** One recorded action (README, Audit log). */
export const AuditEntry = Type.Object({
  id: Type.String(),
  at: Timestamp,
  actor: Type.Object({
    type: Type.Enum(AUDIT_ACTOR_TYPES),
    id: NullableString,
    label: NullableString,
    apiKeyId: NullableString
  }),
  action: Type.String(),
  target: Type.Object({ type: NullableString, id: NullableString }),
  requestId: NullableString,
  clientAddress: NullableString,
  details: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])
})
