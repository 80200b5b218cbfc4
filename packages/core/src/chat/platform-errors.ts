import { DomainError } from '../errors.ts'
import { ChatPlatformError, ChatPlatformUnavailableError } from './client.ts'

/** Spec section 7: the message a client sees for each platform error code; others keep the platform's own. */
const PLATFORM_ERROR_MESSAGES: Record<number, string> = {
  132001: 'Template name does not exist',
  132000: 'Number of parameters mismatch',
  190: 'Invalid OAuth access token',
  131030: 'Recipient phone number not in allowed list'
}

/** What the platform said, relayed as the error body's `details` (contract, Chat). */
export const platformDetails = (err: ChatPlatformError): Record<string, unknown> => ({
  code: err.code,
  subcode: err.subcode ?? null,
  fbtraceId: err.fbtraceId ?? null,
  platformMessage: err.message
})

/** Platform failures become the contract's errors: the spec's message and the platform's details, or unreachable. */
export function platformFailure (err: unknown): unknown {
  if (err instanceof ChatPlatformError) {
    return new DomainError('CHAT_PLATFORM_ERROR', PLATFORM_ERROR_MESSAGES[err.code] ?? err.message, platformDetails(err))
  }
  if (err instanceof ChatPlatformUnavailableError) {
    return new DomainError('CHAT_PLATFORM_UNAVAILABLE', 'Chat platform unavailable')
  }
  return err
}
