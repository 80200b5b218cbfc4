import { Type } from 'typebox'
import { isTransientChatFailure } from '../../chat/platform-errors.ts'
import { NodeError, RetryableNodeError } from '../types.ts'
import { optionalString } from './config.ts'
import { templated, type NodeTraits } from './definition.ts'
import type { Recipient } from '../../chat/sender.ts'

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

const CONTACT_ID = templated(Type.String({ minLength: 1, maxLength: 64, description: 'A contact of the account’s number instead of phone: its phone, else its platform user id (a customer known by username).' }))

/** The fields every chat node has: `phone` or `contactId` (README, Customers known by username). */
export const CHAT_FIELDS = {
  phone: Type.Optional(templated(Type.String({ minLength: 1, maxLength: 140, description: 'The recipient’s number, in international form (+15551234567), or their platform user id; or give contactId.' }))),
  contactId: Type.Optional(CONTACT_ID),
  accountId: Type.Optional(templated(Type.String({ description: 'The chat account to send from; the owner’s default account when absent.' })))
}

/** The customer fields of the nodes that act on the run's customer's conversation (ask, handoff). */
export const CUSTOMER_FIELDS = {
  phone: Type.Optional(templated(Type.String({ minLength: 1, maxLength: 140, description: 'The customer’s number, in international form, or their platform user id; absent with contactId: the trigger’s customer (KEYWORD, chat events, assistant tools).' }))),
  contactId: Type.Optional(CONTACT_ID),
  accountId: Type.Optional(templated(Type.String({ description: 'The chat account of the conversation; absent: the trigger’s account (the number the customer wrote to), else the owner’s default account.' })))
}

/** The save-time rule of a recipient: `phone` or `contactId`, not both; `required`: one of them (a send's). */
export function checkRecipient (config: Record<string, unknown>, required: boolean): void {
  const given = ['phone', 'contactId'].filter((field) => config[field] !== undefined && config[field] !== null && config[field] !== '')
  if (given.length > 1) throw new Error('phone and contactId: give one of them, not both')
  if (required && given.length === 0) throw new Error('phone is required (or contactId)')
}

/** A send node's recipient: its `phone` or its `contactId`, checked again once rendered. */
export function recipientOf (config: Record<string, unknown>): Recipient {
  const phone = optionalString(config, 'phone')
  const contactId = optionalString(config, 'contactId')
  if (phone !== undefined && contactId !== undefined) throw new NodeError('phone and contactId: give one of them, not both')
  if (contactId !== undefined) return { contactId }
  if (phone === undefined) throw new NodeError('phone is required (or contactId)')
  return { to: phone }
}

/**
 * The customer a node acts on (README, Conversations): its `phone` or `contactId`, else the trigger's
 * customer (KEYWORD and chat events carry `phone`, "" when withheld, `platformUserId` and `contactId`;
 * an assistant tool's run its `conversation`); its `accountId`, else the trigger's, so that it answers
 * on the number the customer wrote to.
 */
export function customerOf (config: Record<string, unknown>, triggerData: unknown): Recipient & { accountId?: string } {
  const trigger = typeof triggerData === 'object' && triggerData !== null ? triggerData as Record<string, unknown> : {}
  const conversation = typeof trigger.conversation === 'object' && trigger.conversation !== null ? trigger.conversation as Record<string, unknown> : {}
  const accountId = optionalString(config, 'accountId') ?? (typeof trigger.accountId === 'string' ? trigger.accountId : undefined)
  const account = accountId !== undefined ? { accountId } : {}
  if (optionalString(config, 'phone') !== undefined || optionalString(config, 'contactId') !== undefined) return { ...recipientOf(config), ...account }
  const text = (value: unknown): string | undefined => typeof value === 'string' && value !== '' ? value : undefined
  const to = text(trigger.phone) ?? text(trigger.platformUserId) ?? text(conversation.phone) ?? text(conversation.platformUserId)
  if (to !== undefined) return { to, ...account }
  const contactId = text(trigger.contactId)
  if (contactId !== undefined) return { contactId, ...account }
  throw new NodeError('phone is required: the trigger carries no customer (a KEYWORD or chat event trigger does)')
}
