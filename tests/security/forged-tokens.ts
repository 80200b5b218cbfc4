import { createHmac } from 'node:crypto'

const encode = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')

/** A JWT signed with HMAC (`hash` sha256 for HS256, sha512 for HS512) whatever `header.alg` claims. */
function hmacToken (header: Record<string, unknown>, payload: Record<string, unknown>, secret: string, hash = 'sha256'): string {
  const signed = `${encode(header)}.${encode(payload)}`
  return `${signed}.${createHmac(hash, secret).update(signed).digest('base64url')}`
}

/**
 * Authorization headers the API must refuse with 401 (README, Signing in: a
 * Bearer token, HS256 only, signed with JWT_SECRET, not expired), built from a
 * real member token so that each differs from an accepted one in one way.
 * Undefined sends no header.
 */
export function forgedAuthorizations (memberToken: string, secret: string): Record<string, string | undefined> {
  const [header, payload, signature] = memberToken.split('.') as [string, string, string]
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>
  const now = Math.floor(Date.now() / 1000)
  const fresh = { ...claims, iat: now, exp: now + 3600 }
  const hs256 = { alg: 'HS256', typ: 'JWT' }
  const bearer = (token: string): string => `Bearer ${token}`
  return {
    missing: undefined,
    empty: '',
    'Bearer without a token': 'Bearer',
    'Basic scheme with a valid token': `Basic ${memberToken}`,
    garbage: bearer('not-a-token'),
    'three garbage parts': bearer('a.b.c'),
    'header part only': bearer(header),
    'signature stripped': bearer(`${header}.${payload}.`),
    expired: bearer(hmacToken(hs256, { ...claims, iat: now - 2 * 86400, exp: now - 86400 }, secret)),
    'signed with another secret': bearer(hmacToken(hs256, fresh, 'another-secret-that-is-at-least-32-characters')),
    'alg none': bearer(`${encode({ alg: 'none', typ: 'JWT' })}.${encode({ ...fresh, role: 'admin' })}.`),
    'role tampered to admin': bearer(`${header}.${encode({ ...claims, role: 'admin' })}.${signature}`),
    'subject tampered': bearer(`${header}.${encode({ ...claims, sub: 'someone-else' })}.${signature}`),
    'HS512 with the real secret': bearer(hmacToken({ alg: 'HS512', typ: 'JWT' }, fresh, secret, 'sha512')),
    'RS256 header, HMAC signature': bearer(hmacToken({ alg: 'RS256', typ: 'JWT' }, fresh, secret)),
    'a NUL after a valid token': bearer(`${memberToken}\u0000`)
  }
}
