import type { Readable } from 'node:stream'
import { createId } from '@paralleldrive/cuid2'
import { parse, type CsvError } from 'csv-parse'
import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { jsonb, textArray } from '../db/sql.ts'
import { storableText } from '../db/storable.ts'
import { DomainError } from '../errors.ts'
import { ATTRIBUTE_NAME, CONTACT_BOUNDS } from './contacts.ts'
import { normalizePhone } from './phone.ts'

/** Bounds of one import (README, Contacts and consent); the body's own limit is the api's. */
export const CONTACTS_IMPORT_BOUNDS = {
  rows: 100_000,
  columns: 100,
  /** One row, quoted newlines included: 50 attributes of 1,000 characters fit, a quote never closed does not run on. */
  rowBytes: 256 * 1024,
  /** Skipped rows listed with their reason; `skippedCount` counts them all. */
  skippedListed: 100
} as const

/** Rows written per statement. */
const BATCH_ROWS = 500

const ATTRIBUTE_PREFIX = 'attr.'

/** Where each known column is in the file; the others are ignored and named in the answer. */
export interface ImportColumns {
  count: number
  phone: number
  name?: number
  labels?: number
  optedOut?: number
  attributes: Array<{ index: number, name: string }>
  ignored: string[]
}

/** A row as it changes its contact: absent fields are left as they are. */
export interface ImportRow {
  phone: string
  name?: string
  labels: string[]
  optedOut: boolean
  attributes: Record<string, string>
}

export interface SkippedRow {
  line: number
  reason: string
}

export interface ImportResult {
  imported: number
  updated: number
  skipped: SkippedRow[]
  skippedCount: number
  ignoredColumns: string[]
}

const invalidFile = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)
const COLUMNS_HELP = 'its first line names the columns: phone, name, labels, optedOut, attr.<name>'

/**
 * The columns a header line names (any case, spaces around ignored); a file without phone, or naming a column twice, is refused.
 * @internal exported for its tests
 */
export function importColumns (header: string[]): ImportColumns {
  if (header.length > CONTACTS_IMPORT_BOUNDS.columns) throw invalidFile(`The CSV has ${header.length} columns, more than ${CONTACTS_IMPORT_BOUNDS.columns}`)
  const columns: Omit<ImportColumns, 'phone'> & { phone?: number } = { count: header.length, attributes: [], ignored: [] }
  const seen = new Set<string>()
  header.forEach((raw, index) => {
    const title = raw.trim()
    const key = title.toLowerCase()
    if (seen.has(key)) throw invalidFile(`The CSV names column ${title} twice`)
    seen.add(key)
    if (key === 'phone' || key === 'name' || key === 'labels') columns[key] = index
    else if (key === 'optedout') columns.optedOut = index
    else if (key.startsWith(ATTRIBUTE_PREFIX)) {
      const name = title.slice(ATTRIBUTE_PREFIX.length)
      if (name.length > CONTACT_BOUNDS.attributeNameChars || !ATTRIBUTE_NAME.test(name)) {
        throw invalidFile(`Column ${title}: an attribute's name is 1 to ${CONTACT_BOUNDS.attributeNameChars} letters, digits, _, - and .`)
      }
      columns.attributes.push({ index, name })
    } else columns.ignored.push(title.slice(0, 100))
  })
  if (columns.phone === undefined) throw invalidFile(`The CSV has no phone column (${COLUMNS_HELP})`)
  if (columns.attributes.length > CONTACT_BOUNDS.attributes) throw invalidFile(`The CSV has ${columns.attributes.length} attr. columns, more than a contact's ${CONTACT_BOUNDS.attributes} attributes`)
  return { ...columns, phone: columns.phone }
}

const OPTED_OUT_VALUES: Record<string, boolean> = { true: true, yes: true, 1: true, false: false, no: false, 0: false, '': false }

