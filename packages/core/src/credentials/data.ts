import type { CredentialType } from '../db/schema/credentials.ts'
import { decryptSecret, encryptSecret, type Keyring } from '../encryption.ts'
import { DomainError } from '../errors.ts'
import { MAX_MASKED_CHARACTERS, MIN_MASKED_LENGTH, maskedCharacters } from './redaction.ts'

/** A credential's secret fields, as written and as decrypted: field name → value. */
export type CredentialData = Record<string, string>

/** The fields each type holds; a `generic` credential names its own. */
const TYPE_FIELDS: Record<Exclude<CredentialType, 'generic'>, readonly string[]> = {
  bearer: ['token'],
  basic: ['username', 'password'],
  header: ['name', 'value'],
  hmac: ['secret'],
  mcp: ['url', 'headers']
}

/** Bounds on `data` (README, Credentials). */
const MAX_GENERIC_FIELDS = 20
const MAX_VALUE_LENGTH = 8192
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/
/** RFC 9110 token: what a header name may be. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/
/** Values that travel in a request header: CR, LF and NUL would split or break it. */
const HEADER_UNSAFE = /[\r\n\0]/

/** Bounds of an mcp credential (README, MCP client): its url's length, its headers' count. */
const MCP_URL_MAX_LENGTH = 2048
const MCP_MAX_HEADERS = 20
/**
 * Headers the MCP transport writes itself (the body's type and framing, what it accepts, its
 * session and protocol version): one set by the credential would break the exchange.
 */
const MCP_TRANSPORT_HEADERS: ReadonlySet<string> = new Set([
  'accept', 'connection', 'content-length', 'content-type', 'host', 'last-event-id', 'mcp-protocol-version', 'mcp-session-id', 'transfer-encoding'
])

const invalid = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)

/** Fields that name rather than hide: a header credential's header name, a basic credential's user name. */
const isIdentifier = (type: CredentialType, field: string): boolean =>
  (type === 'header' && field === 'name') || (type === 'basic' && field === 'username')

/** An mcp credential's headers: optional, and JSON text whose values are checked one by one (checkMcpHeaders). */
const isHeaderMap = (type: CredentialType, field: string): boolean => type === 'mcp' && field === 'headers'

/** The header values of an mcp credential's `headers` (a JSON object's text, checked when saved). */
const mcpHeaderValues = (data: Readonly<CredentialData>): string[] =>
  data.headers === undefined ? [] : Object.values(JSON.parse(data.headers) as Record<string, string>)

/**
 * The values to keep out of what a node stores: every field but a header credential's name, and
 * the basic Authorization value. A user name is masked too when it is long enough. An mcp
 * credential's url (its path or query may carry a token) and headers' text are fields like any
 * other, and each header value is masked on its own, as the transport sends it.
 */
export function secretValues (type: CredentialType, data: Readonly<CredentialData>): string[] {
  const values = Object.entries(data).filter(([field]) => !(type === 'header' && field === 'name')).map(([, value]) => value)
  if (type === 'basic') values.push(Buffer.from(`${data.username}:${data.password}`).toString('base64'))
  if (type === 'mcp') values.push(...mcpHeaderValues(data))
  return values
}

/** An mcp credential's url: http or https, without user info (a token goes in headers, or in the path or query). */
function checkMcpUrl (text: string): void {
  if (text.length > MCP_URL_MAX_LENGTH) throw invalid(`data.url must be at most ${MCP_URL_MAX_LENGTH} characters`)
  const url = URL.parse(text)
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw invalid('data.url must be an http or https URL')
  if (url.username !== '' || url.password !== '') throw invalid('data.url must not hold a user name or password: send them in headers')
}

/**
 * An mcp credential's `headers`: the text of a JSON object of 1 to MCP_MAX_HEADERS header names
 * (RFC 9110 tokens, each once whatever its case, none the transport writes) to text values that
 * fit in a header (no CR, LF or NUL) and can be masked (at least MIN_MASKED_LENGTH characters).
 * Messages name the header, never its value.
 */
