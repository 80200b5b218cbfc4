import { and, asc, eq, sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { jsonb } from '../db/sql.ts'
import { storableText } from '../db/storable.ts'
import { chatContacts, type ChatContact, type ConsentSource } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import { LABEL_BOUNDS, tooManyLabels } from './labels.ts'
import { addressOf, customerIs } from './phone.ts'

/** Bounds of a contact's fields (README, Contacts and consent): the API's schemas and the import check them. */
export const CONTACT_BOUNDS = {
  nameChars: 200,
  labels: LABEL_BOUNDS.perRecord,
  labelChars: LABEL_BOUNDS.chars,
  attributes: 50,
  attributeNameChars: 100,
  attributeValueChars: 1000,
  searchChars: 200
} as const

/** What an attribute may be named: letters, digits, `_`, `-` and `.`, as a CSV column `attr.<name>` can say it. */
export const ATTRIBUTE_NAME = /^[\p{L}\p{N}_][\p{L}\p{N}_.-]*$/u

export interface ContactsQuery {
  optedOut?: boolean
  label?: string
  /** A prefix of the phone (its digits) or of the name (any case). */
  search?: string
  limit: number
  offset: number
}

export interface ContactChanges {
  name?: string | null
  labels?: string[]
  attributes?: Record<string, string>
  optedOut?: boolean
}

/** What decides whether a contact may be messaged. */
export interface ContactConsent {
  optedOut: boolean
  consentChangedAt: Date | null
  consentSource: ConsentSource | null
  /** The customer's latest message is later than their opt-out: they wrote again since. */
  wroteSinceOptOut: boolean
}

/**
 * Where a send comes from, for the opt-out rule: `staff` a person's send through the API, `automation`
 * anything else (workflow nodes, the assistant and the drafts staff approve, broadcasts).
 */
export type SendOrigin = 'staff' | 'automation'

/** What a contact's row becomes in the API: the number it belongs to is the caller's account. */
export type Contact = Omit<ChatContact, 'phoneNumberId'>

const contactNotFound = (): DomainError => new DomainError('CONTACT_NOT_FOUND', 'Contact not found')

/**
 * The opt-out rule, in one place for every sender (README, Contacts and consent): nothing is sent to a
 * contact who opted out, except a person's free-form reply (`staff`: text, media, interactive; never a
 * template) to a contact who wrote again after opting out, which the 24-hour window bounds as it bounds
 * any free-form message. An opt-out
 * ends only by an opt-in keyword or by staff. `consent` null: no contact, nobody opted out. A broadcast
 * sender calls this per recipient (origin `automation`) and marks a refused one `skipped`.
 */
export function assertMayMessage (consent: ContactConsent | null, origin: SendOrigin, isTemplate: boolean): void {
  if (consent === null || !consent.optedOut) return
  if (origin === 'staff' && !isTemplate && consent.wroteSinceOptOut) return
  throw new DomainError('CONTACT_OPTED_OUT', 'The contact opted out of messages (STOP): no message can be sent', {
    consentChangedAt: consent.consentChangedAt?.toISOString() ?? null,
    consentSource: consent.consentSource
  })
}

/** `%`, `_` and `\` are LIKE's own: a search for them finds them as written. */
const likePrefix = (text: string): string => `${text.replace(/[\\%_]/g, '\\$&')}%`

const publicColumns = {
  id: chatContacts.id,
  phone: chatContacts.phone,
  platformUserId: chatContacts.platformUserId,
  parentPlatformUserId: chatContacts.parentPlatformUserId,
  username: chatContacts.username,
  name: chatContacts.name,
  labels: chatContacts.labels,
  attributes: chatContacts.attributes,
  optedOut: chatContacts.optedOut,
  consentChangedAt: chatContacts.consentChangedAt,
  consentSource: chatContacts.consentSource,
  createdAt: chatContacts.createdAt,
  updatedAt: chatContacts.updatedAt
}

function searchCondition (search: string): SQL {
  const digits = search.replace(/[\s()+.-]/g, '')
  const lowered = likePrefix(search.toLowerCase())
  const byName = sql`(lower(${chatContacts.name}) like ${lowered} or lower(${chatContacts.username}) like ${lowered})`
  return /^\d+$/.test(digits) ? sql`(${chatContacts.phone} like ${likePrefix(digits)} or ${byName})` : byName
}

/**
 * The contacts of a platform number (README, Contacts and consent). Every read and change is scoped
 * by the number of the account the caller selected.
 */
export function contactsRepository (db: DbOrTx) {
  async function get (id: string, phoneNumberId: string): Promise<Contact> {
    const [row] = await db.select(publicColumns).from(chatContacts)
      .where(and(eq(chatContacts.id, id), eq(chatContacts.phoneNumberId, phoneNumberId))).limit(1)
    if (row === undefined) throw contactNotFound()
    return row
  }

  return {
    /** By phone. */
    async list (phoneNumberId: string, query: ContactsQuery): Promise<Contact[]> {
      return db.select(publicColumns).from(chatContacts)
        .where(and(
          eq(chatContacts.phoneNumberId, phoneNumberId),
          query.optedOut === undefined ? undefined : eq(chatContacts.optedOut, query.optedOut),
          query.label === undefined ? undefined : sql`${chatContacts.labels} @> array[${query.label}]::text[]`,
          query.search === undefined || query.search.trim() === '' ? undefined : searchCondition(query.search.trim())
        ))
        .orderBy(asc(chatContacts.phone))
        .limit(query.limit)
        .offset(query.offset)
    },

    get,

    /**
     * Adds `label` to the contact's labels, at the end, in one statement: two people adding two labels at once both
     * keep theirs. One it carries changes nothing; one beyond LABEL_BOUNDS.perRecord is refused.
     */
    async addLabel (id: string, phoneNumberId: string, label: string): Promise<Contact> {
      const [row] = await db.update(chatContacts).set({ labels: sql`array_append(${chatContacts.labels}, ${label}::text)`, updatedAt: new Date() })
        .where(and(
          eq(chatContacts.id, id), eq(chatContacts.phoneNumberId, phoneNumberId),
          sql`not ${chatContacts.labels} @> array[${label}]::text[]`, sql`cardinality(${chatContacts.labels}) < ${LABEL_BOUNDS.perRecord}`
        ))
        .returning(publicColumns)
      if (row !== undefined) return row
      const current = await get(id, phoneNumberId)
      if (current.labels.includes(label)) return current
      throw tooManyLabels('contact')
    },

    /** Removes `label` from the contact's labels in one statement; one it does not carry changes nothing. */
    async removeLabel (id: string, phoneNumberId: string, label: string): Promise<Contact> {
      const [row] = await db.update(chatContacts).set({ labels: sql`array_remove(${chatContacts.labels}, ${label}::text)`, updatedAt: new Date() })
        .where(and(eq(chatContacts.id, id), eq(chatContacts.phoneNumberId, phoneNumberId), sql`${chatContacts.labels} @> array[${label}]::text[]`))
        .returning(publicColumns)
      return row ?? await get(id, phoneNumberId)
    },

    /**
     * Staff's changes. Labels are a set (each once, in the order given); attributes are replaced
     * whole. A change of `optedOut` records staff as its source, now; setting it to what it is changes nothing.
     */
    async update (id: string, phoneNumberId: string, changes: ContactChanges): Promise<Contact> {
      const { optedOut } = changes
      const [row] = await db.update(chatContacts).set({
        ...(changes.name !== undefined && { name: changes.name === null ? null : storableText(changes.name) }),
        ...(changes.labels !== undefined && { labels: [...new Set(changes.labels.map(storableText))] }),
        ...(changes.attributes !== undefined && { attributes: jsonb(changes.attributes) }),
        ...(optedOut !== undefined && {
          consentChangedAt: sql`case when ${chatContacts.optedOut} = ${optedOut} then ${chatContacts.consentChangedAt} else now() end`,
          consentSource: sql`case when ${chatContacts.optedOut} = ${optedOut} then ${chatContacts.consentSource} else 'staff' end`,
          optedOut
        }),
        updatedAt: new Date()
      }).where(and(eq(chatContacts.id, id), eq(chatContacts.phoneNumberId, phoneNumberId))).returning(publicColumns)
      if (row === undefined) throw contactNotFound()
      return row
    },

    /** The consent of the customer at `address` (a phone or a platform user id) on a number, and whether they wrote since opting out; null when they are no contact. */
    async consentOf (phoneNumberId: string, address: string): Promise<ContactConsent | null> {
      const [row] = await db.execute<{ optedOut: boolean, consentChangedAt: string | null, consentSource: ConsentSource | null, wroteSinceOptOut: boolean }>(sql`
        select k.opted_out as "optedOut", k.consent_changed_at as "consentChangedAt", k.consent_source as "consentSource",
          coalesce(c.last_incoming_at > k.consent_changed_at, false) as "wroteSinceOptOut"
        from chat_contacts k
        left join conversations c on c.phone_number_id = k.phone_number_id and ${customerIs('c', address)}
        where k.phone_number_id = ${phoneNumberId} and ${customerIs('k', address)}`)
      return row === undefined ? null : { ...row, consentChangedAt: row.consentChangedAt === null ? null : new Date(row.consentChangedAt) }
    },

    /** The address a send to a contact uses (chat/phone.ts `addressOf`); CONTACT_NOT_FOUND when it is not the number's. */
    async addressOf (id: string, phoneNumberId: string): Promise<string> {
      return addressOf(await get(id, phoneNumberId))
    }
  }
}

export type ContactsRepository = ReturnType<typeof contactsRepository>
