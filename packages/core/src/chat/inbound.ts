import type { Queue } from 'bullmq'
import type { Config } from '../config.ts'
import type { DbOrTx } from '../db/client.ts'
import { MESSAGE_STATUSES, type ChatMessageDetails, type ChatMessageMedia } from '../db/schema/index.ts'
import type { Logger } from '../logger.ts'
import { CHAT_DELIVERY_JOB, type ChatDeliveryJobData } from '../queues/catalog.ts'
import { ensureJob } from '../queues/ensure-job.ts'
import { chatDeliveriesRepository } from './deliveries-repository.ts'
import { conversationsRepository, type MessageStatus } from './conversations.ts'
import { contactsContent, inboundContactsOf, inboundLocationOf, inboundReactionOf, locationContent } from './kinds.ts'
import { chatAccountResolver } from './accounts.ts'
import { flowReplyOf, interactiveReplyOf, type InteractiveReply } from './interactive.ts'
import { inboundMediaOf } from './media.ts'
import { isPlatformUserId } from './phone.ts'
import { isSandboxDelivery } from './sandbox.ts'
import { chatTemplatesRepository, type TemplateUpdate } from './templates.ts'

/** A newly stored customer message, for what reacts to it (events, KEYWORD workflows). */
export interface InboundChatMessage {
  phoneNumberId: string
  /** Users who can use the receiving account. */
  userIds: string[]
  /** "" when the platform withholds it; `platformUserId` then names the customer (README, Customers known by username). */
  phone: string
  platformUserId: string | null
  username: string | null
  contactId: string
  name: string | null
  text: string
  type: string
  wamid: string
  messageId: string
  conversationId: string
  /** The customer tapped a button or a list row (interactive, or a template's quick reply). */
  interactive?: InteractiveReply
  /** What an image, document, audio, video or sticker carries: its media id, type, caption, file name. */
  media?: ChatMessageMedia
  /**
   * What a message of another kind carries: a completed flow (`flowReply`), a location, contact cards, a reaction (our id of
   * the message reacted to, null when it is not the conversation's, and the emoji, "" when removed: README, Message kinds).
   */
  details?: ChatMessageDetails
}

/** The details of a completed flow, a shared location or contact cards; undefined for other messages. */
function detailsOf (message: Record<string, unknown>): ChatMessageDetails | undefined {
  const flowReply = flowReplyOf(message)
  if (flowReply !== undefined) return { flowReply }
  const location = inboundLocationOf(message)
  if (location !== undefined) return { location }
  const contacts = inboundContactsOf(message)
  return contacts === undefined ? undefined : { contacts }
}

interface DeliverySummary {
  messages: number
  duplicates: number
  statuses: number
  ignored: number
}

interface InboundOptions {
  db: DbOrTx
  config: Config
  logger: Logger
  /**
   * Starts what a message triggers. Called for a new message, and again for a stored one whose
   * earlier call did not complete (a retried delivery), so it must be idempotent per wamid.
   * A duplicate of a dispatched message never reaches it.
   */
  onMessage: (message: InboundChatMessage) => Promise<void>
  /** Dispatches the outbox events a delivery wrote (`chat.message.failed`, `chat.template.status`), after they are committed; the reconciler dispatches what this does not. */
  dispatchEvents: (eventIds: readonly string[]) => Promise<unknown>
}

interface PlatformMessage {
  /** The customer's phone; absent when the platform withholds it. */
  from?: string
  /** The customer's business-scoped user id (BSUID) and its parent. */
  from_user_id?: string
  from_parent_user_id?: string
  id?: string
  timestamp?: string
  type?: string
  context?: { id?: string }
  [key: string]: unknown
}

/** Who wrote, in a delivery's `contacts`: `wa_id` (the phone) only when the platform shares it. */
interface PlatformContact {
  wa_id?: string
  user_id?: string
  parent_user_id?: string
  profile?: { name?: string, username?: string }
}

interface PlatformStatus {
  id?: string
  status?: string
  timestamp?: string
  errors?: unknown[]
}

interface ChangeValue {
  metadata?: { phone_number_id?: string }
  contacts?: PlatformContact[]
  messages?: PlatformMessage[]
  statuses?: PlatformStatus[]
}

const isRecord = (value: unknown): value is Record<string, any> => typeof value === 'object' && value !== null

/** The text a message shows in the inbox, whatever its type. */
function messageText (message: PlatformMessage): string {
  const type = message.type ?? 'unknown'
  const part = isRecord(message[type]) ? message[type] : {}
  switch (type) {
    case 'text': return String(part.body ?? '')
    case 'interactive': return part.type === 'nfm_reply' ? '[flow]' : String(part.button_reply?.title ?? part.list_reply?.title ?? '')
    case 'button': return String(part.text ?? part.payload ?? '')
    case 'reaction': return String(part.emoji ?? '')
    case 'image': case 'video': case 'document': case 'audio': case 'sticker':
      return typeof part.caption === 'string' ? part.caption : `[${type}]`
    default: return `[${type}]`
  }
}

