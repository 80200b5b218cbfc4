import type { Config } from '../config.ts'
import type { DbOrTx } from '../db/client.ts'
import { DomainError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import { conversationsRepository, WINDOW_MS } from './conversations.ts'
import { chatAccountResolver, type UsableChatAccount } from './accounts.ts'
import {
  ChatPlatformError, ChatPlatformUnavailableError, templateMessage, textMessage,
  type ChatClient, type SendResult, type TemplateRecord
} from './client.ts'
import type { ChatSender } from './sender.ts'

/** Spec section 7: the message a client sees for each platform error code; others keep the platform's own. */
const PLATFORM_ERROR_MESSAGES: Record<number, string> = {
  132001: 'Template name does not exist',
  132000: 'Number of parameters mismatch',
  190: 'Invalid OAuth access token',
  131030: 'Recipient phone number not in allowed list'
}

const DEFAULT_TEMPLATE_LANGUAGE = 'en_US'

interface SendTextRequest {
  to: string
  text: string
  agentId?: string
  agentName?: string
  /** Our message id or the platform's wamid of the quoted message. */
  replyToId?: string
}

interface SendTemplateRequest {
  to: string
  templateName: string
  lang?: string
  components?: unknown[]
  /** What the template said (body, footer, imageUrl), kept with the message for the inbox. */
  templateContent?: Record<string, unknown>
  agentId?: string
  agentName?: string
}

interface ChatServiceOptions {
  db: DbOrTx
  config: Config
  client: ChatClient
  logger: Pick<Logger, 'error'>
}

/** What the platform said, relayed as the error body's `details` (contract, Chat). */
const platformDetails = (err: ChatPlatformError): Record<string, unknown> => ({
  code: err.code,
  subcode: err.subcode ?? null,
  fbtraceId: err.fbtraceId ?? null,
  platformMessage: err.message
})

/** Platform failures become the contract's errors: 500 with the spec's message, 502 when unreachable. */
function platformFailure (err: unknown): unknown {
  if (err instanceof ChatPlatformError) {
    return new DomainError('CHAT_PLATFORM_ERROR', PLATFORM_ERROR_MESSAGES[err.code] ?? err.message, platformDetails(err))
  }
  if (err instanceof ChatPlatformUnavailableError) {
    return new DomainError('CHAT_PLATFORM_UNAVAILABLE', 'Chat platform unavailable')
  }
  return err
}

/** Recipients are digits only (spec 4.4); a leading plus and the usual separators are forgiven. */
function normalizePhone (to: string): string {
  const digits = to.trim().replace(/^\+/, '').replace(/[\s().-]/g, '')
  if (!/^\d{6,15}$/.test(digits)) throw new DomainError('INVALID_PHONE', 'to must be a phone number in international format')
  return digits
}

/** The spec says `buttons`; the platform's send format says `button`. */
const platformComponents = (components: unknown[] | undefined): unknown[] | undefined => components?.map((component) =>
  (component as { type?: unknown })?.type === 'buttons' ? { ...(component as object), type: 'button' } : component)

/**
 * Sending through the platform with the customer service window checked
 * first, and every sent message stored on its conversation. The API routes and
 * the engine's chat nodes (through `sender`) share it.
 */
export function createChatService (options: ChatServiceOptions) {
  const { client, logger } = options
  const accounts = chatAccountResolver(options)
  const conversations = conversationsRepository(options.db)

  async function callPlatform (account: UsableChatAccount, message: Parameters<ChatClient['sendMessage']>[2]): Promise<SendResult> {
    try {
      return await client.sendMessage(account.phoneNumberId, account.accessToken, message)
    } catch (err) {
      throw platformFailure(err)
    }
  }

  /** The platform accepted the message: failing to store it must not make the caller send it twice. */
  async function store (record: Parameters<typeof conversations.recordOutbound>[0]): Promise<void> {
    try {
      await conversations.recordOutbound(record)
    } catch (err) {
      logger.error({ err, wamid: record.wamid }, 'sent chat message could not be stored')
    }
  }

  async function sendText (account: UsableChatAccount, request: SendTextRequest): Promise<SendResult> {
    const phone = normalizePhone(request.to)
    const replyToId = request.replyToId
    const context = await conversations.sendContext(account.phoneNumberId, phone, replyToId?.startsWith('wamid.') === true ? undefined : replyToId)
    if (context.lastIncomingAt === null || Date.now() - context.lastIncomingAt.getTime() > WINDOW_MS) {
      throw new DomainError('OUTSIDE_WINDOW', 'Outside the 24-hour window: send a template')
    }
    const replyToWamid = replyToId === undefined ? undefined : (context.replyToWamid ?? replyToId)
    const result = await callPlatform(account, textMessage(phone, request.text, replyToWamid))
    await store({
      phoneNumberId: account.phoneNumberId,
      phone,
      wamid: result.messages?.[0]?.id ?? null,
      type: 'text',
      content: request.text,
      agentId: request.agentId,
      agentName: request.agentName,
      replyToId
    })
    return result
  }

  async function sendTemplate (account: UsableChatAccount, request: SendTemplateRequest): Promise<SendResult> {
    const phone = normalizePhone(request.to)
    const lang = request.lang ?? DEFAULT_TEMPLATE_LANGUAGE
    const result = await callPlatform(account, templateMessage(phone, request.templateName, lang, platformComponents(request.components)))
    const body = request.templateContent?.body
    await store({
      phoneNumberId: account.phoneNumberId,
      phone,
      wamid: result.messages?.[0]?.id ?? null,
      type: 'template',
      content: typeof body === 'string' && body !== '' ? body : `[template] ${request.templateName}`,
      templateContent: { ...request.templateContent, templateName: request.templateName, lang },
      agentId: request.agentId,
      agentName: request.agentName
    })
    return result
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

  const wamidOf = (result: SendResult): string => result.messages?.[0]?.id ?? ''

  const sender: ChatSender = {
    async sendText (input) {
      const account = await accounts.select({ id: input.userId, role: 'member' }, input.accountId, { forWorkflow: true })
      const result = await sendText(account, { to: input.to, text: input.text, replyToId: input.replyToId })
      return { wamid: wamidOf(result), to: normalizePhone(input.to) }
    },
    async sendTemplate (input) {
      const account = await accounts.select({ id: input.userId, role: 'member' }, input.accountId, { forWorkflow: true })
      const result = await sendTemplate(account, { to: input.to, templateName: input.templateName, lang: input.lang, components: input.components })
      return { wamid: wamidOf(result), to: normalizePhone(input.to) }
    }
  }

  return { accounts, sendText, sendTemplate, listTemplates, verifyNumber, sender }
}

export type ChatService = ReturnType<typeof createChatService>
