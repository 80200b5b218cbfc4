import type { ChatMessageDetails } from '../db/schema/index.ts'
import { storableText } from '../db/storable.ts'
import { DomainError } from '../errors.ts'

/**
 * The message kinds beyond text, media and interactive (README, Message kinds): locations, contact
 * cards and reactions, as a send checks them and as an inbound message keeps them. Pure.
 */

type Location = NonNullable<ChatMessageDetails['location']>
type ContactCard = Record<string, unknown>

/**
 * Bounds of these kinds. The platform documents no length for a location's name and address, nor a
 * count of cards: these are ours, wide enough for any real place or address book entry.
 */
export const KIND_LIMITS = {
  locationName: 1000,
  locationAddress: 1000,
  /** Cards in one contacts message. */
  contacts: 20,
  /** Phones, emails, urls and addresses of one card, each. */
  cardEntries: 10,
  /** Every text field of a card. */
  cardField: 256,
  /** One emoji, however many code units its sequence takes (a family, a flag with a tag sequence). */
  emoji: 64
} as const

/** The fields of a card's parts, as the platform names them (its contacts message reference). */
const CARD_OBJECTS = {
  name: ['formatted_name', 'first_name', 'last_name', 'middle_name', 'suffix', 'prefix'],
  org: ['company', 'department', 'title']
} as const
const CARD_LISTS = {
  phones: ['phone', 'wa_id', 'type'],
  emails: ['email', 'type'],
  urls: ['url', 'type'],
  addresses: ['street', 'city', 'state', 'zip', 'country', 'country_code', 'type']
} as const

const invalid = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * One emoji: a pictograph with its variation selector, skin tone, tag sequence and ZWJ joins (👍, ❤️, 👩🏽‍💻, 🏴 of
 * Scotland), a flag of two regional indicators or a keycap; "" removes a reaction.
 */
const EMOJI = /^(?:\p{Regional_Indicator}{2}|[#*0-9]\uFE0F?\u20E3|\p{Extended_Pictographic}\uFE0F?\p{Emoji_Modifier}?(?:[\u{E0020}-\u{E007E}]+\u{E007F})?(?:\u200D\p{Extended_Pictographic}\uFE0F?\p{Emoji_Modifier}?)*)$/u

export function checkEmoji (emoji: unknown): string {
  if (typeof emoji !== 'string' || emoji.length > KIND_LIMITS.emoji || (emoji !== '' && !EMOJI.test(emoji))) {
    throw invalid('emoji must be one emoji, or "" to remove the reaction')
  }
  return emoji
}

const isCoordinate = (value: unknown, bound: number): value is number => typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= bound

const coordinate = (value: unknown, field: string, bound: number): number => {
  if (!isCoordinate(value, bound)) throw invalid(`${field} must be a number from -${bound} to ${bound}`)
  return value
}

const optionalText = (value: unknown, field: string, max: number): string | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || value.length === 0 || value.length > max) throw invalid(`${field} must be 1 to ${max} characters`)
  return value
}

/** A location to send: latitude -90..90, longitude -180..180, an optional name and address. */
export function checkLocation (input: Record<string, unknown>): Omit<Location, 'url'> {
  const name = optionalText(input.name, 'name', KIND_LIMITS.locationName)
  const address = optionalText(input.address, 'address', KIND_LIMITS.locationAddress)
  return {
    latitude: coordinate(input.latitude, 'latitude', 90),
    longitude: coordinate(input.longitude, 'longitude', 180),
    ...(name !== undefined && { name }),
    ...(address !== undefined && { address })
  }
}

/**
 * Cards to send, in the platform's format: each with `name.formatted_name`, the parts and fields the
 * platform names and no others, every bound of KIND_LIMITS; the first problem is named with its place.
 */
export function checkContacts (input: unknown): ContactCard[] {
  if (!Array.isArray(input) || input.length === 0 || input.length > KIND_LIMITS.contacts) throw invalid(`contacts must hold 1 to ${KIND_LIMITS.contacts} cards`)
  return input.map((card, i) => {
    const at = `contacts[${i}]`
    if (!isRecord(card)) throw invalid(`${at} must be an object`)
    const checked: ContactCard = {}
    for (const [key, value] of Object.entries(card)) {
      if (key === 'birthday') {
        if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) throw invalid(`${at}.birthday must be a date YYYY-MM-DD`)
        checked.birthday = value
      } else if (Object.hasOwn(CARD_OBJECTS, key)) {
        checked[key] = cardPart(value, `${at}.${key}`, CARD_OBJECTS[key as keyof typeof CARD_OBJECTS])
      } else if (Object.hasOwn(CARD_LISTS, key)) {
        if (!Array.isArray(value) || value.length > KIND_LIMITS.cardEntries) throw invalid(`${at}.${key} must hold at most ${KIND_LIMITS.cardEntries} entries`)
        checked[key] = value.map((entry, j) => cardPart(entry, `${at}.${key}[${j}]`, CARD_LISTS[key as keyof typeof CARD_LISTS]))
      } else {
        throw invalid(`${at}.${key} is not a field of a contact card`)
      }
    }
    if (typeof (checked.name as Record<string, unknown> | undefined)?.formatted_name !== 'string') throw invalid(`${at}.name.formatted_name is required`)
    return checked
  })
}