const textOf = (value: unknown, max: number): string | undefined => typeof value === 'string' && value !== '' ? value.slice(0, max) : undefined

/**
 * Who wrote a message (README, Customers known by username): their phone ("" when withheld), their
 * platform user id, its parent, their username and profile name, from the message and the delivery's
 * contact of the same user. Null when it names nobody: neither a phone nor a platform user id.
 */
function senderOf (message: PlatformMessage, contacts: PlatformContact[]): { phone: string, platformUserId?: string, parentPlatformUserId?: string, username?: string, name?: string } | null {
  const phone = typeof message.from === 'string' && /^\d{1,32}$/.test(message.from) ? message.from : ''
  const userId = typeof message.from_user_id === 'string' && isPlatformUserId(message.from_user_id) ? message.from_user_id : undefined
  if (phone === '' && userId === undefined) return null
  const contact = contacts.find((entry) => (userId !== undefined && entry.user_id === userId) || (phone !== '' && entry.wa_id === phone))
  const parent = [message.from_parent_user_id, contact?.parent_user_id].find((id) => typeof id === 'string' && isPlatformUserId(id))
  const username = textOf(contact?.profile?.username, 64)
  const name = textOf(contact?.profile?.name, 256)
  return {
    phone,
    ...(userId !== undefined && { platformUserId: userId }),
    ...(parent !== undefined && { parentPlatformUserId: parent }),
    ...(username !== undefined && { username }),
    ...(name !== undefined && { name })
  }
}

/**
 * The platform's time of a message, never later than now: a future stamp (a
 * skewed or forged one) would hold the 24-hour window open and pin the
 * conversation to the top of the inbox.
 */
const timeOf = (timestamp: string | undefined): Date => {
  const seconds = Number(timestamp)
  const now = Date.now()
  return new Date(Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds * 1000, now) : now)
}

/** The webhook fields of the business account's templates (README, Chat: templates), and what applies each. */
const TEMPLATE_FIELDS = {
  message_template_status_update: 'applyStatusUpdate',
  message_template_quality_update: 'applyQualityUpdate'
} as const

const isTemplateField = (field: unknown): field is keyof typeof TEMPLATE_FIELDS => typeof field === 'string' && Object.hasOwn(TEMPLATE_FIELDS, field)

/**
 * Processes one platform delivery: messages stored once each (by wamid) on
 * their conversation, statuses applied forward only, template updates onto the
 * templates made here. Deliveries for a platform number this installation does
 * not serve are ignored, and so are the platform webhook's for a sandbox number
 * (README, Sandbox numbers), and updates of a template not made here.
 */
