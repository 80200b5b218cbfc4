import { DateTime } from 'luxon'
import { NodeError } from './types.ts'

/**
 * Filters in placeholders (README, Templates): `{{triggerData.name | upper}}`,
 * `{{triggerData.note | default: 'none'}}`, `{{n1.items | length}}`, `{{n1.body | json}}`,
 * `{{triggerData.at | date: 'yyyy-MM-dd HH:mm', 'Europe/Paris'}}`. They only transform a value:
 * no code runs in a template (the `code` node is the place for code). Parsing is one pass over
 * the placeholder's text, and each filter is linear in the value it is given.
 */

/** Filters one placeholder may chain, and the longest argument: a template is written by hand. */
const MAX_FILTERS = 10
const MAX_ARGUMENT_LENGTH = 200

export interface TemplateFilter {
  name: FilterName
  args: Array<string | number>
}

const FILTERS = {
  upper: { args: 0, apply: (value: unknown) => textOf(value).toUpperCase() },
  lower: { args: 0, apply: (value: unknown) => textOf(value).toLowerCase() },
  trim: { args: 0, apply: (value: unknown) => textOf(value).trim() },
  /** The argument when the value is missing, null or empty text. */
  default: { args: 1, apply: (value: unknown, [fallback]: Array<string | number>) => value === undefined || value === null || value === '' ? fallback : value },
  json: { args: 0, apply: (value: unknown) => JSON.stringify(value ?? null) },
  /** Items of an array, characters of text, keys of an object; 0 for anything else. */
  length: {
    args: 0,
    apply: (value: unknown) => Array.isArray(value) || typeof value === 'string'
      ? value.length
      : value !== null && typeof value === 'object' ? Object.keys(value).length : 0
  },
  /** An ISO 8601 time or epoch milliseconds in a format (luxon's tokens), in a timezone (UTC by default). */
  date: { args: 2, apply: (value: unknown, [format, zone]: Array<string | number>) => formatDate(value, String(format), zone === undefined ? 'UTC' : String(zone)) }
} as const satisfies Record<string, { args: number, apply: (value: unknown, args: Array<string | number>) => unknown }>

type FilterName = keyof typeof FILTERS

const isFilterName = (name: string): name is FilterName => Object.hasOwn(FILTERS, name)

const textOf = (value: unknown): string =>
  value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value)

function formatDate (value: unknown, format: string, zone: string): string {
  if (value === undefined || value === null || value === '') return ''
  const time = typeof value === 'number' ? DateTime.fromMillis(value, { zone }) : DateTime.fromISO(String(value), { zone })
  if (!time.isValid) throw new NodeError(`date filter: ${String(value).slice(0, 100)} is not a time (${time.invalidExplanation ?? time.invalidReason})`)
  return time.toFormat(format)
}

/** Splits `a | b: 'x|y', 2` at the bars outside quotes. */
function splitOutsideQuotes (text: string, separator: string): string[] {
  const parts: string[] = []
  let quote: string | undefined
  let start = 0
  for (let i = 0; i < text.length; i++) {
    const char = text[i]
    if (quote !== undefined) {
      if (char === '\\') i++
      else if (char === quote) quote = undefined
    } else if (char === '\'' || char === '"') {
      quote = char
    } else if (char === separator) {
      parts.push(text.slice(start, i))
      start = i + 1
    }
  }
  if (quote !== undefined) throw new NodeError(`Template filter has an unclosed quote: ${text.slice(0, 100)}`)
  parts.push(text.slice(start))
  return parts
}

function parseArgument (text: string): string | number {
  const argument = text.trim()
  if (argument.length > MAX_ARGUMENT_LENGTH) throw new NodeError(`Template filter argument is longer than ${MAX_ARGUMENT_LENGTH} characters`)
  const quoted = /^(['"])(.*)\1$/s.exec(argument)
  if (quoted !== null) return quoted[2]!.replace(/\\(.)/g, '$1')
  const number = Number(argument)
  if (argument !== '' && Number.isFinite(number)) return number
  throw new NodeError(`Template filter argument must be quoted text or a number: ${argument.slice(0, 100)}`)
}

/** The filters of a placeholder, from the text after its path's first `|`; a NodeError says what is wrong. */
export function parseFilters (text: string): TemplateFilter[] {
  const parts = splitOutsideQuotes(text, '|')
  if (parts.length > MAX_FILTERS) throw new NodeError(`A placeholder may chain at most ${MAX_FILTERS} filters`)
  return parts.map((part) => {
    const colon = part.indexOf(':')
    const name = (colon === -1 ? part : part.slice(0, colon)).trim()
    if (!isFilterName(name)) throw new NodeError(`Unknown template filter: ${name.slice(0, 50)} (${Object.keys(FILTERS).join(', ')})`)
    const args = colon === -1 ? [] : splitOutsideQuotes(part.slice(colon + 1), ',').map(parseArgument)
    const takes = FILTERS[name].args
    if (args.length > takes || (name === 'default' && args.length !== 1) || (name === 'date' && args.length === 0)) {
      throw new NodeError(`Template filter ${name} takes ${name === 'date' ? 'a format and an optional timezone' : takes === 0 ? 'no argument' : 'one argument'}`)
    }
    if (name === 'date' && args[1] !== undefined && !DateTime.local().setZone(String(args[1])).isValid) {
      throw new NodeError(`Template filter date: unknown timezone ${String(args[1]).slice(0, 64)}`)
    }
    return { name, args }
  })
}

/** Whether the filters let a missing value through on purpose (`default`): then it is not reported missing. */
export const expectsMissing = (filters: readonly TemplateFilter[]): boolean => filters.some((filter) => filter.name === 'default')

export function applyFilters (value: unknown, filters: readonly TemplateFilter[]): unknown {
  let result = value
  for (const { name, args } of filters) result = FILTERS[name].apply(result, args)
  return result
}
