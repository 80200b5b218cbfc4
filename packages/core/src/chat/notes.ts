import { createHash } from 'node:crypto'
import { createId } from '@paralleldrive/cuid2'
import { asc, eq, sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { conversationNotes, users } from '../db/schema/index.ts'
import { storableText } from '../db/storable.ts'
import { textArray } from '../db/sql.ts'
import { DomainError } from '../errors.ts'
import { notifyNote } from './changes.ts'

/** Bounds of a note (README, The team inbox: notes): the API's schema and the handoff node read them. */
export const NOTE_BOUNDS = {
  textChars: 4000,
  /** Distinct `@email` mentions in one note. */
  mentions: 20
} as const

/**
 * `@email` in a note's text, preceded by nothing or a space or an opening bracket (so that an
 * address's own `@` is not a mention); a sentence's final dot is not part of the domain.
 */
const MENTION = /(?<![^\s(])@([\w.%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,})/gi

/** The distinct emails a note mentions, lower case (users' emails are stored so); more than the bound is a 400. */
export function mentionedEmails (text: string): string[] {
  const emails = [...new Set([...text.matchAll(MENTION)].map((match) => match[1].toLowerCase()))]
  if (emails.length > NOTE_BOUNDS.mentions) {
    throw new DomainError('VALIDATION_ERROR', `A note mentions at most ${NOTE_BOUNDS.mentions} people`)
  }
  return emails
}

/** A workflow's note id from its node's idempotency key: a cuid-shaped digest, the same on every attempt. */
export const noteIdOf = (idempotencyKey: string): string => `n${createHash('sha256').update(`note:${idempotencyKey}`).digest('hex').slice(0, 23)}`

/** A note as the API returns it: its author's email beside their id (null: a workflow wrote it, or the author was deleted). */
export interface ConversationNoteView {
  id: string
  conversationId: string
  text: string
  authorId: string | null
  authorName: string | null
  runId: string | null
  mentions: string[]
  createdAt: Date
}

const noteColumns = {
  id: conversationNotes.id,
  conversationId: conversationNotes.conversationId,
  text: conversationNotes.text,
  authorId: conversationNotes.authorId,
  authorName: users.email,
  runId: conversationNotes.runId,
  mentions: conversationNotes.mentions,
  createdAt: conversationNotes.createdAt
}

interface NoteInput {
  /** Given by a workflow (`noteIdOf`): a note of that id already stored stays as it is. */
  id?: string
  conversationId: string
  authorId: string | null
  runId?: string
  text: string
  /** User ids, resolved from `mentionedEmails` by who can use the number. */
  mentions: readonly string[]
}

/**
 * Private notes of staff and workflows on a conversation (README, The team inbox): apart from its
 * messages, never sent. The caller has checked the conversation is of the account it acts on.
 */
export function notesRepository (db: DbOrTx) {
  return {
    /** Stores a note, announced to the inbox as `note.created`; returns its id (a note of the given id stored before included). */
    async insert (note: NoteInput): Promise<string> {
      const id = note.id ?? createId()
      await db.execute(sql`
        with note as (
          insert into conversation_notes (id, conversation_id, author_id, run_id, text, mentions)
          values (${id}, ${note.conversationId}, ${note.authorId}, ${note.runId ?? null}, ${storableText(note.text)}, ${textArray(note.mentions)})
          on conflict (id) do nothing
          returning id, conversation_id
        )
        select ${notifyNote(sql`c.phone_number_id`, sql`note.conversation_id`, sql`note.id`)}
        from note join conversations c on c.id = note.conversation_id`)
      return id
    },

    /** The conversation's notes, oldest first. */
    async list (conversationId: string, page: { limit: number, offset: number }): Promise<ConversationNoteView[]> {
      return db.select(noteColumns).from(conversationNotes).leftJoin(users, eq(users.id, conversationNotes.authorId))
        .where(eq(conversationNotes.conversationId, conversationId))
        .orderBy(asc(conversationNotes.createdAt), asc(conversationNotes.id))
        .limit(page.limit).offset(page.offset)
    },

    async get (id: string): Promise<ConversationNoteView | null> {
      const [row] = await db.select(noteColumns).from(conversationNotes).leftJoin(users, eq(users.id, conversationNotes.authorId))
        .where(eq(conversationNotes.id, id)).limit(1)
      return row ?? null
    }
  }
}

export type NotesRepository = ReturnType<typeof notesRepository>
