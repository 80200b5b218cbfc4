import type { Readable } from 'node:stream'
import { Type } from 'typebox'
import { KIND_LIMITS } from '@switchboard/core/chat'

/** The media's bytes, as the platform holds them, with its Content-Type: a stream, never serialized. */
export const MediaBytes = Type.Unsafe<Readable>(Type.String({ format: 'binary', description: 'The media, streamed from the chat platform; its Content-Type is the platform’s.' }))

/** One emoji, or "" to remove the reaction; core's `checkEmoji` refuses what is not one emoji. */
export const ReactionBody = Type.Object({
  emoji: Type.String({ maxLength: KIND_LIMITS.emoji, errorMessage: 'emoji must be one emoji, or "" to remove the reaction' })
}, { additionalProperties: false })
