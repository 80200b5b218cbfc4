import type { Readable } from 'node:stream'
import { Type } from 'typebox'

/** The media's bytes, as the platform holds them, with its Content-Type: a stream, never serialized. */
export const MediaBytes = Type.Unsafe<Readable>(Type.String({ format: 'binary', description: 'The media, streamed from the chat platform; its Content-Type is the platform’s.' }))
