import { isTransientChatFailure } from '../../chat/platform-errors.ts'
import { RetryableNodeError } from '../types.ts'

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