function cardPart (value: unknown, at: string, fields: readonly string[]): Record<string, string> {
  if (!isRecord(value)) throw invalid(`${at} must be an object`)
  const part: Record<string, string> = {}
  for (const [key, field] of Object.entries(value)) {
    if (!fields.includes(key)) throw invalid(`${at}.${key} is not one of ${fields.join(', ')}`)
    part[key] = optionalText(field, `${at}.${key}`, KIND_LIMITS.cardField) as string
  }
  return part
}

/* Inbound: what a customer's message keeps. A delivery is never refused: what is beyond a bound is cut, what is not of the shape is dropped. */

const kept = (value: unknown, max: number): string | undefined => typeof value === 'string' && value !== '' ? storableText(value.slice(0, max)) : undefined

function keptPart (value: unknown, fields: readonly string[]): Record<string, string> | undefined {
  if (!isRecord(value)) return undefined
  const part: Record<string, string> = {}
  for (const field of fields) {
    const text = kept(value[field], KIND_LIMITS.cardField)
    if (text !== undefined) part[field] = text
  }
  return Object.keys(part).length > 0 ? part : undefined
}

/** The place an inbound `location` message shares; undefined for any other message, or coordinates that are no place. */
export function inboundLocationOf (message: Record<string, unknown>): Location | undefined {
  const part = message.location
  if (message.type !== 'location' || !isRecord(part) || !isCoordinate(part.latitude, 90) || !isCoordinate(part.longitude, 180)) return undefined
  const location: Location = { latitude: part.latitude, longitude: part.longitude }
  for (const field of ['name', 'address', 'url'] as const) {
    const text = kept(part[field], KIND_LIMITS.locationName)
    if (text !== undefined) location[field] = text
  }
  return location
}

/** The cards of an inbound `contacts` message, at most KIND_LIMITS.contacts, each bounded as a send's; undefined for any other message. */
export function inboundContactsOf (message: Record<string, unknown>): ContactCard[] | undefined {
  if (message.type !== 'contacts') return undefined
  const cards = Array.isArray(message.contacts) ? message.contacts : []
  return cards.slice(0, KIND_LIMITS.contacts).filter(isRecord).map((card) => {
    const kept: ContactCard = {}
    for (const [key, fields] of Object.entries(CARD_OBJECTS)) {
      const part = keptPart(card[key], fields)
      if (part !== undefined) kept[key] = part
    }
    for (const [key, fields] of Object.entries(CARD_LISTS)) {
      const list = Array.isArray(card[key]) ? card[key].slice(0, KIND_LIMITS.cardEntries).map((entry: unknown) => keptPart(entry, fields)).filter((entry) => entry !== undefined) : []
      if (list.length > 0) kept[key] = list
    }
    if (typeof card.birthday === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(card.birthday)) kept.birthday = card.birthday
    return kept
  })
}

/**
 * An inbound reaction: the wamid of the message reacted to (the caller resolves it in the conversation) and the emoji,
 * "" when the customer removed theirs (the platform then leaves it out, or empty); undefined for any other message.
 */
export function inboundReactionOf (message: Record<string, unknown>): { wamid: string, emoji: string } | undefined {
  const part = message.reaction
  if (message.type !== 'reaction' || !isRecord(part) || typeof part.message_id !== 'string') return undefined
  return { wamid: part.message_id.slice(0, 256), emoji: kept(part.emoji, KIND_LIMITS.emoji) ?? '' }
}

/** A card's name as the inbox lists it. */
const cardName = (card: ContactCard): string => {
  const name = card.name as Record<string, string> | undefined
  return name?.formatted_name ?? [name?.first_name, name?.last_name].filter(Boolean).join(' ')
}

/** The text a location shows in the inbox. */
export const locationContent = (location: Omit<Location, 'url'>): string => `[location] ${location.name ?? `${location.latitude}, ${location.longitude}`}`

/** The text contact cards show in the inbox. */
export const contactsContent = (contacts: ContactCard[]): string => `[contacts] ${contacts.map(cardName).filter(Boolean).join(', ')}`.trimEnd()
