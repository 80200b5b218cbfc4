import { DomainError } from '../errors.ts'

/** The customer service window (README, Chat): free-form messages only within 24 hours of the customer's last message. */
export const WINDOW_MS = 24 * 3600 * 1000

/** Refuses a free-form message outside the window: only a template may reopen the conversation. */
export function assertInsideWindow (lastIncomingAt: Date | null, now = Date.now()): void {
  if (lastIncomingAt === null || now - lastIncomingAt.getTime() > WINDOW_MS) {
    throw new DomainError('OUTSIDE_WINDOW', 'Outside the 24-hour window: send a template')
  }
}
