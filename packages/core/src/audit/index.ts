/** The audit log (README, Audit log): security-relevant actions, each recorded in the transaction of the action. */
export {
  AUDIT_ACTIONS,
  AUDIT_TARGET_TYPES,
  type AuditAction,
  type AuditContext,
  type AuditEvent,
  type AuditFilter,
  auditInsert,
  auditRepository,
  type AuditRepository,
  type AuditRow,
  type AuditTargetType,
  MAX_AUDIT_LABEL_LENGTH,
  recordAudit
} from './log.ts'
export { AUDIT_ACTOR_TYPES, type AuditActorType } from '../db/schema/index.ts'
