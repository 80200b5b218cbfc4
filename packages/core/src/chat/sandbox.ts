import { randomInt } from 'node:crypto'
import { createId } from '@paralleldrive/cuid2'
import { storableJson } from '../db/storable.ts'
import { encryptSecret, type Keyring } from '../encryption.ts'
import type { NewChatAccount } from './accounts-repository.ts'
import type { MediaKind } from './client.ts'
import { isPlatformUserId } from './phone.ts'

/**
 * Sandbox numbers (README, Sandbox numbers): an account with no platform behind it. Its sends are
 * stored as delivered without a call (sending.ts), and a customer is played by building the
 * delivery the platform's webhook would post, processed like a real one (inbound.ts).
 */

/** The start of a sandbox number's phone_number_id: the platform's ids are digits, so no real number has it. */
const SANDBOX_NUMBER_PREFIX = 'sandbox-'
/** The start of the id of a delivery the sandbox stored: only the api generates delivery ids, so a webhook caller cannot forge it. */
const SANDBOX_DELIVERY_PREFIX = 'sandbox-'

/** Whether the stored delivery `deliveryId` was played through a sandbox number (its messages may reach only sandbox numbers). */
export const isSandboxDelivery = (deliveryId: string): boolean => deliveryId.startsWith(SANDBOX_DELIVERY_PREFIX)

export const sandboxDeliveryId = (): string => `${SANDBOX_DELIVERY_PREFIX}${createId()}`

/** The wamid of a message to or from a sandbox number: the platform never sees it, so it never names one. */
export const sandboxWamid = (): string => `wamid.${SANDBOX_NUMBER_PREFIX}${createId()}`

/**
 * A new sandbox account's row: a phone_number_id of its own, so its inbox, contacts and assistant are its
 * own; a display number in the range kept for fiction (555-0100 to 555-0199); an empty token, never used.
 */
export function newSandboxAccount (keyring: Keyring, name: string): NewChatAccount {
  return {
    name,
    phoneNumberId: `${SANDBOX_NUMBER_PREFIX}${createId()}`,
    displayPhoneNumber: `+1 555 01${String(randomInt(100)).padStart(2, '0')}`,
    accessTokenEncrypted: encryptSecret(keyring, ''),
    isSandbox: true
  }
}

/** What the customer sends: exactly one of text, a tap on a button or list row, or a media (without content). */
export type SandboxInbound = {
  /** A phone, or a platform user id: a customer whose phone the platform withholds (README, Customers known by username). */
  from: string
  name?: string
  username?: string
} & (
  | { text: string }
  | { interactive: { type: 'button_reply' | 'list_reply', id: string, title: string, description?: string } }
  | { media: { kind: MediaKind, mimeType?: string, caption?: string, filename?: string } }
)

/** The message part of the delivery, as the platform writes each type. */
function platformMessage (inbound: SandboxInbound): Record<string, unknown> {
  if ('text' in inbound) return { type: 'text', text: { body: inbound.text } }
  if ('interactive' in inbound) {
    const { type, ...reply } = inbound.interactive
    return { type: 'interactive', interactive: { type, [type]: reply } }
  }
  const { kind, mimeType, caption, filename } = inbound.media
  return {
    type: kind,
    [kind]: {
      id: `${SANDBOX_NUMBER_PREFIX}media-${createId()}`,
      mime_type: mimeType ?? 'application/octet-stream',
      ...(caption !== undefined && { caption }),
      ...(filename !== undefined && { filename })
    }
  }
}

/**
 * The platform's webhook delivery of one customer message to the sandbox number `phoneNumberId`, and the
 * message's wamid. The platform's metadata also names the number as displayed; nothing of ours reads it.
 * What Postgres cannot hold (NUL, unpaired surrogates) becomes U+FFFD, as in the webhook's deliveries.
 */
export function sandboxDelivery (phoneNumberId: string, inbound: SandboxInbound): { payload: Record<string, unknown>, wamid: string } {
  const wamid = sandboxWamid()
  const byUser = isPlatformUserId(inbound.from)
  const sender = byUser ? { user_id: inbound.from } : { wa_id: inbound.from }
  const messageSender = byUser ? { from_user_id: inbound.from } : { from: inbound.from }
  const payload = {
    object: 'whatsapp_business_account',
    entry: [{
      id: phoneNumberId,
      changes: [{
        field: 'messages',
        value: {
          messaging_product: 'whatsapp',
          metadata: { phone_number_id: phoneNumberId },
          ...((inbound.name !== undefined || inbound.username !== undefined) && {
            contacts: [{ profile: { ...(inbound.name !== undefined && { name: inbound.name }), ...(inbound.username !== undefined && { username: inbound.username }) }, ...sender }]
          }),
          messages: [{ ...messageSender, id: wamid, timestamp: String(Math.floor(Date.now() / 1000)), ...platformMessage(inbound) }]
        }
      }]
    }]
  }
  return { payload: JSON.parse(storableJson(payload)) as Record<string, unknown>, wamid }
}
