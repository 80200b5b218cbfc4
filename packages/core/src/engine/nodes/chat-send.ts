import { Type } from 'typebox'
import { isTransientChatFailure } from '../../chat/platform-errors.ts'
import { NodeError, RetryableNodeError } from '../types.ts'
import { optionalString } from './config.ts'
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

/** The customer fields of the nodes that act on the run's customer's conversation (ask, handoff). */
export const CUSTOMER_FIELDS = {
  phone: Type.Optional(templated(Type.String({ minLength: 1, maxLength: 64, description: 'The customer’s number, in international form; absent: the trigger’s customer (KEYWORD, chat events, assistant tools).' }))),
  accountId: Type.Optional(templated(Type.String({ description: 'The chat account of the conversation; absent: the trigger’s account (the number the customer wrote to), else the owner’s default account.' })))
}

/**
 * The customer a node acts on (README, Conversations): its `phone`, else the trigger's customer
 * (KEYWORD and chat events carry `phone`, an assistant tool's run its `conversation`); its
 * `accountId`, else the trigger's, so that it answers on the number the customer wrote to.
 */
export function customerOf (config: Record<string, unknown>, triggerData: unknown): { phone: string, accountId?: string } {
  const trigger = typeof triggerData === 'object' && triggerData !== null ? triggerData as Record<string, unknown> : {}
  const conversation = typeof trigger.conversation === 'object' && trigger.conversation !== null ? trigger.conversation as Record<string, unknown> : {}
  const triggerPhone = typeof trigger.phone === 'string' ? trigger.phone : typeof conversation.phone === 'string' ? conversation.phone : undefined
  const phone = optionalString(config, 'phone') ?? triggerPhone
  if (phone === undefined || phone === '') throw new NodeError('phone is required: the trigger carries no customer (a KEYWORD or chat event trigger does)')
  const accountId = optionalString(config, 'accountId') ?? (typeof trigger.accountId === 'string' ? trigger.accountId : undefined)
  return { phone, ...(accountId !== undefined && { accountId }) }
}
