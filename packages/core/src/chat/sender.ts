import type { SendOptions, SendResult } from './client.ts'
import { normalizePhone } from './phone.ts'
import type { ChatService } from './sending.ts'

/**
 * What the engine's chat nodes need from the chat service: the seam between
 * the workflow engine and the chat platform client.
 */
export interface ChatSendResult {
  /** The platform's message id (messages[0].id). */
  wamid: string
  to: string
}

export interface SendTextInput {
  /** The workflow owner: the accounts they can use are the candidates. */
  userId: string
  accountId?: string
  to: string
  text: string
  replyToId?: string
}

export interface SendTemplateInput {
  userId: string
  accountId?: string
  to: string
  templateName: string
  lang?: string
  components?: unknown[]
}

/** `options`: the node's idempotency key, the same on every attempt, and its signal. */
export interface ChatSender {
  sendText: (input: SendTextInput, options?: SendOptions) => Promise<ChatSendResult>
  sendTemplate: (input: SendTemplateInput, options?: SendOptions) => Promise<ChatSendResult>
}

/** A send's wamid, or '' when the platform returned none. */
const wamidOf = (result: SendResult): string => result.messages?.[0]?.id ?? ''

/**
 * The engine's sends through the chat service. A workflow sends as its owner
 * with the owner's own rights: the accounts a member user could use, whatever
 * the owner's role, so that an admin's workflow never reaches other users' numbers.
 */
export function createChatSender (service: Pick<ChatService, 'accounts' | 'sendText' | 'sendTemplate'>): ChatSender {
  const accountOf = async (userId: string, accountId: string | undefined) =>
    await service.accounts.select({ id: userId, role: 'member' }, accountId, { forWorkflow: true })
  return {
    async sendText (input, options) {
      const result = await service.sendText(await accountOf(input.userId, input.accountId), { to: input.to, text: input.text, replyToId: input.replyToId }, options)
      return { wamid: wamidOf(result), to: normalizePhone(input.to) }
    },
    async sendTemplate (input, options) {
      const account = await accountOf(input.userId, input.accountId)
      const result = await service.sendTemplate(account, { to: input.to, templateName: input.templateName, lang: input.lang, components: input.components }, options)
      return { wamid: wamidOf(result), to: normalizePhone(input.to) }
    }
  }
}