/** One data row checked against the contact's bounds: what it sets, or why it is skipped. @internal exported for its tests */
export function checkImportRow (record: string[], columns: ImportColumns): ImportRow | { reason: string } {
  if (record.length > columns.count) return { reason: `the row has ${record.length} cells, the header names ${columns.count} columns` }
  const cell = (index: number | undefined): string => index === undefined ? '' : storableText((record[index] ?? '').trim())
  const rawPhone = cell(columns.phone)
  if (rawPhone === '') return { reason: 'phone is missing' }
  let phone: string
  try {
    phone = normalizePhone(rawPhone)
  } catch {
    return { reason: 'phone is not a phone number in international format' }
  }
  const name = cell(columns.name)
  if (name.length > CONTACT_BOUNDS.nameChars) return { reason: `name is longer than ${CONTACT_BOUNDS.nameChars} characters` }
  const labels = [...new Set(cell(columns.labels).split(';').map((label) => label.trim()).filter((label) => label !== ''))]
  if (labels.length > CONTACT_BOUNDS.labels) return { reason: `more than ${CONTACT_BOUNDS.labels} labels` }
  const long = labels.find((label) => label.length > CONTACT_BOUNDS.labelChars)
  if (long !== undefined) return { reason: `label ${long.slice(0, 60)}… is longer than ${CONTACT_BOUNDS.labelChars} characters` }
  const optedOut = OPTED_OUT_VALUES[cell(columns.optedOut).toLowerCase()]
  if (optedOut === undefined) return { reason: 'optedOut must be true or false (yes or no, 1 or 0)' }
  const attributes: Record<string, string> = {}
  for (const { index, name: attribute } of columns.attributes) {
    const value = cell(index)
    if (value.length > CONTACT_BOUNDS.attributeValueChars) return { reason: `attr.${attribute} is longer than ${CONTACT_BOUNDS.attributeValueChars} characters` }
    // defineProperty: an attribute named __proto__ is an attribute like any other.
    if (value !== '') Object.defineProperty(attributes, attribute, { value, enumerable: true, writable: true, configurable: true })
  }
  return { phone, ...(name !== '' && { name }), labels, optedOut, attributes }
}

// A type, not an interface: rows of db.execute are records.
type Stored = {
  name: string | null
  labels: string[]
  attributes: Record<string, string>
}

/** What a row makes of its contact: its name when it has one, its labels added, its attributes set; or why not, past a bound. */
function merged (contact: Stored, row: ImportRow): Stored | { reason: string } {
  const labels = [...new Set([...contact.labels, ...row.labels])]
  if (labels.length > CONTACT_BOUNDS.labels) return { reason: `the contact would have more than ${CONTACT_BOUNDS.labels} labels` }
  const attributes = { ...contact.attributes }
  for (const [key, value] of Object.entries(row.attributes)) Object.defineProperty(attributes, key, { value, enumerable: true, writable: true, configurable: true })
  if (Object.keys(attributes).length > CONTACT_BOUNDS.attributes) return { reason: `the contact would have more than ${CONTACT_BOUNDS.attributes} attributes` }
  return { name: row.name ?? contact.name, labels, attributes }
}

interface Pending extends Stored {
  id: string
  phone: string
  optedOut: boolean
}

/**
 * Imports the contacts of a CSV (README, Contacts and consent) into a platform number's, read as it
 * streams, BATCH_ROWS rows per statement: a row adds its contact or changes it (a name when it has
 * one, labels added, attributes set), `optedOut` true opts the contact out (source `import`); an
 * import never ends an opt-out. A bad row is skipped with its reason. A file the parser cannot read
 * on (a quote never closed, a row over its bound) ends the import at that line, the rows before it
 * written. Errors of `source` itself (the api's body limit) are thrown as they are.
 */
