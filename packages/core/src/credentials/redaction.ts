import { domainToASCII } from 'node:url'

/** What stands where a credential value would have been stored, logged or answered. */
export const CREDENTIAL_MARKER = '[credential]'

/**
 * The shortest value masked wherever it occurs (README, Credentials). A shorter one would mask
 * ordinary text and make the output longer than its input; values this short are refused at
 * save (data.ts), and those stored before are masked only where a whole string equals them.
 */
export const MIN_MASKED_LENGTH = 8

/**
 * The most characters of masked forms (every value the node can see, in every form) one node's
 * redactor is built from (README, Credentials): its automaton takes about 23 bytes and 0.2 µs to
 * build per character, and is built for every node that runs with credentials (docs/decisions.md).
 */
export const MAX_MASKED_CHARACTERS = 524_288

const utf8 = new TextEncoder()
const HEX = Array.from({ length: 256 }, (_, byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)

/**
 * `value` percent-encoded as UTF-8: controls, non-ASCII and the bytes `encodes` names become
 * `%XX`; with `spaceAsPlus`, a space becomes `+`. Lone surrogates encode as U+FFFD, as URLs do.
 */
function percentEncode (value: string, encodes: (byte: number) => boolean, spaceAsPlus = false): string {
  let encoded = ''
  for (const byte of utf8.encode(value)) {
    if (spaceAsPlus && byte === 0x20) encoded += '+'
    else if (byte < 0x20 || byte > 0x7e || encodes(byte)) encoded += HEX[byte]
    else encoded += String.fromCharCode(byte)
  }
  return encoded
}

const inSet = (characters: string) => {
  const set = new Set([...characters].map((char) => char.charCodeAt(0)))
  return (byte: number) => set.has(byte)
}
const outside = (kept: RegExp) => (byte: number) => !kept.test(String.fromCharCode(byte))

/** The WHATWG URL serializer's percent-encode sets (path, special query, userinfo), and the two encoders of JavaScript. */
const PATH_SET = inSet(' "#<>?`{}')
const SPECIAL_QUERY_SET = inSet(' "#\'<>')
const USERINFO_SET = inSet(' "#/:;<=>?@[\\]^`{|}')
const URI_COMPONENT_SET = outside(/[A-Za-z0-9\-_.!~*'()]/)
const FORM_SET = outside(/[A-Za-z0-9*\-_.]/)

/**
 * Every form a value takes on its way out of a node, where it could be echoed back: as written,
 * escaped inside JSON (with non-ASCII escaped too, as many servers write it), percent-encoded by
 * encodeURIComponent and by the URL parser in a path, a query or user info (a backslash there is
 * a slash), form-encoded (`+` for a space: URLSearchParams, also over a query it reads back),
 * and as a host name (lowercased, IDNA).
 */
function echoedForms (value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1)
  // A host name is at most 253 characters; an ASCII one is only lowercased.
  const host = value.length <= 253 && /[^\0-\x7f]/.test(value) ? domainToASCII(value) : ''
  return [
    value,
    json,
    json.replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`),
    percentEncode(value, URI_COMPONENT_SET),
    percentEncode(value.replaceAll('\\', '/'), PATH_SET),
    percentEncode(value, SPECIAL_QUERY_SET),
    percentEncode(value, USERINFO_SET),
    percentEncode(value, FORM_SET, true),
    // A query written in the URL, read again as a form (a `+` read as a space) when `query` adds to it.
    percentEncode(value.replaceAll('+', ' '), FORM_SET, true),
    value.toLowerCase(),
    ...(host === '' ? [] : [host])
  ]
}

const maskedForms = (values: readonly string[]): string[] =>
  [...new Set(values.filter((value) => value.length >= MIN_MASKED_LENGTH).flatMap(echoedForms))]

/** How many characters the masked forms of `values` take: what MAX_MASKED_CHARACTERS bounds. */
export const maskedCharacters = (values: readonly string[]): number =>
  maskedForms(values).reduce((sum, form) => sum + form.length, 0)

/**
 * An Aho–Corasick automaton of `forms`: a trie whose states are the forms' prefixes, each with
 * its failure link (the longest proper suffix that is also a prefix) and its output link (the
 * longest proper suffix that is a whole form). Typed arrays, children as sibling lists.
 */
function buildAutomaton (forms: readonly string[]) {
  const size = 1 + forms.reduce((sum, form) => sum + form.length, 0)
  const firstChild = new Int32Array(size).fill(-1)
  const nextSibling = new Int32Array(size).fill(-1)
  const code = new Uint16Array(size)
  const depth = new Int32Array(size)
  const fail = new Int32Array(size)
  const output = new Int32Array(size)
  const isForm = new Uint8Array(size)
  // The root has a child for most characters that start a form: an array indexed by character.
  const rootChild = new Int32Array(0x10000).fill(-1)
  const child = (state: number, char: number): number => {
    if (state === 0) return rootChild[char]!
    for (let next = firstChild[state]!; next !== -1; next = nextSibling[next]!) if (code[next] === char) return next
    return -1
  }
  let states = 1
  for (const form of forms) {
    let state = 0
    for (let i = 0; i < form.length; i++) {
      const char = form.charCodeAt(i)
      let next = child(state, char)
      if (next === -1) {
        next = states++
        code[next] = char
        depth[next] = depth[state]! + 1
        nextSibling[next] = firstChild[state]!
        firstChild[state] = next
        if (state === 0) rootChild[char] = next
      }
      state = next
    }
    isForm[state] = 1
  }
  // Breadth first, so that a state's failure link is complete before its children's.
  const queue = new Int32Array(states)
  let head = 0
  let tail = 0
  for (let next = firstChild[0]!; next !== -1; next = nextSibling[next]!) queue[tail++] = next
  while (head < tail) {
    const state = queue[head++]!
    const linked = fail[state]!
    output[state] = isForm[linked] === 1 ? linked : output[linked]!
    for (let next = firstChild[state]!; next !== -1; next = nextSibling[next]!) {
      let candidate = linked
      let target = child(candidate, code[next]!)
      while (target === -1 && candidate !== 0) {
        candidate = fail[candidate]!
        target = child(candidate, code[next]!)
      }
      fail[next] = target === -1 ? 0 : target
      queue[tail++] = next
    }
  }
  /** The state after reading `char` in `state`. */
  const step = (state: number, char: number): number => {
    let current = state
    for (;;) {
      const next = child(current, char)
      if (next !== -1) return next
      if (current === 0) return 0
      current = fail[current]!
    }
  }
  return { step, depth, output, isForm }
}

/**
 * A function that masks `forms` in a text in one pass over the original: at each place the
 * leftmost form that starts there, the longest of those that do, is replaced by the marker, and
 * the text continues after it. Time linear in the text (and in the forms that end at one place,
 * at most their count); the output is built from the original text only, so a marker is never
 * searched again, and it is never longer than the text plus one marker's growth per form masked.
 */
function createMasker (forms: readonly string[]): (text: string) => string {
  const { step, depth, output, isForm } = buildAutomaton(forms)
  return (text) => {
    // longest[s]: the length of the longest form that starts at s, found once it has ended.
    let longest: Int32Array | undefined
    const pieces: string[] = []
    let copied = 0
    let position = 0
    /** Decides every place before `settled`, where no form can start any more. */
    const settle = (settled: number): void => {
      while (position < settled) {
        const length = longest?.[position] ?? 0
        if (length > 0) {
          pieces.push(text.slice(copied, position), CREDENTIAL_MARKER)
          position += length
          copied = position
        } else {
          position++
        }
      }
    }
    let state = 0
    for (let i = 0; i < text.length; i++) {
      state = step(state, text.charCodeAt(i))
      for (let found = isForm[state] === 1 ? state : output[state]!; found !== 0; found = output[found]!) {
        // Longest first: the forms that start inside a masked stretch come first and are passed over.
        const start = i + 1 - depth[found]!
        if (start < position) continue
        longest ??= new Int32Array(text.length)
        if (depth[found]! > longest[start]!) longest[start] = depth[found]!
      }
      if (longest !== undefined) settle(i + 1 - depth[state]!)
    }
    if (longest === undefined) return text
    settle(text.length)
    pieces.push(text.slice(copied))
    return pieces.join('')
  }
}

/**
 * A function that returns its argument with every occurrence of the given secrets, in every
 * form of echoedForms, in every string inside it (object keys included), replaced by
 * CREDENTIAL_MARKER. Secrets shorter than MIN_MASKED_LENGTH are replaced only where a whole
 * string is one of their forms. Values that hold no secret come back as they were (the same
 * object), so a node without credentials costs nothing.
 */
export function createRedactor (secrets: readonly string[]): <T>(value: T) => T {
  const masked = maskedForms(secrets)
  const whole = new Set(secrets.filter((secret) => secret !== '' && secret.length < MIN_MASKED_LENGTH).flatMap(echoedForms))
  if (masked.length === 0 && whole.size === 0) return (value) => value
  const mask = masked.length === 0 ? (text: string) => text : createMasker(masked)
  const redactString = (text: string): string => whole.has(text) ? CREDENTIAL_MARKER : mask(text)
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
