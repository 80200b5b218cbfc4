/** What stands where a credential value would have been stored, logged or answered. */
export const CREDENTIAL_MARKER = '[credential]'

/**
 * The forms a value takes where it could be echoed back: as written, escaped inside JSON text,
 * percent-encoded in a URL, and (basic) inside its Authorization header.
 */
function echoedForms (value: string): string[] {
  return [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)]
}

/**
 * A function that returns its argument with every occurrence of the given secrets, in every
 * string inside it (object keys included), replaced by CREDENTIAL_MARKER. Longer forms go
 * first, so a secret containing another is replaced whole. Values that hold no secret come
 * back as they were (the same object), so a node without credentials costs nothing.
 */
export function createRedactor (secrets: readonly string[]): <T>(value: T) => T {
  const forms = [...new Set(secrets.flatMap(echoedForms))].filter((form) => form !== '').sort((a, b) => b.length - a.length)
  if (forms.length === 0) return (value) => value
  const redactString = (text: string): string => {
    let redacted = text
    for (const form of forms) if (redacted.includes(form)) redacted = redacted.split(form).join(CREDENTIAL_MARKER)
    return redacted
  }
  const redact = (value: unknown): unknown => {
    if (typeof value === 'string') return redactString(value)
    if (Array.isArray(value)) {
      const items = value.map(redact)
      return items.every((item, i) => item === value[i]) ? value : items
    }
    if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value)) {
      let changed = false
      const entries = Object.entries(value).map(([key, item]) => {
        const redactedKey = redactString(key)
        const redactedItem = redact(item)
        if (redactedKey !== key || redactedItem !== item) changed = true
        return [redactedKey, redactedItem] as const
      })
      return changed ? Object.fromEntries(entries) : value
    }
    return value
  }
  return <T>(value: T): T => redact(value) as T
}
