import { createHash } from 'node:crypto'
import { DomainError } from '../errors.ts'
import type { SendOptions, SendResult } from './client.ts'
import type { conversationsRepository } from './conversations.ts'
import type { CONVERSATION_PRIORITIES, MessageSender } from '../db/schema/index.ts'
import { mentionedEmails, noteIdOf } from './notes.ts'
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

/**
 * Whom a node sends to (README, Customers known by username): `to`, a phone (or a platform user id),
 * or `contactId`, a contact of the account's number, whose phone is used when known, else its platform user id.
 */
export type Recipient = { to: string, contactId?: undefined } | { contactId: string, to?: undefined }

/** A recipient as a log line or an error names it. */
export const recipientLabel = (recipient: Recipient): string => recipient.to ?? `contact ${recipient.contactId}`

/** The run a node sends for: its messages' `sender` is the workflow with this run (README, The team inbox: who sent a message). */
interface SendingRun {
  id: string
  workflowId: string
}

export type SendTextInput = Recipient & {
  /** The workflow owner: the accounts they can use are the candidates. */
  userId: string
  run: SendingRun
  accountId?: string
  text: string
  replyToId?: string
  /** Who the inbox shows as its sender (ai_reply: the Assistant). */
  agentName?: string
}

/** A conversation of the workflow owner's account: the customer they talk with. */
export type ConversationInput = Recipient & {
  userId: string
  accountId?: string
}

/** What the customer and the business said, oldest first: the customer is `user`, what was sent them `assistant`. */
export interface ChatHistory {
  /** Null when the account has no conversation with the number yet. */
  conversationId: string | null
  messages: Array<{ role: 'user' | 'assistant', content: string }>
}

export interface DraftResult {
  draftId: string
  conversationId: string
}

/** A conversation handed to a person (README, Conversations: Handoff). */
export type HandoffInput = ConversationInput & {
  /** A user who can use the account, or `least_busy`. */
  assignTo: string
  labels?: string[]
  priority?: typeof CONVERSATION_PRIORITIES[number]
  /** A private note, written by the workflow: mentions (`@email`) as staff's notes have them. */
  note?: string
  /** The run writing the note. */
  runId: string
}

export interface HandoffResult {
  conversationId: string
  assignedTo: string
  labels: string[]
  priority: string
  /** Null without a note. */
  noteId: string | null
}

/** `media`: kind, link or mediaId, caption, filename, as a node's config holds them (checked by the chat service). */
export type SendMediaInput = Recipient & {
  userId: string
  run: SendingRun
  accountId?: string
  media: Record<string, unknown>
}

/** `interactive`: type, body, header, footer, buttons or list, as a node's config holds them (checked by the chat service). */
export type SendInteractiveInput = Recipient & {
  userId: string
  run: SendingRun
  accountId?: string
  interactive: Record<string, unknown>
}

export type SendTemplateInput = Recipient & {
  userId: string
  run: SendingRun
  accountId?: string
  templateName: string
  lang?: string
  components?: unknown[]
}

/** `options`: the node's idempotency key, the same on every attempt, and its signal. */
export interface ChatSender {
  sendText: (input: SendTextInput, options?: SendOptions) => Promise<ChatSendResult>
  sendTemplate: (input: SendTemplateInput, options?: SendOptions) => Promise<ChatSendResult>
  sendMedia: (input: SendMediaInput, options?: SendOptions) => Promise<ChatSendResult>
  sendInteractive: (input: SendInteractiveInput, options?: SendOptions) => Promise<ChatSendResult>
  /** The conversation with the number on the account, with when the customer last wrote; null before any message. */
  conversation: (input: ConversationInput) => Promise<{ id: string, lastIncomingAt: Date | null } | null>
  /** The latest `limit` messages of the conversation (no drafts), within `maxChars` in all. */
  recentMessages: (input: ConversationInput & { limit: number, maxChars: number }) => Promise<ChatHistory>
  /**
   * Stores `text` as the Assistant's draft in the conversation, for staff to approve (README, The
   * assistant); nothing is sent. The same idempotency key stores one draft, however often it is called.
   */
  draftText: (input: ConversationInput & { run: SendingRun, text: string }, options?: Pick<SendOptions, 'idempotencyKey'>) => Promise<DraftResult>
  /**
   * Assigns the conversation (pausing the assistant), adds labels, sets its priority and stores the
   * workflow's note, as the API's assignment does; the same idempotency key stores one note.
   */
  handoff: (input: HandoffInput, options: Required<Pick<SendOptions, 'idempotencyKey'>>) => Promise<HandoffResult>
  /** Marks the customer's latest message read with the typing indicator (README, Message kinds); nothing when they never wrote. */
  markRead: (input: ConversationInput) => Promise<void>
}

/** A draft's message id from its node's idempotency key: a cuid-shaped digest, the same on every attempt. */
const draftIdOf = (idempotencyKey: string): string => `d${createHash('sha256').update(`draft:${idempotencyKey}`).digest('hex').slice(0, 23)}`

const noConversationToHand = (address: string): DomainError =>
  new DomainError('CONVERSATION_NOT_FOUND', `No conversation with ${address} on this account: a handoff hands over a customer who wrote`)

const workflowSender = (run: SendingRun): MessageSender => ({ type: 'workflow', id: run.workflowId, runId: run.id })

