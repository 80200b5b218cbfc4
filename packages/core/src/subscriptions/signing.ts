import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

/**
 * Standard Webhooks signing (README, Event subscriptions): the secret is `whsec_` and base64 of
 * its key bytes; each attempt is signed over `<webhook-id>.<webhook-timestamp>.<body>` with
 * HMAC-SHA256 by the `standardwebhooks` package, the one a subscriber verifies with.
 */
const SECRET_PREFIX = 'whsec_'
/** The key bytes a secret may carry: at least 24 (192 bits), at most 64 (an HMAC-SHA256 block). */
const MIN_KEY_BYTES = 24
const MAX_KEY_BYTES = 64
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** A new secret: 32 random bytes. */
export const generateSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`

/** Why `secret` is not a Standard Webhooks secret this service signs with, or undefined when it is. */
export function secretProblem (secret: string): string | undefined {
  const problem = `secret must be "${SECRET_PREFIX}" followed by the base64 of ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} bytes`
  if (!secret.startsWith(SECRET_PREFIX)) return problem
  const encoded = secret.slice(SECRET_PREFIX.length)
  if (!BASE64.test(encoded)) return problem
  const bytes = Buffer.from(encoded, 'base64').length
  return bytes < MIN_KEY_BYTES || bytes > MAX_KEY_BYTES ? problem : undefined
}

/** The headers of one attempt: the delivery's id (stable across attempts and replays), now, and the signature. */
export function signedHeaders (secret: string, deliveryId: string, body: string, at: Date = new Date()): Record<string, string> {
  return {
    'webhook-id': deliveryId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(deliveryId, at, body)
  }
}

/** The body of every attempt (the Standard Webhooks payload structure): the event's name, when it happened, its payload. */
export const deliveryBody = (eventName: string, occurredAt: Date, payload: unknown): string =>
  JSON.stringify({ type: eventName, timestamp: occurredAt.toISOString(), data: payload })
