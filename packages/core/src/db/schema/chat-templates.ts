import { jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { timestamps } from './_columns.ts'
import { TEMPLATE_CATEGORIES, TEMPLATE_QUALITIES, TEMPLATE_STATUSES } from '../values.ts'

/**
 * A template made here and submitted to the platform (README, Chat: templates), keyed as the platform
 * keys it: a name and a language within a business account, so that the users of every account of
 * that business account (the default one from the environment too) see the same rows. The platform's
 * status webhooks keep `status`, `reason` and `quality` current.
 */
export const chatTemplates = pgTable('chat_templates', {
  businessAccountId: text('business_account_id').notNull(),
  name: text('name').notNull(),
  language: text('language').notNull(),
  /** The platform's id of the template (`id` of its answer to the create). */
  templateId: text('template_id').notNull(),
  category: text('category', { enum: TEMPLATE_CATEGORIES }).notNull(),
  /** As submitted: the template's text, examples and buttons. */
  components: jsonb('components').$type<unknown[]>().notNull(),
  status: text('status', { enum: TEMPLATE_STATUSES }).notNull(),
  /** Why the platform rejected, paused or disabled it; null while nothing is wrong. */
  reason: text('reason'),
  quality: text('quality', { enum: TEMPLATE_QUALITIES }),
  ...timestamps()
}, (t) => [
  primaryKey({ columns: [t.businessAccountId, t.name, t.language] })
])

export type ChatTemplate = typeof chatTemplates.$inferSelect
