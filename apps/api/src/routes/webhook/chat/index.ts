import { createHmac, timingSafeEqual } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { storableText } from '@switchboard/core/db'
import { DomainError } from '@switchboard/core/errors'
import { chatInboundDeliveries } from '@switchboard/core/observability'
import { isNestedTooDeeply, nestingTooDeep } from '../../../plugins/json-body.ts'
import { errorResponses } from '../../../schemas/common.ts'
import { acceptDelivery } from './accept.ts'
import { Challenge, Received, VerifyQuery } from './schemas.ts'

const sameText = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * Postgres cannot store U+0000 or unpaired surrogates, in values or in keys, and a
 * delivery refused for them would be retried by the platform for days: they become U+FFFD.
 */
function storableStrings (_key: string, value: unknown): unknown {
  if (typeof value === 'string') return storableText(value)
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value
  const keys = Object.keys(value)
  if (keys.every((key) => storableText(key) === key)) return value
  return Object.fromEntries(Object.entries(value).map(([key, field]) => [storableText(key), field]))
}

/** X-Hub-Signature-256 is `sha256=<hex HMAC of the exact bytes received>`. */
function validSignature (raw: Buffer, header: string | string[] | undefined, appSecret: string): boolean {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false
  const expected = createHmac('sha256', appSecret).update(raw).digest()
  const given = Buffer.from(header.slice('sha256='.length), 'hex')
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/**
 * The chat platform's webhook (README, Inbound messages): the verification handshake,
 * and deliveries stored and queued on assistant-main so that the answer stays
 * fast however large a burst is. Public: the signature is the authentication.
 */
const webhookChat: FastifyPluginAsyncTypebox = async (fastify) => {
  const { appSecret, verifyToken } = fastify.config.chat

  // The signature covers the bytes as sent (the platform escapes non-ASCII as \uXXXX), so the
  // body is kept raw here and parsed after the check. Scoped to this plugin only.
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => { done(null, body) })

  fastify.get('', {
    config: { public: true },
    schema: { tags: ['chat'], security: [], querystring: VerifyQuery, response: { 200: Challenge, ...errorResponses(403) } }
  }, async (request, reply) => {
    const query = request.query
    const challenge = query['hub.challenge']
    if (verifyToken === undefined || query['hub.mode'] !== 'subscribe' || challenge === undefined ||
      !sameText(query['hub.verify_token'] ?? '', verifyToken)) {
      throw new DomainError('FORBIDDEN', 'Forbidden')
    }
    return reply.type('text/plain').send(challenge)
  })

  fastify.post('', {
    config: { public: true },
    schema: { tags: ['chat'], security: [], response: { 200: Received, ...errorResponses(400, 401, 500, 503) } }
  }, async (request) => {
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
    if (appSecret !== undefined && !validSignature(raw, request.headers['x-hub-signature-256'], appSecret)) {
      throw new DomainError('INVALID_SIGNATURE', 'Invalid signature')
    }
    const text = raw.toString('utf8')
    if (isNestedTooDeeply(text)) throw nestingTooDeep()
    let payload: unknown
    try {
      payload = JSON.parse(text, storableStrings)
    } catch {
      throw new DomainError('INVALID_BODY', 'Body must be JSON')
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      throw new DomainError('INVALID_BODY', 'Body must be a JSON object')
    }
    await acceptDelivery(fastify, request, payload)
    chatInboundDeliveries.inc()
    return { status: 'received' as const }
  })
}

export default webhookChat
