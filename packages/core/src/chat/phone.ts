import { sql, type SQL } from 'drizzle-orm'
import { DomainError } from '../errors.ts'

/**
 * The platform's business-scoped user id (BSUID): a country code, a dot, an optional `ENT.` (a parent
 * id shared across business portfolios) and up to 128 letters and digits (README, Customers known by username).
 */
const PLATFORM_USER_ID = /^[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]{1,128}$/

export const isPlatformUserId = (value: string): boolean => PLATFORM_USER_ID.test(value)

/** Recipients are digits only (README, Chat); a leading plus and the usual separators are forgiven. */
export function normalizePhone (to: string): string {
  const digits = to.trim().replace(/^\+/, '').replace(/[\s().-]/g, '')
  if (!/^\d{6,15}$/.test(digits)) throw new DomainError('INVALID_PHONE', 'to must be a phone number in international format')
  return digits
}

/**
 * A customer's address: their phone when it is known, else their platform user id, which the platform
 * takes as `recipient` (README, Customers known by username). A phone is normalised; a platform user id
 * is kept as written.
 */
export function normalizeAddress (to: string): string {
  const trimmed = to.trim()
  return isPlatformUserId(trimmed) ? trimmed : normalizePhone(trimmed)
}

/** The address of a stored customer (a contact, a conversation): the phone, "" when withheld, else the platform user id. */
export const addressOf = (customer: { phone: string, platformUserId: string | null }): string =>
  customer.phone !== '' || customer.platformUserId === null ? customer.phone : customer.platformUserId

/** The address (`addressOf`) of the customer of `alias`'s row, in SQL. */
export const addressColumn = (alias: string): SQL => sql.raw(`coalesce(nullif(${alias}.phone, ''), ${alias}.platform_user_id)`)

/** The contact `contact` and the conversation `conversation` (aliases) are of one customer: the same phone, or the same platform user id. */
export const sameCustomer = (contact: string, conversation: string): SQL =>
  sql.raw(`((${contact}.phone = ${conversation}.phone and ${contact}.phone <> '') or ${contact}.platform_user_id = ${conversation}.platform_user_id)`)

/** The rows of `alias` (conversations or chat_contacts) of the customer at `address`, by the index its kind has. */
export const customerIs = (alias: string, address: string): SQL =>
  isPlatformUserId(address)
    ? sql`${sql.raw(alias)}.platform_user_id = ${address}`
    : sql`${sql.raw(alias)}.phone = ${address} and ${sql.raw(alias)}.phone <> ''`
