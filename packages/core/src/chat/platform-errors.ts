import { DomainError } from '../errors.ts'
import { ChatPlatformError, ChatPlatformUnavailableError } from './client.ts'

/** The message a client sees for each of these platform error codes (README, Chat); others keep the platform's own. */
const PLATFORM_ERROR_MESSAGES: Record<number, string> = {
  132001: 'Template name does not exist',
  132000: 'Number of parameters mismatch',
  190: 'Invalid OAuth access token',
  131030: 'Recipient phone number not in allowed list'
}

/** What the platform said, relayed as the error body's `details` (README, Chat). */
export const platformDetails = (err: ChatPlatformError): Record<string, unknown> => ({
  code: err.code,
  subcode: err.subcode ?? null,
  fbtraceId: err.fbtraceId ?? null,
  platformMessage: err.message,
  // The Graph API's words for a person, when it gives them: a template's refusal says why only there.
  ...(err.userTitle !== undefined && { platformUserTitle: err.userTitle }),
  ...(err.userMessage !== undefined && { platformUserMessage: err.userMessage })
})

/**
 * Platform failures become the API's errors (README, Chat): our message and the platform's details,
 * or unreachable. The platform's error stays their cause (`isTransientChatFailure` reads it).
 */
export function platformFailure (err: unknown): unknown {
  if (err instanceof ChatPlatformError) {
    return Object.assign(new DomainError('CHAT_PLATFORM_ERROR', PLATFORM_ERROR_MESSAGES[err.code] ?? err.message, platformDetails(err)), { cause: err })
  }
  if (err instanceof ChatPlatformUnavailableError) {
    return Object.assign(new DomainError('CHAT_PLATFORM_UNAVAILABLE', 'Chat platform unavailable'), { cause: err })
  }
  return err
}

/**
 * Platform error codes that say "not now" rather than "no": 2 (service temporarily
 * unavailable), 4 (application request limit), 80007 (account rate limit), 130429 (throughput),
 * 131016 (service unavailable), 131056 (too many messages to one recipient).
 */
const TEMPORARY_PLATFORM_CODES: ReadonlySet<number> = new Set([2, 4, 80007, 130429, 131016, 131056])

/** A status that says the platform did not take the request now, and may later. */
const isTemporaryStatus = (status: number): boolean => status >= 500 || status === 429

/**
 * Whether a send failed in a way another attempt may not (unreachable, timed out, a 5xx or 429
 * answer, a throttling code): what a workflow's chat node retries. A window, account, template or
 * recipient refusal is final; so is an answer that is not the API's under another status (200
 * with a body that is not JSON: the message may have been sent).
 */
export function isTransientChatFailure (err: unknown): boolean {
  if (!(err instanceof DomainError)) return false
  const cause = err.cause
  if (cause instanceof ChatPlatformUnavailableError) return cause.httpStatus === undefined || isTemporaryStatus(cause.httpStatus)
  if (cause instanceof ChatPlatformError) return isTemporaryStatus(cause.httpStatus) || TEMPORARY_PLATFORM_CODES.has(cause.code)
  return false
}
