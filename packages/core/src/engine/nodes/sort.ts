import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { optionalChoice } from './config.ts'
import { defineNode, oneOfAnyCase, PURE_TRAITS, templated } from './definition.ts'
import { canonicalJson, itemsField, kindOf, numberOf, pathField, pick, readList, readPath, readSettings } from './items.ts'

const MAX_KEYS = 10
const ORDERS = ['asc', 'desc'] as const

interface SortKey {
  field: string | undefined
  descending: boolean
}

function readKeys (config: Record<string, unknown>, rawConfig: Record<string, unknown>): SortKey[] {
  const { by } = config
  if (by === undefined || by === null || by === '') return [{ field: undefined, descending: false }]
  if (typeof by === 'string') return [{ field: readPath(config, 'by', 'by'), descending: false }]
  if (!Array.isArray(by)) throw new NodeError(`by must be a field or a list of { field, order }, but it is ${kindOf(by)}`)
  return readSettings(config, rawConfig, 'by', MAX_KEYS).map((entry, i) => ({
    field: readPath(entry, 'field', `by[${i}].field`),
    descending: optionalChoice(entry, 'order', ORDERS, `by[${i}].order`) === 'desc'
  }))
}

/**
 * How one value sorts: numbers (and decimal text) by value, then other text by its UTF-16 code
 * units (the same everywhere, unlike a locale's order), then false and true, then lists and objects
 * by their JSON text. Missing values (absent or null) have no rank: they go last in either order.
 */
type Rank = [kind: number, value: number | string] | undefined

function rankOf (value: unknown): Rank {
  if (value === undefined || value === null) return undefined
  const number = numberOf(value)
  if (number !== undefined) return [0, number]
  if (typeof value === 'string') return [1, value]
  if (typeof value === 'boolean') return [2, Number(value)]
  return [3, canonicalJson(value)]
}

function compareRanks (a: Rank, b: Rank, descending: boolean): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? 1 : -1
  const order = a[0] !== b[0] ? a[0] - b[0] : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0
  return descending ? -order : order
}

/** Sorts a list by fields of its items; stable, so items that compare equal keep their order. */
export const sort = defineNode({
  type: 'sort',
  category: 'Data',
  description: 'Sorts a list by fields of its items: numbers (and decimal text) by value, other text by character codes, missing values last; stable.',
  config: {
    items: itemsField('The list to sort (at most 10,000 items), usually a template: {{n1.items}}.'),
    by: Type.Optional(Type.Union([
      pathField('One path within each item, ascending.'),
      Type.Array(Type.Object({
        field: Type.Optional(pathField('A path within each item (customer.name); absent: the item itself.')),
        order: Type.Optional(templated(oneOfAnyCase(ORDERS, { default: 'asc', description: 'asc: smallest first; desc: largest first.' })))
      }), { minItems: 1, maxItems: MAX_KEYS })
    ], { description: 'What to sort by: a path, or a list of { field, order }, the first deciding first; absent: the items themselves.' }))
  },
  example: { items: '{{triggerData.orders}}', by: [{ field: 'total', order: 'desc' }, { field: 'id' }] },
  traits: PURE_TRAITS,
  async execute ({ config, rawConfig }) {
    const items = readList(config, rawConfig, 'items')
    const keys = readKeys(config, rawConfig)
    const ranked = items.map((item) => ({ item, ranks: keys.map(({ field }) => rankOf(pick(item, field))) }))
    ranked.sort((a, b) => {
      for (let i = 0; i < keys.length; i++) {
        const order = compareRanks(a.ranks[i], b.ranks[i], keys[i]!.descending)
        if (order !== 0) return order
      }
      return 0
    })
    return { output: { items: ranked.map(({ item }) => item) } }
  }
})
