/** The audit log (README, Audit log): security-relevant actions, each recorded in the transaction of the action. */
export {
  AUDIT_ACTIONS,
  AUDIT_TARGET_TYPES,
  auditInsert,
  auditRepository,
  MAX_AUDIT_LABEL_LENGTH,
  recordAudit,
  type AuditAction,
  type AuditContext,
  type AuditEvent,
  type AuditFilter,
  type AuditRow,
  type AuditTargetType
} from './log.ts'
export { AUDIT_ACTOR_TYPES, type AuditActorType } from '../db/schema/index.ts'
