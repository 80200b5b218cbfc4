import { Type } from 'typebox'
import { isTransientChatFailure } from '../../chat/platform-errors.ts'
import { RetryableNodeError } from '../types.ts'
import { templated, type NodeTraits } from './definition.ts'

/**
 * A chat node's send: a failure the platform may get over (unreachable, timed out, 5xx, 429,
 * throttling) is retryable, so the node's `retry` applies to it; any other fails the node as it is.
 */
export async function sendRetryably<T> (send: () => Promise<T>): Promise<T> {
  try {
    return await send()
  } catch (err) {
    if (isTransientChatFailure(err)) throw new RetryableNodeError((err as Error).message, { cause: err })
    throw err
  }
}

/**
 * The chat nodes' traits: they record their own checkpoint before they send, and never use
 * credentials (a chat message is stored on its conversation, readable in the inbox).
 */
export const CHAT_TRAITS: NodeTraits = {
  pure: false,
  recordsBeforeEffect: true,
  templateFields: 'every',
  links: [],
  credentials: 'never',
  secretFields: [],
  retries: { allowed: true }
}

/** The fields every chat node has. */
export const CHAT_FIELDS = {
  phone: templated(Type.String({ minLength: 1, maxLength: 64, description: 'The recipient’s number, in international form (+15551234567).' })),
  accountId: Type.Optional(templated(Type.String({ description: 'The chat account to send from; the owner’s default account when absent.' })))
}
