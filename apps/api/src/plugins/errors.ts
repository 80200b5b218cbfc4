import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import fp from 'fastify-plugin'
import { DomainError, isStoreUnavailable, serviceUnavailable, unauthorized, type ErrorCode } from '@switchboard/core/errors'

const STATUS_TEXT: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS'
}

/** `/nodes/0/id` → `nodes[0].id`, the way a client names a field. */
function fieldName (path: string): string {
  return path.split('/').filter(Boolean)
    .map((part, i) => /^\d+$/.test(part) ? `[${part}]` : (i === 0 ? part : `.${part}`))
    .join('')
}

/**
 * Validation errors read like the API's other messages (README, Workflows): `name is required`,
 * `domain must be one of GENERAL, ...`. A schema may carry `errorMessage` to
 * replace the generic text for any failure of that field.
 */
export function formatValidationError (errors: FastifySchemaValidationError[], dataVar: string): Error {
  const [first] = errors
  const params = (first?.params ?? {}) as Record<string, unknown>
  const parentSchema = (first as { parentSchema?: { errorMessage?: string } } | undefined)?.parentSchema
  let field = fieldName(first?.instancePath ?? '')
  let message: string
  if (first?.keyword === 'required') {
    field = [field, String(params.missingProperty)].filter(Boolean).join('.')
    message = `${field} is required`
  } else if (parentSchema?.errorMessage !== undefined) {
    message = parentSchema.errorMessage
  } else if (first?.keyword === 'enum') {
    message = `${field || dataVar} must be one of ${(params.allowedValues as unknown[]).join(', ')}`
  } else {
    message = `${field || dataVar} ${first?.message ?? 'is invalid'}`
  }
  return new DomainError('VALIDATION_ERROR', message)
}

interface DatabaseError { code?: string, constraint_name?: string }

/**
 * Database refusals that are the request's fault, not the server's: Postgres
 * text and jsonb cannot hold NUL (U+0000), and a foreign key to `users` fails
 * when a still-valid token belongs to a user who has been deleted.
 */
function requestFaultOf (error: unknown): DomainError | undefined {
  const { code, constraint_name: constraint } = ((error as { cause?: DatabaseError }).cause ?? error ?? {}) as DatabaseError
  if (code === '22021' || code === '22P05') return new DomainError('INVALID_TEXT', 'Text must not contain NUL (\\u0000) characters')
  if (code === '23503' && constraint?.endsWith('_user_id_users_id_fk') === true) return unauthorized()
  return undefined
}

/** The one place an error code becomes an HTTP status. */
const HTTP_STATUS: Record<ErrorCode, number> = {
  BAD_REQUEST: 400,
  VALIDATION_ERROR: 400,
  INVALID_BODY: 400,
  BODY_TOO_DEEP: 400,
  INVALID_TEXT: 400,
  INVALID_CURSOR: 400,
  INVALID_WORKFLOW_GRAPH: 400,
  TOO_MANY_NODES: 400,
  INVALID_CRON_EXPRESSION: 400,
  INVALID_TIMEZONE: 400,
  CRON_TOO_FREQUENT: 400,
  INVALID_CREDENTIAL_REFERENCE: 400,
  TOO_MANY_LISTENERS: 400,
  QUOTA_EXCEEDED: 400,
  TOO_MANY_CANNED_REPLIES: 400,
  WORKFLOW_NOT_ACTIVE: 400,
  CHAT_ACCOUNT_REQUIRED: 400,
  CHAT_ACCOUNT_MISSING: 400,
  CHAT_ACCOUNT_REJECTED: 400,
  CHAT_ACCOUNT_NO_BUSINESS_ID: 400,
  CHAT_ACCOUNT_SANDBOX: 400,
  CHAT_ACCOUNT_NOT_SANDBOX: 400,
  INVALID_PHONE: 400,
  OUTSIDE_WINDOW: 400,
  // A send to a contact who opted out (README, Contacts and consent): the request, not the service, is at fault.
  CONTACT_OPTED_OUT: 400,
  // Not 401: the token is good, and a client signs out on 401 (README, Authentication).
  INVALID_CURRENT_PASSWORD: 400,
  UNAUTHORIZED: 401,
  INVALID_CREDENTIALS: 401,
  INVALID_SIGNATURE: 401,
  FORBIDDEN: 403,
  CREDENTIAL_OWNER_ONLY: 403,
  WORKFLOW_NOT_FOUND: 404,
  RUN_NOT_FOUND: 404,
  RESUME_TOKEN_NOT_FOUND: 404,
  USER_NOT_FOUND: 404,
  CHAT_ACCOUNT_NOT_FOUND: 404,
  CONVERSATION_NOT_FOUND: 404,
  CONTACT_NOT_FOUND: 404,
  CANNED_REPLY_NOT_FOUND: 404,
  MESSAGE_NOT_FOUND: 404,
  MESSAGE_NOT_ON_PLATFORM: 409,
  NO_CUSTOMER_MESSAGE: 409,
  MEDIA_NOT_FOUND: 404,
  TEMPLATE_NOT_FOUND: 404,
  DRAFT_NOT_FOUND: 404,
  DRAFT_NOT_PENDING: 409,
  BROADCAST_NOT_FOUND: 404,
  API_KEY_NOT_FOUND: 404,
  BROADCAST_STATE: 409,
  WORKFLOW_VERSION_NOT_FOUND: 404,
  CREDENTIAL_NOT_FOUND: 404,
  SUBSCRIPTION_NOT_FOUND: 404,
  DELIVERY_NOT_FOUND: 404,
  KNOWLEDGE_SOURCE_NOT_FOUND: 404,
  DELIVERY_PENDING: 409,
  // A rename that would leave references inside code pointing at the old id, until confirmed with `force`.
  NODE_REFERENCES_UNREWRITABLE: 409,
  RUN_FINISHED: 409,
  RUN_NOT_FINISHED: 409,
  RUN_NOT_WAITING: 409,
  EMAIL_TAKEN: 409,
  LAST_ADMIN: 409,
  CHAT_ACCOUNT_EXISTS: 409,
  CANNED_REPLY_EXISTS: 409,
  CREDENTIAL_EXISTS: 409,
  CREDENTIAL_IN_USE: 409,
  TOO_MANY_REQUESTS: 429,
  LOGIN_BUSY: 429,
  TOO_MANY_RUNS: 429,
  // An event stream beyond its user's or its server's bound (README, The team inbox).
  TOO_MANY_EVENT_STREAMS: 429,
  // The platform's refusal is relayed with its details (README, Chat).
  CHAT_PLATFORM_ERROR: 500,
  CHAT_PLATFORM_UNAVAILABLE: 502,
  // A media download's bounds (README, Chat: media): what the platform holds is too large, or did not come in time.
  CHAT_MEDIA_TOO_LARGE: 502,
  CHAT_MEDIA_TIMEOUT: 504,
  SCHEDULER_UNAVAILABLE: 503,
  SERVICE_UNAVAILABLE: 503
}

