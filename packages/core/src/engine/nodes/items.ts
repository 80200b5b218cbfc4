import { Type } from 'typebox'
import { getPath } from '../template.ts'
import { parsePath } from '../template-syntax.ts'
import { NodeError } from '../types.ts'
import { templated } from './definition.ts'

/**
 * The most items a data node (filter, sort, aggregate, split, dedupe) takes in one list: a pure
 * node runs in memory between checkpoints, so its work has to stay small.
 */
export const MAX_ITEMS = 10_000

/** The longest path within an item (`customer.address.city`). */
const PATH_MAX_LENGTH = 200

/** A list of items, usually a template (`{{n1.body.orders}}`) that renders to one. */
export const itemsField = (description: string) =>
  templated(Type.Array(Type.Unknown(), { maxItems: MAX_ITEMS, description }))

/** A path within an item (`customer.name`, `lines[0].sku`). */
export const pathField = (description: string) =>
  Type.String({ minLength: 1, maxLength: PATH_MAX_LENGTH, description })

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** What a value is, for an error that says what was found instead. */
export function kindOf (value: unknown): string {
  if (value === undefined || value === null || value === '') return 'empty'
  if (Array.isArray(value)) return 'a list'
  if (typeof value === 'object') return 'an object'
  if (typeof value === 'string') return 'text'
  return `a ${typeof value}`
}

/** The template a field was written as, to show beside what it rendered to. */
function writtenAs (rawConfig: Record<string, unknown>, field: string): string {
  const raw = rawConfig[field]
  return typeof raw === 'string' && raw.includes('{{') ? ` (${raw.slice(0, 200)})` : ''
}

/** A list in `config[field]` of at most `max` elements. */
export function readList (config: Record<string, unknown>, rawConfig: Record<string, unknown>, field: string, max = MAX_ITEMS): unknown[] {
  const value = config[field]
  if (!Array.isArray(value)) {
    throw new NodeError(`${field} must be a list (an array), but it is ${kindOf(value)}${writtenAs(rawConfig, field)}`)
  }
  if (value.length > max) throw new NodeError(`${field} has ${value.length} items, more than ${max}`)
  return value
}

/** The objects of a list of settings (`conditions`, `by`, `operations`), each named in errors as `field[i]`. */
export function readSettings (config: Record<string, unknown>, rawConfig: Record<string, unknown>, field: string, max: number): Array<Record<string, unknown>> {
  const list = readList(config, rawConfig, field, max)
  if (list.length === 0) throw new NodeError(`${field} needs at least one entry`)
  return list.map((entry, i) => {
    if (!isRecord(entry)) throw new NodeError(`${field}[${i}] must be an object, but it is ${kindOf(entry)}`)
    return entry
  })
}

/** An optional path in `entry[key]`; absent means the item itself. `name` is how errors name it. */
export function readPath (entry: Record<string, unknown>, key: string, name: string): string | undefined {
  const value = entry[key]
  if (value === undefined || value === null || value === '') return undefined
  if (typeof value !== 'string' || value.length > PATH_MAX_LENGTH || parsePath(value).length === 0) {
    throw new NodeError(`${name} must be a path within an item (customer.name) of at most ${PATH_MAX_LENGTH} characters`)
  }
  return value
}

/** The value at `path` within `item`, or the item itself without a path. */
export const pick = (item: unknown, path: string | undefined): unknown => path === undefined ? item : getPath(item, path)

const DECIMAL = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/

/**
 * A value as a number: a JSON number, or text holding a decimal number (`"12.50"`, as JSON
 * bodies often carry amounts), as the condition node compares them; otherwise undefined.
 */
export function numberOf (value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined
  if (typeof value !== 'string' || !DECIMAL.test(value)) return undefined
  const number = Number(value)
  return Number.isFinite(number) ? number : undefined
}

/** JSON text with the keys of every object sorted, so that equal values written in another order match. */
export const canonicalJson = (value: unknown): string => JSON.stringify(value ?? null, (_key, inner: unknown) =>
  isRecord(inner) ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)) : inner)
