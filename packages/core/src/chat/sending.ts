import type { Config } from '../config.ts'
import type { DbOrTx } from '../db/client.ts'
import { DomainError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import { chatErrorCodeLabel, chatSends } from '../observability/metrics.ts'
import { assertMayMessage, contactsRepository, type SendOrigin } from './contacts.ts'
import { conversationsRepository } from './conversations.ts'
import { checkInteractive } from './interactive.ts'
import { checkContacts, checkEmoji, checkLocation, contactsContent, locationContent } from './kinds.ts'
import { checkMediaSend } from './media.ts'
import { isPlatformUserId, normalizeAddress } from './phone.ts'
import { platformDetails, platformFailure } from './platform-errors.ts'
import { sandboxWamid } from './sandbox.ts'
import { checkTemplateComponents } from './template-components.ts'
import { chatTemplatesRepository } from './templates.ts'
import { assertInsideWindow } from './window.ts'
import { chatAccountResolver, type UsableChatAccount } from './accounts.ts'
import type { MessageSender } from '../db/schema/index.ts'
import {
  addressOfMessage, ChatPlatformError, contactsMessage, interactiveMessage, locationMessage, mediaMessage, reactionMessage, templateMessage, textMessage,
  type ChatClient, type SendOptions, type SendResult, type TemplateRecord
} from './client.ts'

const DEFAULT_TEMPLATE_LANGUAGE = 'en_US'

/** The platform's refusal of a template it cannot send: unknown, or not approved in that language (README, Chat). */
const TEMPLATE_DOES_NOT_EXIST = 132001

/** Who sends: what every send request carries. */
interface SenderFields {
  /** What the API's caller says of who sends (the assistant: its name), stored as given for the inbox. */
  agentId?: string
  agentName?: string
  /**
   * Stored with the message. A person's (`user`, the API's sends): the conversation's assistant pauses until its
   * aiMode is set again (README, Inbound messages), and a contact who opted out and wrote again may get it
   * (README, Contacts and consent).
   */
  sender: MessageSender
}

/**
 * Whom a send goes to (README, Customers known by username): `to`, a phone or a platform user id, or
 * `contactId`, a contact of the account's number (its phone when known, else its platform user id). Exactly one.
 */
export interface RecipientFields {
  to?: string
  contactId?: string
}

interface SendTextRequest extends SenderFields, RecipientFields {
  text: string
  /** Our message id or the platform's wamid of the quoted message. */
  replyToId?: string
}

interface SendTemplateRequest extends SenderFields, RecipientFields {
  templateName: string
  lang?: string
  components?: unknown[]
  /** What the template said (body, footer, imageUrl), kept with the message for the inbox. */
  templateContent?: Record<string, unknown>
}

/**
 * An image, document, audio, video or sticker: `kind`, one of `link` and `mediaId`, `caption`,
 * `filename`, checked by `checkMediaSend` (the fields arrive unchecked from a workflow's templates).
 */
interface SendMediaRequest extends SenderFields, RecipientFields {
  media: Record<string, unknown>
}

/** Reply buttons or a list: `type`, `body`, `header`, `footer`, `buttons`, `list`, checked by `checkInteractive`. */
interface SendInteractiveRequest extends SenderFields, RecipientFields {
  interactive: Record<string, unknown>
}

/** A location: `latitude`, `longitude`, `name`, `address`, checked by `checkLocation`. */
interface SendLocationRequest extends SenderFields, RecipientFields {
  location: Record<string, unknown>
}

/** Contact cards in the platform's format, checked by `checkContacts`. */
interface SendContactsRequest extends SenderFields, RecipientFields {
  contacts: unknown
}

/** The business's reaction to a message of the number (our id); `emoji` "" removes it. */
interface SendReactionRequest extends SenderFields {
  messageId: string
  emoji: string
}

interface ChatServiceOptions {
  db: DbOrTx
  config: Config
  client: ChatClient
  logger: Pick<Logger, 'error'>
}

/**
 * The texts of a template send's body parameters, in order, kept with its message: the inbox fills
 * the template's `{{n}}` with them (apps/console/src/template-preview.ts), the platform's list of
 * templates giving the text, so that the thread shows what the customer read.
 */
function bodyParametersOf (components: unknown[] | undefined): string[] | undefined {
  const body = components?.find((component) => String((component as { type?: unknown } | null)?.type).toLowerCase() === 'body') as { parameters?: unknown } | undefined
  if (!Array.isArray(body?.parameters)) return undefined
  return body.parameters.map((parameter) => {
    const text = (parameter as { text?: unknown } | null)?.text
    return typeof text === 'string' ? text : ''
  })
}

/** Who a stored message says sent it: what its request carries. */
const signedBy = ({ agentId, agentName, sender }: SenderFields): SenderFields => ({ agentId, agentName, sender })

/** Where a send leaves its message: a sandbox number's is delivered at once, the platform says so of a real one's later. */
type SentStatus = 'sent' | 'delivered'
const sentStatusOf = (account: UsableChatAccount): SentStatus => account.isSandbox ? 'delivered' : 'sent'

/** A person's send through the API, or the service's own (workflows, the assistant, broadcasts). */
const originOf = (request: { sender: MessageSender }): SendOrigin => request.sender.type === 'user' ? 'staff' : 'automation'

/**
 * Sending through the platform with the customer service window checked
 * first, and every sent message stored on its conversation. The API routes and
 * the engine's chat nodes (through `sender`) share it.
 */
export function createChatService (options: ChatServiceOptions) {
  const { client, logger } = options
  const accounts = chatAccountResolver(options)
  const conversations = conversationsRepository(options.db)
  const contacts = contactsRepository(options.db)
  const templates = chatTemplatesRepository(options)

  /**
   * Every send reaches the platform here, after the opt-out rule (`assertMayMessage`) for who sends it;
   * `consent` is a keyword's own confirmation, sent whatever the contact chose. A sandbox number's
   * never does (README, Sandbox numbers): it answers as the platform would, with a wamid of its own.
   */
  async function callPlatform (account: UsableChatAccount, message: Parameters<ChatClient['sendMessage']>[2], options?: SendOptions, origin: SendOrigin | 'consent' = 'automation'): Promise<SendResult> {
    const address = addressOfMessage(message)
    if (origin !== 'consent') assertMayMessage(await contacts.consentOf(account.phoneNumberId, address), origin, message.type === 'template')
    if (account.isSandbox) {
      return { messaging_product: 'whatsapp', contacts: [{ input: address, ...(isPlatformUserId(address) ? { user_id: address } : { wa_id: address }) }], messages: [{ id: sandboxWamid() }] }
    }
    try {
      const sent = await client.sendMessage(account.phoneNumberId, account.accessToken, message, options)
      chatSends.inc({ outcome: 'sent', error_code: 'none' })
      return sent
    } catch (err) {
      chatSends.inc(err instanceof ChatPlatformError ? { outcome: 'rejected', error_code: chatErrorCodeLabel(err.code) } : { outcome: 'unavailable', error_code: 'none' })
      throw platformFailure(err)
    }
  }

  /** The address a send goes to: its `to`, or its contact's (chat/phone.ts `addressOf`). */
  async function addressFor (account: UsableChatAccount, recipient: RecipientFields): Promise<string> {
    if (recipient.to !== undefined && recipient.contactId !== undefined) throw new DomainError('VALIDATION_ERROR', 'to and contactId: give one of them, not both')
    if (recipient.contactId !== undefined) return await contacts.addressOf(recipient.contactId, account.phoneNumberId)
    if (recipient.to === undefined) throw new DomainError('VALIDATION_ERROR', 'to is required')
    return normalizeAddress(recipient.to)
  }

  type StoredRecord = Omit<Parameters<typeof conversations.recordOutbound>[0], 'phoneNumberId' | 'status'>

  /** The platform accepted the message: failing to store it must not make the caller send it twice. */
  async function store (account: UsableChatAccount, record: StoredRecord): Promise<void> {
    try {
      await conversations.recordOutbound({ ...record, phoneNumberId: account.phoneNumberId, status: sentStatusOf(account) })
    } catch (err) {
      logger.error({ err, wamid: record.wamid }, 'sent chat message could not be stored')
    }
  }

  /**
   * A text to the platform, nothing stored: for a message already stored (an approved draft, a keyword's
   * confirmation), which the caller gives the wamid and the status. The caller checked the window.
   */
  async function deliverText (account: UsableChatAccount, address: string, text: string, options?: SendOptions, origin: SendOrigin | 'consent' = 'automation'): Promise<{ wamid: string | null, status: SentStatus }> {
    const result = await callPlatform(account, textMessage(address, text), options, origin)
    return { wamid: result.messages?.[0]?.id ?? null, status: sentStatusOf(account) }
  }

  /** `options`: a workflow's send (its idempotency key, its signal); never part of an API request's body. */
  async function sendText (account: UsableChatAccount, request: SendTextRequest, options?: SendOptions): Promise<SendResult> {
    const address = await addressFor(account, request)
    const replyToId = request.replyToId
    const context = await conversations.sendContext(account.phoneNumberId, address, replyToId?.startsWith('wamid.') === true ? undefined : replyToId)
    assertInsideWindow(context.lastIncomingAt)
    const replyToWamid = replyToId === undefined ? undefined : (context.replyToWamid ?? replyToId)
    const result = await callPlatform(account, textMessage(address, request.text, replyToWamid), options, originOf(request))
    await store(account, {
      address,
      wamid: result.messages?.[0]?.id ?? null,
      type: 'text',
      content: request.text,
      ...signedBy(request),
      replyToId
    })
    return result
  }

  /**
   * The platform's `Template name does not exist` for a template made here says nothing of why: its stored
   * status (PENDING, REJECTED…) is added as `details.status` (README, Chat: templates).
   */
  async function withStoredStatus (err: unknown, account: UsableChatAccount, name: string, language: string): Promise<unknown> {
    const businessAccountId = account.businessAccountId
    if (!(err instanceof DomainError) || !(err.cause instanceof ChatPlatformError) || err.cause.code !== TEMPLATE_DOES_NOT_EXIST || businessAccountId === null) return err
    const status = await templates.statusOf({ businessAccountId, name, language })
    if (status === null) return err
    return Object.assign(new DomainError(err.code, err.message, { ...err.details, status }), { cause: err.cause })
  }

  async function sendTemplate (account: UsableChatAccount, request: SendTemplateRequest, options?: SendOptions): Promise<SendResult> {
    const address = await addressFor(account, request)
    const lang = request.lang ?? DEFAULT_TEMPLATE_LANGUAGE
    const components = request.components === undefined ? undefined : checkTemplateComponents(request.components)
    let result: SendResult
    try {
      result = await callPlatform(account, templateMessage(address, request.templateName, lang, components), options, originOf(request))
    } catch (err) {
      throw await withStoredStatus(err, account, request.templateName, lang)
    }
    const body = request.templateContent?.body
    const bodyParameters = bodyParametersOf(components)
    await store(account, {
      address,
      wamid: result.messages?.[0]?.id ?? null,
      type: 'template',
      content: typeof body === 'string' && body !== '' ? body : `[template] ${request.templateName}`,
      templateContent: { ...request.templateContent, templateName: request.templateName, lang, ...(bodyParameters !== undefined && { bodyParameters }) },
      ...signedBy(request)
    })
    return result
  }

  /**
   * The free-form messages beyond text, checked over the platform's rules by their caller first: then
   * the recipient's address (`to` or `contactId`), the 24-hour window as for text, the send, and the
   * message stored as `record` says, signed by its request.
   */
  async function sendFreeForm (account: UsableChatAccount, request: RecipientFields & SenderFields, messageTo: (address: string) => Parameters<ChatClient['sendMessage']>[2],
    options: SendOptions | undefined, record: Omit<StoredRecord, 'address' | 'wamid' | keyof SenderFields>): Promise<SendResult> {
    const address = await addressFor(account, request)
    assertInsideWindow((await conversations.sendContext(account.phoneNumberId, address)).lastIncomingAt)
    const result = await callPlatform(account, messageTo(address), options, originOf(request))
    await store(account, { ...record, ...signedBy(request), address, wamid: result.messages?.[0]?.id ?? null })
    return result
  }

  /** Stored with its caption as content (`[image]` without one) and its link or media id. */
  async function sendMedia (account: UsableChatAccount, request: SendMediaRequest, options?: SendOptions): Promise<SendResult> {
    const media = checkMediaSend(request.media)
    return sendFreeForm(account, request, (address) => mediaMessage(address, media), options, {
      type: media.kind,
      content: media.caption ?? `[${media.kind}]`,
      media: {
        ...(media.mediaId !== undefined ? { id: media.mediaId } : { link: media.link }),
        ...(media.caption !== undefined && { caption: media.caption }),
        ...(media.filename !== undefined && { filename: media.filename })
      }
    })
  }

  /** Stored with its body as content. */
  async function sendInteractive (account: UsableChatAccount, request: SendInteractiveRequest, options?: SendOptions): Promise<SendResult> {
    const interactive = checkInteractive(request.interactive)
    return sendFreeForm(account, request, (address) => interactiveMessage(address, interactive), options, {
      type: 'interactive',
      content: interactive.body
    })
  }

  /** Stored with `[location] <name>` as content and the location in its details. */
  async function sendLocation (account: UsableChatAccount, request: SendLocationRequest, options?: SendOptions): Promise<SendResult> {
    const location = checkLocation(request.location)
    return sendFreeForm(account, request, (address) => locationMessage(address, location), options, {
      type: 'location',
      content: locationContent(location),
      details: { location }
    })
  }

  /** Stored with `[contacts] <names>` as content and the cards in its details. */
  async function sendContacts (account: UsableChatAccount, request: SendContactsRequest, options?: SendOptions): Promise<SendResult> {
    const contacts = checkContacts(request.contacts)
    return sendFreeForm(account, request, (address) => contactsMessage(address, contacts), options, {
      type: 'contacts',
      content: contactsContent(contacts),
      details: { contacts }
    })
  }

  /**
   * A reaction is not a message of the thread (README, Message kinds): it is kept on the message it reacts to
   * (`reactions.business`), set once the platform took it. A free-form message: within the window.
   */
  async function sendReaction (account: UsableChatAccount, request: SendReactionRequest): Promise<SendResult> {
    const emoji = checkEmoji(request.emoji)
    const target = await conversations.reactionTarget(account.phoneNumberId, request.messageId)
    if (target === null) throw new DomainError('MESSAGE_NOT_FOUND', 'Message not found')
    if (target.wamid === null) throw new DomainError('MESSAGE_NOT_ON_PLATFORM', 'The message was never sent through the platform: it cannot be reacted to')
    assertInsideWindow(target.lastIncomingAt)
    const result = await callPlatform(account, reactionMessage(target.address, target.wamid, emoji), undefined, originOf(request))
    try {
      await conversations.setBusinessReaction(target.id, account.phoneNumberId, emoji)
    } catch (err) {
      logger.error({ err, messageId: target.id }, 'sent reaction could not be stored')
    }
    return result
  }

  /**
   * Marks the customer's latest message of a conversation read, with the typing indicator (the platform shows it
   * until the next message or for 25 s). A sandbox number has no platform to tell. Null when the conversation is
   * not the number's.
   */
  async function markRead (account: UsableChatAccount, conversationId: string, options: { typing: boolean }): Promise<{ wamid: string } | null> {
    const latest = await conversations.latestInboundWamid(conversationId, account.phoneNumberId)
    if (!latest.found) return null
    if (latest.wamid === null) throw new DomainError('NO_CUSTOMER_MESSAGE', 'The customer has not written in this conversation: there is no message to mark read')
    if (account.isSandbox) return { wamid: latest.wamid }
    try {
      await client.markRead(account.phoneNumberId, account.accessToken, {
        messaging_product: 'whatsapp', status: 'read', message_id: latest.wamid, ...(options.typing && { typing_indicator: { type: 'text' } })
      })
    } catch (err) {
      throw platformFailure(err)
    }
    return { wamid: latest.wamid }
  }

  async function listTemplates (account: UsableChatAccount): Promise<TemplateRecord[]> {
    if (account.businessAccountId === null) {
      throw new DomainError('CHAT_ACCOUNT_NO_BUSINESS_ID', 'The chat account has no businessAccountId: templates cannot be listed')
    }
    try {
      return await client.listTemplates(account.businessAccountId, account.accessToken, { status: 'APPROVED' })
    } catch (err) {
      throw platformFailure(err)
    }
  }

  /**
   * Linking an account must prove the token may use the number: the inbox and the
   * KEYWORD workflows of a number are shared by everyone who linked it.
   */
  async function verifyNumber (phoneNumberId: string, accessToken: string): Promise<void> {
    try {
      await client.getPhoneNumber(phoneNumberId, accessToken)
    } catch (err) {
      // 190: the token is not valid; 100: the number does not exist or the token may not use it.
      if (err instanceof ChatPlatformError && (err.code === 190 || err.code === 100)) {
        throw new DomainError('CHAT_ACCOUNT_REJECTED', 'The chat platform refused accessToken for this phoneNumberId', platformDetails(err))
      }
      throw platformFailure(err)
    }
  }

  return { accounts, addressFor, sendText, deliverText, sendTemplate, sendMedia, sendInteractive, sendLocation, sendContacts, sendReaction, markRead, listTemplates, verifyNumber }
}

export type ChatService = ReturnType<typeof createChatService>
