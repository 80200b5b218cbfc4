import { sql } from 'drizzle-orm'
import { index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { createdAt, id, nullableTimestamp } from './_columns.ts'
import { users } from './users.ts'

/** What a key may do (README, API keys): a closed set, checked on every route. */
export const API_KEY_SCOPES = [
  'workflows:read', 'workflows:write', 'runs:read', 'runs:write', 'events:write', 'queues:read',
  'credentials:read', 'credentials:write', 'chat:read', 'chat:write', 'subscriptions:write', 'mcp',
  'audit:read', 'users:admin'
] as const
export type ApiKeyScope = typeof API_KEY_SCOPES[number]
/** The scopes only an admin's key may hold. */
export const ADMIN_SCOPES: readonly ApiKeyScope[] = ['audit:read', 'users:admin']

/**
 * A machine's credential (README, API keys): it acts as its owner within its scopes and, when
 * `workflowIds` is set, on those workflows only. Only the secret's SHA-256 is stored.
 */
export const apiKeys = pgTable('api_keys', {
  id: id(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  /** The key's first characters, shown in lists to tell keys apart. */
  hint: text('hint').notNull(),
  secretHash: text('secret_hash').notNull(),
  scopes: text('scopes').array().$type<ApiKeyScope[]>().notNull(),
  workflowIds: text('workflow_ids').array(),
  expiresAt: nullableTimestamp('expires_at'),
  /** Written in batches by each api replica, not per request: accurate to API_KEY_LAST_USED_FLUSH_MS. */
  lastUsedAt: nullableTimestamp('last_used_at'),
  revokedAt: nullableTimestamp('revoked_at'),
  createdAt: createdAt()
}, (t) => [
  uniqueIndex('api_keys_secret_hash_key').on(t.secretHash),
  index('api_keys_user_idx').on(t.userId, t.createdAt)
])

export type ApiKey = typeof apiKeys.$inferSelect

/** Who did a recorded action: a signed-in user, a user's API key, or nobody signed in (a failed login). */
export const AUDIT_ACTOR_TYPES = ['user', 'api_key', 'anonymous'] as const
export type AuditActorType = typeof AUDIT_ACTOR_TYPES[number]

/**
 * The audit log (README, Audit log): one row per security-relevant action, written in the
 * transaction of the action. Actors and targets are plain ids, not references: the record
 * outlives what it names.
 */
export const auditLog = pgTable('audit_log', {
  id: id(),
  at: createdAt(),
  actorType: text('actor_type', { enum: AUDIT_ACTOR_TYPES }).notNull(),
  /** The user acting (a key's owner for a key); null for an anonymous actor. */
  actorId: text('actor_id'),
  /** The email of the actor, or the email a failed login tried, as it was then. */
  actorLabel: text('actor_label'),
  apiKeyId: text('api_key_id'),
  action: text('action').notNull(),
  targetType: text('target_type'),
  targetId: text('target_id'),
  requestId: text('request_id'),
  clientAddress: text('client_address'),
  /** What changed, never a secret (names, roles, counts). */
  details: jsonb('details').$type<Record<string, unknown>>()
}, (t) => [
  index('audit_log_at_idx').on(t.at),
  index('audit_log_actor_idx').on(t.actorId, t.at),
  index('audit_log_action_idx').on(t.action, t.at),
  index('audit_log_target_idx').on(t.targetId, t.at).where(sql`${t.targetId} is not null`)
])
