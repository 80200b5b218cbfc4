/**
 * Every code a request can fail with. Core names what went wrong; what that
 * means in HTTP is the api's business (one table, apps/api/src/plugins/errors.ts),
 * so the worker, which runs the same code, never sees a status.
 */
export type ErrorCode =
  // Authentication and access
  | 'UNAUTHORIZED' | 'FORBIDDEN' | 'INVALID_CREDENTIALS' | 'TOO_MANY_REQUESTS' | 'LOGIN_BUSY' | 'INVALID_SIGNATURE'
  // Malformed requests
  | 'BAD_REQUEST' | 'VALIDATION_ERROR' | 'INVALID_BODY' | 'BODY_TOO_DEEP' | 'INVALID_TEXT' | 'INVALID_CURSOR'
  // Workflows and runs
  | 'WORKFLOW_NOT_FOUND' | 'WORKFLOW_NOT_ACTIVE' | 'INVALID_WORKFLOW_GRAPH' | 'TOO_MANY_NODES'
  | 'INVALID_CRON_EXPRESSION' | 'INVALID_TIMEZONE' | 'CRON_TOO_FREQUENT' | 'TOO_MANY_LISTENERS'
  | 'RUN_NOT_FOUND' | 'RUN_FINISHED' | 'SCHEDULER_UNAVAILABLE' | 'WORKFLOW_VERSION_NOT_FOUND'
  // Credentials
  | 'CREDENTIAL_NOT_FOUND' | 'CREDENTIAL_EXISTS' | 'CREDENTIAL_IN_USE' | 'INVALID_CREDENTIAL_REFERENCE'
  // Users
  | 'USER_NOT_FOUND' | 'EMAIL_TAKEN'
  // Chat
  | 'CHAT_ACCOUNT_REQUIRED' | 'CHAT_ACCOUNT_NOT_FOUND' | 'CHAT_ACCOUNT_MISSING' | 'CHAT_ACCOUNT_EXISTS'
  | 'CHAT_ACCOUNT_REJECTED' | 'CHAT_ACCOUNT_NO_BUSINESS_ID' | 'CONVERSATION_NOT_FOUND'
  | 'INVALID_PHONE' | 'OUTSIDE_WINDOW' | 'CHAT_PLATFORM_ERROR' | 'CHAT_PLATFORM_UNAVAILABLE'

/**
 * A failure with a stable code. `message` is the client-facing text of the spec
 * or contract, word for word; `details` travels in the error body as is.
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
