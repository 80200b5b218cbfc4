const ERROR_BODY_KEYS = new Set(['statusCode', 'code', 'error', 'message', 'details'])

/**
 * What is wrong with an error answer, measured against the API's error body
 * (README, Conventions): `{statusCode, code, error, message}` (plus `details` for relayed
 * chat platform errors), statusCode equal to the HTTP status, `error` and
 * `message` the same text, and a code of ours rather than a framework's (FST_...).
 * Undefined when nothing is.
 */
export function errorBodyProblem (status: number, body: string): string | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return `body is not JSON: ${body.slice(0, 200)}`
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return `body is not an object: ${body.slice(0, 200)}`
  const fields = parsed as Record<string, unknown>
  const extra = Object.keys(fields).filter((key) => !ERROR_BODY_KEYS.has(key))
  if (extra.length > 0) return `unexpected fields ${extra.join(', ')}`
  if (fields.statusCode !== status) return `statusCode ${String(fields.statusCode)} differs from the HTTP status ${status}`
  if (typeof fields.code !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(fields.code)) return `code ${JSON.stringify(fields.code)} is not an UPPER_SNAKE code`
  if (fields.code.startsWith('FST_')) return `code ${fields.code} is Fastify's, not ours`
  if (typeof fields.message !== 'string' || fields.message === '') return 'message is missing'
  if (fields.error !== fields.message) return `error ${JSON.stringify(fields.error)} differs from message ${JSON.stringify(fields.message)}`
  return undefined
}

/**
 * The one kind of 5xx the API gives to a well-formed request: a chat
 * platform refusal relayed as 500 with the platform's code in `details`, or
 * 502 when the platform cannot be reached (README, Chat).
 */
export function isRelayedPlatformError (status: number, body: string): boolean {
  if (status !== 500 && status !== 502) return false
  try {
    const parsed = JSON.parse(body) as { code?: unknown, details?: { code?: unknown } }
    return status === 502
      ? parsed.code === 'CHAT_PLATFORM_UNAVAILABLE'
      : parsed.code === 'CHAT_PLATFORM_ERROR' && typeof parsed.details?.code === 'number'
  } catch {
    return false
  }
}