export async function importContacts (db: DbOrTx, phoneNumberId: string, source: Readable): Promise<ImportResult> {
  const result: ImportResult = { imported: 0, updated: 0, skipped: [], skippedCount: 0, ignoredColumns: [] }
  const skip = (line: number, reason: string): void => {
    result.skippedCount++
    if (result.skipped.length < CONTACTS_IMPORT_BOUNDS.skippedListed) result.skipped.push({ line, reason })
  }
  let batch: Array<{ line: number, row: ImportRow }> = []

  async function write (): Promise<void> {
    if (batch.length === 0) return
    const rows = batch
    batch = []
    // One probe of the unique index per phone, whatever plan the prepared statement keeps (the
    // `limit` keeps the lookup a subquery the planner cannot turn into a join): with
    // `phone = any(…)`, the generic plan made while the table was small scanned it whole on every
    // batch, and 100,000 rows took minutes (docs/decisions.md, "Contacts import"). `phone <> ''` is the
    // index's own predicate (README, Customers known by username): without it the planner cannot use it.
    const existing = await db.execute<Stored & { phone: string }>(sql`
      select contact.phone, contact.name, contact.labels, contact.attributes
      from unnest(${textArray([...new Set(rows.map(({ row }) => row.phone))])}) as wanted(phone)
      join lateral (select phone, name, labels, attributes from chat_contacts
        where phone_number_id = ${phoneNumberId} and phone = wanted.phone and phone <> '' limit 1) contact on true`)
    const stored = new Map<string, Stored>(existing.map(({ phone, ...contact }) => [phone, contact]))
    const pending = new Map<string, Pending>()
    for (const { line, row } of rows) {
      const before = pending.get(row.phone) ?? stored.get(row.phone)
      const after = merged(before ?? { name: null, labels: [], attributes: {} }, row)
      if ('reason' in after) { skip(line, after.reason); continue }
      if (before === undefined) result.imported++
      else result.updated++
      pending.set(row.phone, { id: createId(), phone: row.phone, ...after, optedOut: row.optedOut || (pending.get(row.phone)?.optedOut ?? false) })
    }
    if (pending.size === 0) return
    await db.execute(sql`
      insert into chat_contacts (id, phone_number_id, phone, name, labels, attributes, opted_out, consent_changed_at, consent_source)
      select r.id, ${phoneNumberId}, r.phone, r.name, r.labels, r.attributes, r."optedOut",
        case when r."optedOut" then now() end, case when r."optedOut" then 'import' end
      from jsonb_to_recordset(${jsonb([...pending.values()])}) as r(id text, phone text, name text, labels text[], attributes jsonb, "optedOut" boolean)
      on conflict (phone_number_id, phone) where phone <> '' do update set name = excluded.name, labels = excluded.labels, attributes = excluded.attributes,
        opted_out = chat_contacts.opted_out or excluded.opted_out,
        consent_changed_at = case when excluded.opted_out and not chat_contacts.opted_out then now() else chat_contacts.consent_changed_at end,
        consent_source = case when excluded.opted_out and not chat_contacts.opted_out then 'import' else chat_contacts.consent_source end,
        updated_at = now()`)
  }

  let columns: ImportColumns | undefined
  let rows = 0
  let line = 0
  /** One record in file order; false once the row bound is passed. */
  async function take (record: string[], recordLine: number): Promise<boolean> {
    line = recordLine
    if (columns === undefined) {
      columns = importColumns(record)
      result.ignoredColumns = columns.ignored
      return true
    }
    if (++rows > CONTACTS_IMPORT_BOUNDS.rows) {
      skip(line, `beyond ${CONTACTS_IMPORT_BOUNDS.rows} rows: this row and the rest of the file were not imported`)
      return false
    }
    const checked = checkImportRow(record, columns)
    if ('reason' in checked) skip(line, checked.reason)
    else batch.push({ line, row: checked })
    if (batch.length >= BATCH_ROWS) await write()
    return true
  }

  // Records are also kept here as they are parsed: when the parser fails, the stream drops what it
  // parsed of that chunk before the failure, and those rows are still taken.
  const parsed: Array<{ record: string[], line: number }> = []
  const parser = parse({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: CONTACTS_IMPORT_BOUNDS.rowBytes,
    on_record: (record: string[], { lines }) => { parsed.push({ record, line: lines }); return record }
  })
  source.on('error', (err) => parser.destroy(err))
  let going = true
  let unreadable: CsvError | undefined
  try {
    for await (const record of source.pipe(parser) as AsyncIterable<string[]>) {
      const { line: recordLine } = parsed.shift()!
      if (!(going = await take(record, recordLine))) break
    }
  } catch (err) {
    if (!isCsvError(err)) throw err
    unreadable = err
  }
  for (const next of going ? parsed.splice(0) : []) {
    if (!await take(next.record, next.line)) break
  }
  if (unreadable !== undefined) {
    if (columns === undefined) throw invalidFile(`The CSV cannot be read: ${unreadable.message}`)
    skip(line + 1, `the CSV cannot be read from here (${unreadable.message}): the rows after line ${line} were not imported`)
  }
  if (columns === undefined) throw invalidFile(`The CSV is empty (${COLUMNS_HELP})`)
  await write()
  return result
}

const isCsvError = (err: unknown): err is CsvError =>
  err instanceof Error && String((err as { code?: unknown }).code).startsWith('CSV_')
