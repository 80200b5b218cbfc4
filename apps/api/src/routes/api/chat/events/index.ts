import { PassThrough } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Gauge } from 'prom-client'
import type { ChatChange } from '@switchboard/core/chat'
import { credentialEndsAt } from '../../../../plugins/auth.ts'
import { errorResponses } from '../../../../schemas/common.ts'
import { EventStream } from './schemas.ts'

/** A comment this often keeps a quiet stream open through proxies and the server's own idle time-out (60 s). */
const HEARTBEAT_MS = 20_000
/** A stream ends after this, or when its token or API key expires if sooner: the client reconnects, and its credential and account are checked again. */
const MAX_AGE_MS = 10 * 60_000
/** What a stream may hold unsent: a client that reads slower is dropped (it reconnects and reads everything again), never buffered for. */
const MAX_UNSENT_BYTES = 64 * 1024

const frame = (change: ChatChange | null): string => change === null
  ? 'event: resync\ndata: {}\n\n'
  : `event: ${change.kind}\ndata: ${JSON.stringify({
    conversationId: change.conversationId,
    ...(change.messageId !== undefined && { messageId: change.messageId }),
    ...(change.noteId !== undefined && { noteId: change.noteId })
  })}\n\n`

/**
 * The selected account's inbox, live (README, The team inbox): ids of what changed, whoever changed
 * it, for the client to read through the API. Read with fetch, so that the Authorization header is
 * sent (an EventSource cannot send it). No replay: a client that reconnects reads everything again.
 */
const events: FastifyPluginAsyncTypebox = async (fastify) => {
  const feed = fastify.chatChanges
  // eslint-disable-next-line no-new -- registered: the scrape reads it.
  new Gauge({ name: 'switchboard_chat_event_streams', help: 'Inbox event streams open on this api process', registers: [fastify.metricsRegistry], collect () { this.set(feed.size) } })

  fastify.get('', {
    schema: { tags: ['chat'], response: { 200: { description: 'The event stream', content: { 'text/event-stream': { schema: EventStream } } }, ...errorResponses(400, 401, 404, 429) } }
  }, async (request, reply) => {
    const account = await fastify.chatAccountFor(request)
    const stream = new PassThrough()
    const write = (text: string): void => {
      if (stream.writableEnded || stream.destroyed) return
      if (stream.writableLength + stream.readableLength > MAX_UNSENT_BYTES) stream.destroy()
      else stream.write(text)
    }
    const unsubscribe = feed.subscribe({
      userId: request.user.sub,
      phoneNumberId: account.phoneNumberId,
      deliver: (change) => { write(frame(change)) },
      end: () => { stream.end() }
    })
    const heartbeat = setInterval(() => { write(': keep-alive\n\n') }, HEARTBEAT_MS)
    const expiry = setTimeout(() => { stream.end() }, Math.min(MAX_AGE_MS, credentialEndsAt(request) - Date.now()))
    stream.on('close', () => {
      unsubscribe()
      clearInterval(heartbeat)
      clearTimeout(expiry)
    })
    // The first bytes send the headers: the client's fetch resolves once the stream is subscribed.
    write(': connected\n\n')
    reply.headers({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' })
    return reply.send(stream)
  })
}

export default events