/** What a 503 tells the caller to wait: about the time a store takes to be reconnected. */
const RETRY_AFTER_SECONDS = 5

const errorBody = (statusCode: number, code: string, message: string) => ({ statusCode, code, error: message, message })

/**
 * Fastify's `frameworkErrors`: a URL the router cannot decode (`%zz`, the UTF-8 of
 * a lone surrogate) is refused before any route or hook runs, so the error
 * handler never sees it; Fastify's own body would carry its FST_ code.
 */
export function answerFrameworkError (error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const statusCode = error.statusCode !== undefined && error.statusCode < 500 ? error.statusCode : 400
  const message = error.code === 'FST_ERR_BAD_URL' ? 'URL is not valid: malformed percent-encoding' : 'URL is not valid'
  reply.code(statusCode).send(errorBody(statusCode, 'INVALID_URL', message))
}

const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'REQUEST_TIMEOUT', 'Request timeout'],
  HPE_HEADER_OVERFLOW: [431, 'HEADERS_TOO_LARGE', 'Request headers too large']
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses (a NUL or a
 * bare CR in a header, oversized headers, a broken request line) never becomes
 * a request. Fastify's default answer lacks `code`; this one is the API's (README, Conventions).
 */
export function answerClientError (error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const [statusCode, code, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'BAD_REQUEST', 'Malformed HTTP request']
  const body = JSON.stringify(errorBody(statusCode, code, message))
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  }
  socket.destroy(error)
}

async function errors (fastify: FastifyInstance): Promise<void> {
  fastify.setErrorHandler((caught: FastifyError | DomainError, request, reply) => {
    // Postgres or Redis down or too slow is not the server's bug: 503, and the caller retries
    // (unless the route chose the status, as the inbound webhook's 500: README, Runs).
    const unavailable = !(caught instanceof DomainError) && caught.statusCode === undefined && isStoreUnavailable(caught)
    const error = requestFaultOf(caught) ?? (unavailable ? serviceUnavailable(caught) : caught)
    if (error instanceof DomainError) {
      const statusCode = HTTP_STATUS[error.code]
      if (statusCode >= 500) request.log.warn({ err: error }, 'request failed upstream')
      if (statusCode === 503) reply.header('retry-after', RETRY_AFTER_SECONDS)
      const { code, message, details } = error
      return reply.code(statusCode).send({ statusCode, code, error: message, message, ...(details && { details }) })
    }
    const statusCode = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500
    if (statusCode >= 500) {
      // Never leak internals; the status tells the caller to retry.
      request.log.error({ err: error }, 'request failed')
      return reply.code(statusCode).send({
        statusCode,
        code: 'INTERNAL_SERVER_ERROR',
        error: 'Internal Server Error',
        message: 'Internal Server Error'
      })
    }
    const code = STATUS_TEXT[statusCode] ?? 'ERROR'
    return reply.code(statusCode).send({ statusCode, code, error: error.message, message: error.message })
  })

  fastify.setNotFoundHandler((request, reply) => {
    return reply.code(404).send(errorBody(404, 'NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`))
  })
}

export default fp(errors, { name: 'errors' })
