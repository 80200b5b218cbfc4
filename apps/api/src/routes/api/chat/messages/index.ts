import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { SendResult } from '../send/schemas.ts'
import { MediaBytes, ReactionBody } from './schemas.ts'

/** RFC 6266: the name in ASCII (quotes and controls replaced) and, for any other character, as UTF-8. */
const attachment = (filename: string | undefined): string => filename === undefined
  ? 'attachment'
  : `attachment; filename="${filename.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(filename)}`

/**
 * Messages by id, across the selected account's conversations: a message of another account's
 * conversation is a 404, like a missing one.
 */
const messages: FastifyPluginAsyncTypebox = async (fastify) => {
  /**
   * The media of a message, streamed from the platform and never stored here (README, Chat: media):
   * nothing is written to disk, at most CHAT_MEDIA_MAX_BYTES pass, within CHAT_MEDIA_TIMEOUT_MS.
   */
  fastify.get('/:id/media', {
    schema: { tags: ['chat'], params: IdParams, response: { 200: MediaBytes, ...errorResponses(400, 401, 404, 500, 502, 504) } }
  }, async (request, reply) => {
    const media = await fastify.chatMedia(await fastify.chatAccountFor(request), request.params.id)
    reply.headers({
      'content-type': media.contentType,
      // Customer content from the api's origin: never rendered in place, never kept by a cache.
      'content-disposition': attachment(media.filename),
      'x-content-type-options': 'nosniff',
      'cache-control': 'private, no-store',
      ...(media.contentLength !== undefined && { 'content-length': String(media.contentLength) })
    })
    return reply.send(media.body)
  })

  /**
   * The business's reaction to a message (README, Message kinds): sent to the platform, then kept on the message as
   * `reactions.business`; `emoji` "" removes it. Within the 24-hour window, like any free-form message.
   */
  fastify.post('/:id/reaction', {
    schema: { tags: ['chat'], params: IdParams, body: ReactionBody, response: { 200: SendResult, ...errorResponses(400, 401, 404, 409, 500, 502) } }
  }, async (request) => fastify.chat.sendReaction(await fastify.chatAccountFor(request), {
    messageId: request.params.id, emoji: request.body.emoji, sender: { type: 'user', id: request.user.sub }
  }))
}

export default messages