/** A send's wamid, or '' when the platform returned none. */
const wamidOf = (result: SendResult): string => result.messages?.[0]?.id ?? ''

/**
 * The engine's sends through the chat service. A workflow sends as its owner
 * with the owner's own rights: the accounts a member user could use, whatever
 * the owner's role, so that an admin's workflow never reaches other users' numbers.
 */
export function createChatSender (
  service: Pick<ChatService, 'accounts' | 'addressFor' | 'sendText' | 'sendTemplate' | 'sendMedia' | 'sendInteractive' | 'markRead'>,
  conversations: Pick<ReturnType<typeof conversationsRepository>, 'findByAddress' | 'history' | 'recordDraft' | 'handoff'>
): ChatSender {
  const accountOf = async (userId: string, accountId: string | undefined) =>
    await service.accounts.select({ id: userId, role: 'member' }, accountId, { forWorkflow: true })
  /** The account a node sends from and the address of its recipient there. */
  const target = async (input: Recipient & { userId: string, accountId?: string }) => {
    const account = await accountOf(input.userId, input.accountId)
    return { account, to: await service.addressFor(account, input) }
  }
  const conversationOf = async (input: ConversationInput) => {
    const { account, to } = await target(input)
    return await conversations.findByAddress(account.phoneNumberId, to)
  }
  return {
    async sendText (input, options) {
      const { account, to } = await target(input)
      const result = await service.sendText(account, { to, text: input.text, replyToId: input.replyToId, agentName: input.agentName, sender: workflowSender(input.run) }, options)
      return { wamid: wamidOf(result), to }
    },
    async sendTemplate (input, options) {
      const { account, to } = await target(input)
      const result = await service.sendTemplate(account, {
        to, templateName: input.templateName, lang: input.lang, components: input.components, sender: workflowSender(input.run)
      }, options)
      return { wamid: wamidOf(result), to }
    },
    async sendMedia (input, options) {
      const { account, to } = await target(input)
      const result = await service.sendMedia(account, { to, media: input.media, sender: workflowSender(input.run) }, options)
      return { wamid: wamidOf(result), to }
    },
    async sendInteractive (input, options) {
      const { account, to } = await target(input)
      const result = await service.sendInteractive(account, { to, interactive: input.interactive, sender: workflowSender(input.run) }, options)
      return { wamid: wamidOf(result), to }
    },
    async conversation (input) {
      const conversation = await conversationOf(input)
      return conversation === null ? null : { id: conversation.id, lastIncomingAt: conversation.lastIncomingAt }
    },
    async recentMessages (input) {
      const conversation = await conversationOf(input)
      if (conversation === null) return { conversationId: null, messages: [] }
      const messages = await conversations.history(conversation.id, { limit: input.limit, maxChars: input.maxChars })
      return {
        conversationId: conversation.id,
        messages: messages.map(({ direction, content }) => ({ role: direction === 'inbound' ? 'user' : 'assistant', content }))
      }
    },
    async draftText (input, options) {
      const conversation = await conversationOf(input)
      if (conversation === null) {
        throw new DomainError('CONVERSATION_NOT_FOUND', `No conversation with ${recipientLabel(input)} on this account: a draft answers a customer who wrote`)
      }
      const draft = await conversations.recordDraft({
        ...(options?.idempotencyKey !== undefined && { id: draftIdOf(options.idempotencyKey) }),
        conversationId: conversation.id,
        content: input.text,
        replyToId: conversation.lastInboundId,
        sender: workflowSender(input.run)
      })
      return { draftId: draft.id, conversationId: conversation.id }
    },
    async markRead (input) {
      const { account, to } = await target(input)
      const conversation = await conversations.findByAddress(account.phoneNumberId, to)
      if (conversation?.lastInboundId == null) return
      await service.markRead(account, conversation.id, { typing: true })
    },
    async handoff (input, options) {
      const { account: { phoneNumberId }, to } = await target(input)
      const conversation = await conversations.findByAddress(phoneNumberId, to)
      if (conversation === null) throw noConversationToHand(to)
      const assignee = input.assignTo === 'least_busy'
        ? await service.accounts.leastBusyAgent(phoneNumberId, conversation.id)
        : await service.accounts.isAgent(phoneNumberId, input.assignTo) ? input.assignTo : null
      if (assignee === null) {
        throw new DomainError('VALIDATION_ERROR', input.assignTo === 'least_busy'
          ? 'assignTo least_busy: nobody can use this account'
          : `assignTo must be a user who can use this account: ${input.assignTo} is not`)
      }
      const note = input.note === undefined
        ? undefined
        : {
            id: noteIdOf(options.idempotencyKey),
            runId: input.runId,
            text: input.note,
            mentions: await service.accounts.agentIdsByEmail(phoneNumberId, mentionedEmails(input.note))
          }
      const handed = await conversations.handoff(conversation.id, phoneNumberId, { assignedAgentId: assignee, labels: input.labels ?? [], priority: input.priority, note })
      // Found by its number a moment ago: only a delete in between loses it.
      if (handed === null) throw noConversationToHand(to)
      const { labels, priority } = handed.conversation
      return { conversationId: conversation.id, assignedTo: assignee, labels, priority, noteId: handed.noteId }
    }
  }
}
