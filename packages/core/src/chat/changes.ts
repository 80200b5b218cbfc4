import { sql, type SQL } from 'drizzle-orm'
import { DomainError } from '../errors.ts'

/**
 * The Postgres channel every change of the inbox is announced on (README, The team inbox), by the
 * statement that makes it: Postgres delivers a notification when its transaction commits, so an api
 * replica never announces what a reader cannot see yet, and a rolled-back change is never announced.
 * Each api replica listens once and passes the changes of a number to its event streams of that number.
 */
export const CHAT_CHANGES_CHANNEL = 'switchboard_chat_changes'

const CHAT_CHANGE_KINDS = ['conversation.updated', 'message.created', 'message.updated', 'note.created'] as const
type ChatChangeKind = typeof CHAT_CHANGE_KINDS[number]

/** What changed, ids only: a reader asks the API for the rest, within what it may see. */
export interface ChatChange {
  kind: ChatChangeKind
  phoneNumberId: string
  conversationId: string
  /** The message created or updated; absent for `conversation.updated` and `note.created`. */
  messageId?: string
  /** The note created (`note.created`). */
  noteId?: string
}

/**
 * The `pg_notify(…)` call a statement makes for each change it writes (a select list item, so one
 * per row of a `from` of changed rows). Its arguments are SQL expressions of the statement.
 */
export const notifyChange = (kind: Exclude<ChatChangeKind, 'note.created'>, phoneNumberId: SQL, conversationId: SQL, messageId?: SQL): SQL => sql`pg_notify(${CHAT_CHANGES_CHANNEL},
  json_build_object('kind', ${kind}::text, 'phoneNumberId', (${phoneNumberId})::text, 'conversationId', (${conversationId})::text,
    'messageId', (${messageId ?? sql`null`})::text)::text)`

/** `notifyChange` of a note written on a conversation (README, The team inbox: notes). */
export const notifyNote = (phoneNumberId: SQL, conversationId: SQL, noteId: SQL): SQL => sql`pg_notify(${CHAT_CHANGES_CHANNEL},
  json_build_object('kind', 'note.created', 'phoneNumberId', (${phoneNumberId})::text, 'conversationId', (${conversationId})::text,
    'noteId', (${noteId})::text)::text)`

const isId = (value: unknown): value is string => typeof value === 'string' && value !== '' && value.length <= 200

/** A notification's payload as a change; null for anything else (a hand-made notify, a future kind). */
function changeOf (payload: string): ChatChange | null {
  let parsed: unknown
  try {
    parsed = JSON.parse(payload)
  } catch {
    return null
  }
  if (typeof parsed !== 'object' || parsed === null) return null
  const { kind, phoneNumberId, conversationId, messageId, noteId } = parsed as Record<string, unknown>
  if (!(CHAT_CHANGE_KINDS as readonly unknown[]).includes(kind) || !isId(phoneNumberId) || !isId(conversationId)) return null
  return { kind: kind as ChatChangeKind, phoneNumberId, conversationId, ...(isId(messageId) && { messageId }), ...(isId(noteId) && { noteId }) }
}

/** One event stream of a user on a number: the api's `GET /api/chat/events`. */
export interface ChatChangeSubscriber {
  userId: string
  phoneNumberId: string
  /** A change of the number; null when changes may have been missed (the listener reconnected): read everything again. */
  deliver: (change: ChatChange | null) => void
  /** The feed ends the stream: its user changed (deleted, password, role), or the server closes. */
  end: () => void
}

interface ChatChangeFeedOptions {
  /** Streams one user may hold at once in this process. */
  maxPerUser: number
  /** Streams this process holds at once. */
  maxStreams: number
}

/**
 * The streams of one api process and the changes it hears, passed to the streams of the changed
 * number. Bounded per user and per process: one more is refused (429) rather than queued.
 */
export function chatChangeFeed (options: ChatChangeFeedOptions) {
  const byNumber = new Map<string, Set<ChatChangeSubscriber>>()
  const byUser = new Map<string, Set<ChatChangeSubscriber>>()
  let streams = 0

  function remove (subscriber: ChatChangeSubscriber): void {
    const ofNumber = byNumber.get(subscriber.phoneNumberId)
    const ofUser = byUser.get(subscriber.userId)
    if (ofNumber?.delete(subscriber) !== true) return
    streams--
    if (ofNumber.size === 0) byNumber.delete(subscriber.phoneNumberId)
    ofUser?.delete(subscriber)
    if (ofUser?.size === 0) byUser.delete(subscriber.userId)
  }

  /** Ends the streams, each once: ending one removes it, so it is never ended twice. */
  function endAll (subscribers: Iterable<ChatChangeSubscriber>): void {
    for (const subscriber of [...subscribers]) {
      remove(subscriber)
      subscriber.end()
    }
  }

  return {
    /** Adds a stream; returns what removes it. */
    subscribe (subscriber: ChatChangeSubscriber): () => void {
      const ofUser = byUser.get(subscriber.userId) ?? new Set()
      if (ofUser.size >= options.maxPerUser) {
        throw new DomainError('TOO_MANY_EVENT_STREAMS', `Too many event streams: at most ${options.maxPerUser} per user`)
      }
      if (streams >= options.maxStreams) throw new DomainError('TOO_MANY_EVENT_STREAMS', 'Too many event streams on this server: retry later')
      const ofNumber = byNumber.get(subscriber.phoneNumberId) ?? new Set()
      ofNumber.add(subscriber)
      ofUser.add(subscriber)
      byNumber.set(subscriber.phoneNumberId, ofNumber)
      byUser.set(subscriber.userId, ofUser)
      streams++
      return () => { remove(subscriber) }
    },

    /** A notification of CHAT_CHANGES_CHANNEL. */
    publish (payload: string): void {
      const change = changeOf(payload)
      if (change === null) return
      for (const subscriber of byNumber.get(change.phoneNumberId) ?? []) subscriber.deliver(change)
    },

    /** The listener (re)connected: what was announced meanwhile is lost, so every stream reads everything again. */
    missed (): void {
      for (const subscribers of byNumber.values()) for (const subscriber of subscribers) subscriber.deliver(null)
    },

    /** The user was deleted or their role or password changed: their streams end, and reconnect with a token that must still hold. */
    endUser (userId: string): void {
      endAll(byUser.get(userId) ?? [])
    },

    /** The server closes: a stream never ends by itself, and the close waits for every response. */
    close (): void {
      endAll([...byNumber.values()].flatMap((subscribers) => [...subscribers]))
    },

    get size (): number {
      return streams
    }
  }
}

export type ChatChangeFeed = ReturnType<typeof chatChangeFeed>
