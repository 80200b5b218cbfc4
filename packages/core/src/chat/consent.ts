import { createHash } from 'node:crypto'
import { eq, sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { jsonb } from '../db/sql.ts'
import { storableText } from '../db/storable.ts'
import { chatConsentSettings, type MessageSender } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import { notifyChange } from './changes.ts'
import { addressOf } from './phone.ts'
import type { InboundChatMessage } from './inbound.ts'
import { isTransientChatFailure } from './platform-errors.ts'
import type { ChatService } from './sending.ts'

/** The keywords and confirmations of a number without settings of its own (README, Contacts and consent). */
export const DEFAULT_CONSENT_SETTINGS: ConsentSettings = {
  optOutKeywords: ['STOP', 'STOP ALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'OPT OUT', 'OPT-OUT'],
  optInKeywords: ['START', 'UNSTOP', 'SUBSCRIBE', 'OPT IN'],
  optOutConfirmation: 'You have been unsubscribed and will receive no more messages. Reply START to subscribe again.',
  optInConfirmation: 'You are subscribed again.'
}

export const CONSENT_BOUNDS = { keywords: 20, keywordChars: 50, confirmationChars: 1024 } as const

/** Who the inbox shows as the sender of a confirmation. */
const CONSENT_SENDER = 'Consent'

export interface ConsentSettings {
  optOutKeywords: string[]
  optInKeywords: string[]
  optOutConfirmation: string
  optInConfirmation: string
}

export interface ConsentSettingsView extends ConsentSettings {
  /** Null while the number uses the defaults. */
  updatedAt: Date | null
}

/**
 * How a message and a keyword are compared: the whole text, trimmed, runs of spaces made one,
 * case-insensitive (compatibility forms folded, so full-width `ＳＴＯＰ` is STOP). @internal exported for its tests
 */
export function normalizeKeyword (text: string): string {
  return text.normalize('NFKC').trim().replace(/\s+/gu, ' ').toUpperCase()
}

/** Which of the two kinds of keywords a message is (the id of its confirmation's sender). */
type ConsentKeyword = 'optOut' | 'optIn'

/** Whether a customer's message is one of the number's keywords, as a whole. @internal exported for its tests */
export function consentKeywordOf (text: string, settings: Pick<ConsentSettings, 'optOutKeywords' | 'optInKeywords'>): ConsentKeyword | null {
  const normalized = normalizeKeyword(text)
  if (normalized === '') return null
  if (settings.optOutKeywords.some((keyword) => normalizeKeyword(keyword) === normalized)) return 'optOut'
  if (settings.optInKeywords.some((keyword) => normalizeKeyword(keyword) === normalized)) return 'optIn'
  return null
}

/** Keywords as they are stored: normalised, each once; one that would both opt out and opt in is refused. */
function checkedKeywords (settings: ConsentSettings): ConsentSettings {
  const unique = (keywords: string[]): string[] => [...new Set(keywords.map(normalizeKeyword))]
  const optOutKeywords = unique(settings.optOutKeywords)
  const optInKeywords = unique(settings.optInKeywords)
  if (optOutKeywords.includes('') || optInKeywords.includes('')) throw new DomainError('VALIDATION_ERROR', 'A keyword cannot be blank')
  const both = optOutKeywords.find((keyword) => optInKeywords.includes(keyword))
  if (both !== undefined) throw new DomainError('VALIDATION_ERROR', `A keyword cannot both opt out and opt in: ${both}`)
  return { ...settings, optOutKeywords, optInKeywords }
}

/** A confirmation's message id from its keyword message's: cuid-shaped, the same for every attempt of a delivery. */
const confirmationIdOf = (messageId: string): string => `k${createHash('sha256').update(`consent:${messageId}`).digest('hex').slice(0, 23)}`

/** The opt-out and opt-in settings of each platform number, keyed like the assistant's. */
export function consentSettings (db: DbOrTx) {
  return {
    async view (phoneNumberId: string): Promise<ConsentSettingsView> {
      const [row] = await db.select().from(chatConsentSettings).where(eq(chatConsentSettings.phoneNumberId, phoneNumberId)).limit(1)
      if (row === undefined) return { ...DEFAULT_CONSENT_SETTINGS, updatedAt: null }
      const { optOutKeywords, optInKeywords, optOutConfirmation, optInConfirmation, updatedAt } = row
      return { optOutKeywords, optInKeywords, optOutConfirmation, optInConfirmation, updatedAt }
    },

    async save (phoneNumberId: string, userId: string, settings: ConsentSettings): Promise<ConsentSettingsView> {
      const values = { ...checkedKeywords(settings), updatedBy: userId, updatedAt: new Date() }
      await db.insert(chatConsentSettings).values({ phoneNumberId, ...values })
        .onConflictDoUpdate({ target: chatConsentSettings.phoneNumberId, set: values })
      return this.view(phoneNumberId)
    }
  }
}

export type ConsentSettingsStore = ReturnType<typeof consentSettings>

interface ConsentKeywordsOptions {
  db: DbOrTx
  chat: Pick<ChatService, 'accounts' | 'deliverText'>
  logger: Pick<Logger, 'info' | 'warn'>
}

/**
 * Opt-out and opt-in keywords, the first thing an inbound message meets (README, Inbound
 * messages): a message that is one of its number's keywords sets the contact's `optedOut` (source
 * `keyword`, at the message's time), is answered with the confirmation, and ends there: no event, no
 * KEYWORD workflow, no assistant turn. Called again for a retried delivery, it changes the contact to
 * the same and confirms once: the confirmation is claimed by an id derived from the message before it
 * is sent, and given back if the platform did not take it.
 */
export function consentKeywords ({ db, chat, logger }: ConsentKeywordsOptions) {
  const settings = consentSettings(db)

  /** `keyword`: which of the two the message was, the confirmation's sender id. */
  async function confirm (message: InboundChatMessage, keyword: ConsentKeyword, text: string): Promise<void> {
    const id = confirmationIdOf(message.messageId)
    const sender: MessageSender = { type: 'consent', id: keyword }
    const [claimed] = await db.execute<{ id: string }>(sql`
      with claimed as (
        insert into messages (id, conversation_id, direction, type, content, status, agent_name, sender, reply_to_id, sent_at, created_at)
        values (${id}, ${message.conversationId}, 'outbound', 'text', ${storableText(text)}, 'sent', ${CONSENT_SENDER}, ${jsonb(sender)}, ${message.messageId}, now(), now())
        on conflict (id) do nothing
        returning id, content
      ), shown as (
        update conversations set last_message = (select content from claimed), last_message_at = now(), updated_at = now()
        where id = ${message.conversationId} and exists (select 1 from claimed)
        returning ${notifyChange('message.created', sql`phone_number_id`, sql`id`, sql`${id}`)}
      )
      select id from claimed`)
    if (claimed === undefined) return
    const account = await chat.accounts.forNumber(message.phoneNumberId)
    try {
      if (account === null) throw new Error('no account can send from this number any more')
      const { wamid, status } = await chat.deliverText(account, addressOf(message), text, undefined, 'consent')
      await db.execute(sql`update messages set wamid = ${wamid}, status = ${status} where id = ${id}`)
    } catch (err) {
      await db.execute(sql`delete from messages where id = ${id} and wamid is null`)
      // The platform may take it later: the delivery is retried. A refusal is final: the change stands unconfirmed.
      if (isTransientChatFailure(err)) throw err
      logger.warn({ err, conversationId: message.conversationId }, 'consent keyword applied, its confirmation could not be sent')
    }
  }

  return {
    /**
     * The consent keyword the message was, now applied and confirmed (nothing else may react to
     * it), or null. A tap counts by its text or its id (a template's quick reply button `Stop
     * promotions` with payload STOP).
     */
    async answer (message: InboundChatMessage): Promise<ConsentKeyword | null> {
      const current = await settings.view(message.phoneNumberId)
      const keyword = consentKeywordOf(message.text, current) ?? (message.interactive === undefined ? null : consentKeywordOf(message.interactive.id, current))
      if (keyword === null) return null
      const optedOut = keyword === 'optOut'
      // The message's own contact, made or found when it was stored (chat/customers.ts).
      await db.execute(sql`
        update chat_contacts k set opted_out = ${optedOut}, consent_changed_at = m.created_at, consent_source = 'keyword', updated_at = now()
        from messages m where k.id = ${message.contactId} and m.id = ${message.messageId}`)
      logger.info({ conversationId: message.conversationId, optedOut }, 'consent keyword applied')
      await confirm(message, keyword, optedOut ? current.optOutConfirmation : current.optInConfirmation)
      return keyword
    }
  }
}

export type ConsentKeywords = ReturnType<typeof consentKeywords>
