import { integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { id, timestamps } from './_columns.ts'

export const USER_ROLES = ['admin', 'member'] as const
export type UserRole = typeof USER_ROLES[number]

export const users = pgTable('users', {
  id: id(),
  email: text('email').notNull(),
  passwordHash: text('password_hash').notNull(),
  role: text('role', { enum: USER_ROLES }).notNull().default('member'),
  /**
   * Raised by every password change or reset; a token carries the version it was issued
   * under and is refused once they differ (README, Authentication).
   */
  tokenVersion: integer('token_version').notNull().default(0),
  /** The quotas an admin set for this user (users/quotas.ts); a missing one is the installation's default. */
  quotas: jsonb('quotas').$type<Record<string, number>>().notNull().default({}),
  ...timestamps()
}, (t) => [uniqueIndex('users_email_key').on(t.email)])

export type User = typeof users.$inferSelect
export type NewUser = typeof users.$inferInsert
