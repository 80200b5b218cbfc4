import { and, asc, eq, sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { storableText } from '../db/storable.ts'
import { chatCannedReplies, type ChatCannedReply } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'

/** Bounds of a number's canned replies (README, The team inbox): the API's schemas and the count check read them. */
export const CANNED_REPLY_BOUNDS = {
  perNumber: 500,
  shortcutChars: 32,
  titleChars: 100,
  /** The platform's own bound of a text message's body. */
  textChars: 4096
} as const

/** What a shortcut may be: typed after `/` in the reply box, so lower-case letters, digits, `_` and `-` only. */
export const CANNED_REPLY_SHORTCUT = `^[a-z0-9_-]{1,${CANNED_REPLY_BOUNDS.shortcutChars}}$`

interface CannedReplyInput {
  shortcut: string
  title: string
  text: string
}

/** What a canned reply's row becomes in the API: the number it belongs to is the caller's account. */
type CannedReply = Omit<ChatCannedReply, 'phoneNumberId'>

const publicColumns = {
  id: chatCannedReplies.id,
  shortcut: chatCannedReplies.shortcut,
  title: chatCannedReplies.title,
  text: chatCannedReplies.text,
  createdAt: chatCannedReplies.createdAt,
  updatedAt: chatCannedReplies.updatedAt
}

const notFound = (): DomainError => new DomainError('CANNED_REPLY_NOT_FOUND', 'Canned reply not found')
const shortcutTaken = (shortcut: string): DomainError => new DomainError('CANNED_REPLY_EXISTS', `A canned reply with the shortcut ${shortcut} already exists`)

/** Whether a driver error is the unique (number, shortcut) index refusing a second reply of that shortcut. */
const isDuplicateShortcut = (err: unknown): boolean => {
  const cause = (err as { cause?: { code?: string, constraint_name?: string } }).cause
  return cause?.code === '23505' && cause.constraint_name === 'chat_canned_replies_account_shortcut_key'
}

const stored = (input: Partial<CannedReplyInput>): Partial<CannedReplyInput> => ({
  ...(input.shortcut !== undefined && { shortcut: input.shortcut }),
  ...(input.title !== undefined && { title: storableText(input.title) }),
  ...(input.text !== undefined && { text: storableText(input.text) })
})

/**
 * The canned replies of a platform number (README, The team inbox). Every read and change is scoped
 * by the number of the account the caller selected; another number's reply is not found.
 */
export function cannedRepliesRepository (db: DbOrTx) {
  return {
    /** By shortcut. */
    async list (phoneNumberId: string, page: { limit: number, offset: number }): Promise<CannedReply[]> {
      return db.select(publicColumns).from(chatCannedReplies)
        .where(eq(chatCannedReplies.phoneNumberId, phoneNumberId))
        .orderBy(asc(chatCannedReplies.shortcut))
        .limit(page.limit)
        .offset(page.offset)
    },

    /**
     * Adds one, within the number's bound: the number is locked for the count and the insert, so
     * that two adds at once cannot both take the last place.
     */
    async create (phoneNumberId: string, input: CannedReplyInput): Promise<CannedReply> {
      return db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`chat-canned-replies:${phoneNumberId}`}, 0))`)
        const [{ count }] = await tx.execute<{ count: number }>(sql`select count(*)::int as count from chat_canned_replies where phone_number_id = ${phoneNumberId}`)
        if (count >= CANNED_REPLY_BOUNDS.perNumber) {
          throw new DomainError('TOO_MANY_CANNED_REPLIES', `Too many canned replies: at most ${CANNED_REPLY_BOUNDS.perNumber} per account`)
        }
        const [row] = await tx.insert(chatCannedReplies).values({ phoneNumberId, ...stored(input) as CannedReplyInput })
          .onConflictDoNothing({ target: [chatCannedReplies.phoneNumberId, chatCannedReplies.shortcut] })
          .returning(publicColumns)
        if (row === undefined) throw shortcutTaken(input.shortcut)
        return row
      })
    },

    async update (id: string, phoneNumberId: string, changes: Partial<CannedReplyInput>): Promise<CannedReply> {
      try {
        const [row] = await db.update(chatCannedReplies).set({ ...stored(changes), updatedAt: new Date() })
          .where(and(eq(chatCannedReplies.id, id), eq(chatCannedReplies.phoneNumberId, phoneNumberId)))
          .returning(publicColumns)
        if (row === undefined) throw notFound()
        return row
      } catch (err) {
        throw changes.shortcut !== undefined && isDuplicateShortcut(err) ? shortcutTaken(changes.shortcut) : err
      }
    },

    async delete (id: string, phoneNumberId: string): Promise<void> {
      const [row] = await db.delete(chatCannedReplies)
        .where(and(eq(chatCannedReplies.id, id), eq(chatCannedReplies.phoneNumberId, phoneNumberId)))
        .returning({ id: chatCannedReplies.id })
      if (row === undefined) throw notFound()
    }
  }
}

export type CannedRepliesRepository = ReturnType<typeof cannedRepliesRepository>
