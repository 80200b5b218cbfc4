/**
 * Every code a request can fail with. Core names what went wrong; what that
 * means in HTTP is the api's business (one table, apps/api/src/plugins/errors.ts),
 * so the worker, which runs the same code, never sees a status.
 */
export type ErrorCode =
  // Authentication and access
  | 'UNAUTHORIZED' | 'FORBIDDEN' | 'INVALID_CREDENTIALS' | 'INVALID_CURRENT_PASSWORD' | 'TOO_MANY_REQUESTS' | 'LOGIN_BUSY' | 'INVALID_SIGNATURE'
  // Malformed requests
  | 'BAD_REQUEST' | 'VALIDATION_ERROR' | 'INVALID_BODY' | 'BODY_TOO_DEEP' | 'INVALID_TEXT' | 'INVALID_CURSOR'
  // Workflows and runs
  | 'WORKFLOW_NOT_FOUND' | 'WORKFLOW_NOT_ACTIVE' | 'INVALID_WORKFLOW_GRAPH' | 'TOO_MANY_NODES'
  | 'INVALID_CRON_EXPRESSION' | 'INVALID_TIMEZONE' | 'CRON_TOO_FREQUENT' | 'TOO_MANY_LISTENERS'
  | 'RUN_NOT_FOUND' | 'RUN_FINISHED' | 'RUN_NOT_FINISHED' | 'RUN_NOT_WAITING' | 'RESUME_TOKEN_NOT_FOUND' | 'SCHEDULER_UNAVAILABLE' | 'WORKFLOW_VERSION_NOT_FOUND'
  | 'NODE_REFERENCES_UNREWRITABLE'
  // Postgres or Redis did not answer in time: nothing was done, a retry may succeed
  | 'SERVICE_UNAVAILABLE'
  // Credentials
  | 'CREDENTIAL_NOT_FOUND' | 'CREDENTIAL_EXISTS' | 'CREDENTIAL_IN_USE' | 'INVALID_CREDENTIAL_REFERENCE' | 'CREDENTIAL_OWNER_ONLY'
  // Users
  | 'USER_NOT_FOUND' | 'EMAIL_TAKEN' | 'LAST_ADMIN' | 'API_KEY_NOT_FOUND'
  // Per-user quotas: a saved thing beyond its count (400), runs started beyond their rate (429)
  | 'QUOTA_EXCEEDED' | 'TOO_MANY_RUNS'
  // Chat
  | 'CHAT_ACCOUNT_REQUIRED' | 'CHAT_ACCOUNT_NOT_FOUND' | 'CHAT_ACCOUNT_MISSING' | 'CHAT_ACCOUNT_EXISTS'
  | 'CHAT_ACCOUNT_REJECTED' | 'CHAT_ACCOUNT_NO_BUSINESS_ID' | 'CHAT_ACCOUNT_SANDBOX' | 'CHAT_ACCOUNT_NOT_SANDBOX' | 'CONVERSATION_NOT_FOUND' | 'DRAFT_NOT_FOUND' | 'DRAFT_NOT_PENDING' | 'BROADCAST_NOT_FOUND' | 'BROADCAST_STATE'
  | 'CONTACT_NOT_FOUND' | 'CONTACT_OPTED_OUT'
  | 'CANNED_REPLY_NOT_FOUND' | 'CANNED_REPLY_EXISTS' | 'TOO_MANY_CANNED_REPLIES' | 'TOO_MANY_EVENT_STREAMS'
  | 'INVALID_PHONE' | 'OUTSIDE_WINDOW' | 'CHAT_PLATFORM_ERROR' | 'CHAT_PLATFORM_UNAVAILABLE'
  | 'MESSAGE_NOT_FOUND' | 'MESSAGE_NOT_ON_PLATFORM' | 'NO_CUSTOMER_MESSAGE' | 'MEDIA_NOT_FOUND' | 'CHAT_MEDIA_TOO_LARGE' | 'CHAT_MEDIA_TIMEOUT' | 'TEMPLATE_NOT_FOUND'
  // Event subscriptions
  | 'SUBSCRIPTION_NOT_FOUND' | 'DELIVERY_NOT_FOUND' | 'DELIVERY_PENDING'
  // Knowledge
  | 'KNOWLEDGE_SOURCE_NOT_FOUND'

/**
 * A failure with a stable code. `message` is the client-facing text, kept word for word
 * (clients and the README quote it); `details` travels in the error body as is.
 */
export class DomainError extends Error {
  override name = 'DomainError'
  readonly code: ErrorCode
  readonly details?: Record<string, unknown>

  constructor (code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message)
    this.code = code
    this.details = details
  }
}

export const unauthorized = (): DomainError => new DomainError('UNAUTHORIZED', 'Unauthorized')
export const forbidden = (): DomainError => new DomainError('FORBIDDEN', 'Forbidden')

/** The answer to a request its stores could not serve in time: nothing was done, a retry may succeed. */
export const serviceUnavailable = (cause?: unknown): DomainError =>
  Object.assign(new DomainError('SERVICE_UNAVAILABLE', 'Service unavailable, retry later'), { cause })

/** postgres.js's own codes for a connection that failed, closed or did not open in time. */
const CONNECTION_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT'])
/** Socket errors of a store that is down or unreachable. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])
/**
 * SQLSTATEs of a server that is unavailable or gave up on time: class 08 (connection
 * exception), 57P01-57P03 (shutting down, crashed, not accepting connections yet), 57014
 * (statement_timeout), 25P03 (idle_in_transaction_session_timeout), 53300 (too many connections).
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57014', '25P03', '53300'])
/** ioredis refusing a command while its connection is down (offline queue off, retries spent, closed). */
const REDIS_UNAVAILABLE = /^(Stream isn't writeable|Connection is closed|Reached the max retries per request limit)/

function isUnavailableCause (error: Error & { code?: unknown }): boolean {
  if (error.name === 'TimeoutError' || error.name === 'MaxRetriesPerRequestError') return true
  const code = typeof error.code === 'string' ? error.code : ''
  return CONNECTION_CODES.has(code) || SOCKET_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) ||
    ('severity' in error && code.startsWith('08')) || REDIS_UNAVAILABLE.test(error.message)
}

/**
 * Whether `error` (or one of its causes: Drizzle wraps the driver's error) says that Postgres
 * or Redis was down, unreachable or too slow, rather than that the request or the code was wrong.
 */
export function isStoreUnavailable (error: unknown): boolean {
  let current = error
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    if (current instanceof DomainError) return current.code === 'SERVICE_UNAVAILABLE' || current.code === 'SCHEDULER_UNAVAILABLE'
    if (current instanceof Error && isUnavailableCause(current)) return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}
