import type { Readable } from 'node:stream'
import { Type } from 'typebox'

/** Server-sent events, never serialized: `event: <kind>` and `data: {conversationId, messageId? | noteId?}` per change. */
export const EventStream = Type.Unsafe<Readable>(Type.String({
  description: 'text/event-stream: conversation.updated {conversationId}, message.created and message.updated {conversationId, messageId}, ' +
    'note.created {conversationId, noteId}, ' +
    'resync {} (changes may have been missed: read everything again), and a comment line every 20 s'
}))
