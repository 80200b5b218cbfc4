import { index, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { id, timestamps } from './_columns.ts'
import { users } from './users.ts'
import { workflows } from './workflows.ts'

export const CREDENTIAL_TYPES = ['bearer', 'basic', 'header', 'hmac', 'mcp', 'generic'] as const
export type CredentialType = typeof CREDENTIAL_TYPES[number]

/** Secrets nodes refer to by name or id; `data` is never returned and never leaves the worker in clear. */
export const credentials = pgTable('credentials', {
  id: id(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  type: text('type', { enum: CREDENTIAL_TYPES }).notNull(),
  // The names of the fields of `data` (not secret), so templates can be checked and the API can list them.
  fields: text('fields').array().notNull(),
  // The JSON of `data`, AES-256-GCM with ENCRYPTION_KEY and its key id (encryption.ts).
  dataEncrypted: text('data_encrypted').notNull(),
  ...timestamps()
}, (t) => [uniqueIndex('credentials_user_name_key').on(t.userId, t.name)])

/**
 * Which workflows refer to which credentials, rewritten whenever a workflow's nodes are saved:
 * deleting a credential still referred to is refused (the foreign key guards against a save
 * racing the delete), and the refusal names the workflows. NO ACTION rather than RESTRICT: it is
 * checked at the end of the statement, so deleting a user, which cascades to both their
 * workflows and their credentials, is not refused halfway.
 */
export const workflowCredentials = pgTable('workflow_credentials', {
  workflowId: text('workflow_id').notNull().references(() => workflows.id, { onDelete: 'cascade' }),
  credentialId: text('credential_id').notNull().references(() => credentials.id, { onDelete: 'no action' })
}, (t) => [
  primaryKey({ columns: [t.workflowId, t.credentialId] }),
  index('workflow_credentials_credential_idx').on(t.credentialId)
])

export type Credential = typeof credentials.$inferSelect