export function chatDeliveryProcessor (options: InboundOptions) {
  const { db, logger, onMessage, dispatchEvents } = options
  const deliveries = chatDeliveriesRepository(db)
  const conversations = conversationsRepository(db)
  const accounts = chatAccountResolver(options)
  const templates = chatTemplatesRepository(options)

  /** `businessAccountId`: the entry's id, the business account whose template changed. */
  async function processTemplateChange (businessAccountId: unknown, field: keyof typeof TEMPLATE_FIELDS, value: Record<string, any>, summary: DeliverySummary): Promise<void> {
    const update: TemplateUpdate = await templates[TEMPLATE_FIELDS[field]](businessAccountId, value)
    if (update.outcome === 'changed') {
      if (update.eventIds.length > 0) await dispatchEvents(update.eventIds)
    } else if (update.outcome !== 'unchanged') {
      summary.ignored++
      // `templateName`: a log line's `name` is its logger's.
      const template = { businessAccountId, templateName: value.message_template_name, language: value.message_template_language }
      logger.info({ field, event: value.event, ...template }, update.outcome === 'unknown'
        ? 'chat template update for a template not made here ignored'
        : 'chat template update that changes no stored status ignored')
    }
  }

  /** `sandbox`: the delivery was played through a sandbox number, not received by the platform's webhook. */
  async function processChange (value: ChangeValue, summary: DeliverySummary, sandbox: boolean): Promise<void> {
    const phoneNumberId = value.metadata?.phone_number_id
    if (typeof phoneNumberId !== 'string' || !await accounts.isKnownNumber(phoneNumberId, sandbox)) {
      summary.ignored++
      logger.warn({ phoneNumberId }, 'chat delivery for an unknown platform number ignored')
      return
    }
    const contacts = value.contacts ?? []
    let userIds: string[] | undefined
    for (const message of value.messages ?? []) {
      const sender = senderOf(message, contacts)
      if (sender === null || typeof message.id !== 'string') {
        summary.ignored++
        logger.warn({ phoneNumberId, wamid: message.id }, 'chat message naming no customer (no phone, no platform user id) or without an id ignored')
        continue
      }
      const media = inboundMediaOf(message)
      const interactive = interactiveReplyOf(message)
      const details = detailsOf(message)
      const reaction = inboundReactionOf(message)
      const text = details?.location !== undefined
        ? locationContent(details.location)
        : details?.contacts !== undefined ? contactsContent(details.contacts) : reaction?.emoji ?? messageText(message)
      userIds ??= await accounts.userIdsFor(phoneNumberId)
      const stored = await conversations.recordInbound({
        phoneNumberId,
        ...sender,
        wamid: message.id,
        type: message.type ?? 'unknown',
        content: text,
        media,
        replyToId: typeof message.context?.id === 'string' ? message.context.id.slice(0, 256) : undefined,
        ...(reaction !== undefined && { reaction }),
        receivedAt: timeOf(message.timestamp),
        userIds,
        ...(interactive !== undefined && { interactive }),
        ...(details !== undefined && { details })
      })
      if (stored?.isNew === true) summary.messages++
      else summary.duplicates++
      if (stored === null) continue
      if (stored.eventIds.length > 0) await dispatchEvents(stored.eventIds)
      await onMessage({
        phoneNumberId,
        userIds,
        phone: sender.phone,
        platformUserId: sender.platformUserId ?? null,
        username: sender.username ?? null,
        contactId: stored.contactId,
        name: sender.name ?? null,
        text,
        type: message.type ?? 'unknown',
        wamid: message.id,
        conversationId: stored.conversationId,
        messageId: stored.messageId,
        ...(interactive !== undefined && { interactive }),
        ...(media !== undefined && { media }),
        ...(stored.details !== null && { details: stored.details })
      })
      await conversations.markDispatched(stored.messageId)
    }
    for (const status of value.statuses ?? []) {
      if (typeof status.id !== 'string' || !(MESSAGE_STATUSES as readonly string[]).includes(status.status ?? '')) continue
      // Any status may be an event: chat.message.failed, or chat.message.status for whoever listens.
      userIds ??= await accounts.userIdsFor(phoneNumberId)
      const { applied, eventIds } = await conversations.applyStatus(phoneNumberId, status.id, status.status as MessageStatus, status.errors, userIds ?? [])
      if (applied) summary.statuses++
      if (eventIds.length > 0) await dispatchEvents(eventIds)
    }
  }

  return async function processDelivery (deliveryId: string): Promise<DeliverySummary | null> {
    const payload = await deliveries.get(deliveryId)
    if (payload === null) return null
    const summary: DeliverySummary = { messages: 0, duplicates: 0, statuses: 0, ignored: 0 }
    const sandbox = isSandboxDelivery(deliveryId)
    const entries = isRecord(payload) && Array.isArray(payload.entry) ? payload.entry : []
    for (const entry of entries) {
      for (const change of isRecord(entry) && Array.isArray(entry.changes) ? entry.changes : []) {
        if (!isRecord(change) || !isRecord(change.value)) continue
        if (change.field === 'messages') await processChange(change.value, summary, sandbox)
        // Only the platform's own webhook speaks of templates: a played sandbox delivery never does.
        else if (isTemplateField(change.field) && !sandbox) await processTemplateChange(entry.id, change.field, change.value, summary)
      }
    }
    await deliveries.delete(deliveryId)
    return summary
  }
}

/**
 * Attempts of one delivery job at most, the queue's own five included: each reconciler retry of a
 * failed job is one more. Deliveries fail only while a store is away, so a job that keeps failing
 * with both stores up is left failed (and kept in chat_deliveries) rather than retried forever.
 */
const MAX_DELIVERY_ATTEMPTS = 15

interface DeliveryRequeueOptions {
  db: DbOrTx
  /** The assistant-main queue. */
  queue: Queue
  logger: Logger
  /** RECONCILER_GRACE_MS: a delivery stored this long ago is expected to have its job. */
  graceMs: number
  /** Deliveries looked at per pass. @defaultValue 500 */
  batchSize?: number
}

/**
 * For the reconciler: a delivery the platform was answered 200 for is never lost (the platform
 * will not send it again). A stored delivery whose job Redis lost, or whose job failed all its
 * attempts (the database away for about 30 s), is queued again. Returns how many were.
 */
export function chatDeliveryRequeue (options: DeliveryRequeueOptions): () => Promise<number> {
  const { queue, logger, graceMs } = options
  const deliveries = chatDeliveriesRepository(options.db)
  return async function requeueChatDeliveries (): Promise<number> {
    let count = 0
    for (const deliveryId of await deliveries.unprocessed(graceMs, options.batchSize ?? 500)) {
      const data: ChatDeliveryJobData = { deliveryId }
      if (await ensureJob(queue, CHAT_DELIVERY_JOB, data, deliveryId, MAX_DELIVERY_ATTEMPTS)) {
        logger.warn({ deliveryId }, 'stored chat delivery had no job: re-enqueued')
        count++
      }
    }
    return count
  }
}
