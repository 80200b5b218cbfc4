import { pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { id, timestamps } from './_columns.ts'

/**
 * Replies staff insert in the inbox by a shortcut (README, The team inbox), per platform number and
 * keyed like conversations and contacts, so that the users linking one number share them and the
 * default account from the environment needs no row.
 */
export const chatCannedReplies = pgTable('chat_canned_replies', {
  id: id(),
  phoneNumberId: text('phone_number_id').notNull(),
  shortcut: text('shortcut').notNull(),
  title: text('title').notNull(),
  text: text('text').notNull(),
  ...timestamps()
}, (t) => [
  // One shortcut per number; serves the list's order (by shortcut within the number) and the count of the bound.
  uniqueIndex('chat_canned_replies_account_shortcut_key').on(t.phoneNumberId, t.shortcut)
])

export type ChatCannedReply = typeof chatCannedReplies.$inferSelect