function checkMcpHeaders (text: string): void {
  let headers: unknown
  try {
    headers = JSON.parse(text)
  } catch {
    headers = undefined
  }
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) {
    throw invalid('data.headers must be the text of a JSON object of header names to values, e.g. {"Authorization": "Bearer …"}')
  }
  const entries = Object.entries(headers)
  if (entries.length === 0 || entries.length > MCP_MAX_HEADERS) throw invalid(`data.headers must hold 1 to ${MCP_MAX_HEADERS} headers`)
  const seen = new Set<string>()
  for (const [name, value] of entries) {
    const shown = name.slice(0, 100)
    if (!HEADER_NAME.test(name)) throw invalid(`data.headers: ${JSON.stringify(shown)} is not a header name`)
    const lower = name.toLowerCase()
    if (seen.has(lower)) throw invalid(`data.headers names ${shown} more than once`)
    seen.add(lower)
    if (MCP_TRANSPORT_HEADERS.has(lower)) throw invalid(`data.headers cannot set ${shown}: the MCP transport writes it`)
    if (typeof value !== 'string' || value.length === 0) throw invalid(`data.headers.${shown} must be text`)
    if (HEADER_UNSAFE.test(value)) throw invalid(`data.headers.${shown} must not contain line breaks or NUL`)
    if (value.length < MIN_MASKED_LENGTH) {
      throw invalid(`data.headers.${shown} must be at least ${MIN_MASKED_LENGTH} characters: shorter values cannot be masked in what runs store`)
    }
  }
}

/**
 * Checks `data` against the fields of `type` and returns what is stored: the type's fields
 * only (others are dropped, like unknown body fields), each a non-empty string of at most
 * MAX_VALUE_LENGTH characters, secrets at least MIN_MASKED_LENGTH (a shorter value could not be
 * masked in what runs store), all of them together masked in at most MAX_MASKED_CHARACTERS.
 * Messages name the field, never its value.
 */
function validateCredentialData (type: CredentialType, data: Record<string, unknown>): CredentialData {
  const names = type === 'generic' ? Object.keys(data) : TYPE_FIELDS[type]
  if (type === 'generic') {
    if (names.length === 0 || names.length > MAX_GENERIC_FIELDS) throw invalid(`data must hold 1 to ${MAX_GENERIC_FIELDS} fields`)
    const bad = names.find((name) => !FIELD_NAME.test(name))
    if (bad !== undefined) throw invalid(`data field names are 1 to 64 letters, digits, _ and -, starting with a letter or _: ${bad.slice(0, 64)}`)
  }
  const stored: CredentialData = {}
  for (const name of names) {
    const value = data[name]
    if ((value === undefined || value === null) && isHeaderMap(type, name)) continue
    if (value === undefined || value === null) throw invalid(`data.${name} is required`)
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_VALUE_LENGTH) {
      throw invalid(`data.${name} must be a string of 1 to ${MAX_VALUE_LENGTH} characters`)
    }
    if (value.length < MIN_MASKED_LENGTH && !isIdentifier(type, name) && !isHeaderMap(type, name)) {
      throw invalid(`data.${name} must be at least ${MIN_MASKED_LENGTH} characters: shorter values cannot be masked in what runs store`)
    }
    stored[name] = value
  }
  if (type === 'header' && !HEADER_NAME.test(stored.name!)) throw invalid('data.name must be a header name')
  if (type === 'basic' && stored.username!.includes(':')) throw invalid('data.username must not contain :')
  if (type !== 'generic' && type !== 'hmac') {
    const unsafe = Object.keys(stored).find((name) => !isHeaderMap(type, name) && HEADER_UNSAFE.test(stored[name]!))
    if (unsafe !== undefined) throw invalid(`data.${unsafe} must not contain line breaks or NUL`)
  }
  if (type === 'mcp') {
    checkMcpUrl(stored.url!)
    if (stored.headers !== undefined) checkMcpHeaders(stored.headers)
  }
  const masked = maskedCharacters(secretValues(type, stored))
  if (masked > MAX_MASKED_CHARACTERS) {
    throw invalid(`data is too long to mask: its values take ${masked} characters in the forms runs mask, at most ${MAX_MASKED_CHARACTERS}`)
  }
  return stored
}

/** What is stored of `data`: the names of its fields, and the checked fields as encrypted JSON. */
export function sealCredentialData (keyring: Keyring, type: CredentialType, data: Record<string, unknown>): { fields: string[], dataEncrypted: string } {
  const valid = validateCredentialData(type, data)
  return { fields: Object.keys(valid), dataEncrypted: encryptSecret(keyring, JSON.stringify(valid)) }
}

/** The fields of a stored credential, decrypted (only for a node about to use them). */
export const openCredentialData = (keyring: Keyring, dataEncrypted: string): CredentialData =>
  JSON.parse(decryptSecret(keyring, dataEncrypted)) as CredentialData
