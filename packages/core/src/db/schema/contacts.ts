import { sql } from 'drizzle-orm'
import { boolean, index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { id, nullableTimestamp, timestamps } from './_columns.ts'
import { users } from './users.ts'

/** How a contact's `optedOut` was last set (README, Contacts and consent). */
export const CONSENT_SOURCES = ['keyword', 'staff', 'import'] as const
export type ConsentSource = typeof CONSENT_SOURCES[number]

/**
 * The customers of a platform number, keyed like conversations (by the number that receives
 * them and the customer's phone or platform user id, README, Customers known by username), so that
 * the users linking one number share its contacts and the default account from the environment
 * needs no row. An inbound message creates its sender's contact; staff change it and import them.
 * `optedOut` refuses every send but the one exception of README, Contacts and consent.
 */
export const chatContacts = pgTable('chat_contacts', {
  id: id(),
  phoneNumberId: text('phone_number_id').notNull(),
  // "" when the platform withholds it (a customer known by username): then platformUserId is set.
  phone: text('phone').notNull(),
  // The platform's business-scoped user id (BSUID), its parent (shared across business portfolios) and the username it shows.
  platformUserId: text('platform_user_id'),
  parentPlatformUserId: text('parent_platform_user_id'),
  username: text('username'),
  name: text('name'),
  labels: text('labels').array().notNull().default(sql`'{}'::text[]`),
  attributes: jsonb('attributes').$type<Record<string, string>>().notNull().default(sql`'{}'::jsonb`),
  optedOut: boolean('opted_out').notNull().default(false),
  // When and how optedOut was last set: a keyword's time is its message's (the customer's word), the others' when they were made.
  consentChangedAt: nullableTimestamp('consent_changed_at'),
  consentSource: text('consent_source', { enum: CONSENT_SOURCES }),
  ...timestamps()
}, (t) => [
  // Serves the lookups by phone (a query names `phone <> ''`, its predicate, to use it).
  uniqueIndex('chat_contacts_account_phone_key').on(t.phoneNumberId, t.phone).where(sql`${t.phone} <> ''`),
  // The list's order (by phone within the number, those without one first), which the partial index cannot serve.
  index('chat_contacts_account_phone_idx').on(t.phoneNumberId, t.phone),
  uniqueIndex('chat_contacts_account_user_key').on(t.phoneNumberId, t.platformUserId).where(sql`${t.platformUserId} is not null`)
])

/**
 * The opt-out and opt-in keywords of a platform number and their confirmations, keyed like
 * chat_assistants. No row: the defaults (chat/consent.ts).
 */
export const chatConsentSettings = pgTable('chat_consent_settings', {
  phoneNumberId: text('phone_number_id').primaryKey(),
  // Stored normalised (trimmed, spaces collapsed, upper case), as they are matched.
  optOutKeywords: text('opt_out_keywords').array().notNull(),
  optInKeywords: text('opt_in_keywords').array().notNull(),
  optOutConfirmation: text('opt_out_confirmation').notNull(),
  optInConfirmation: text('opt_in_confirmation').notNull(),
  updatedBy: text('updated_by').references(() => users.id, { onDelete: 'set null' }),
  updatedAt: nullableTimestamp('updated_at').notNull().defaultNow()
})

export type ChatContact = typeof chatContacts.$inferSelect
export type ChatConsentSettings = typeof chatConsentSettings.$inferSelect
