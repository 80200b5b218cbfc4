import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { requiredChoice } from './config.ts'
import { defineNode, oneOfAnyCase, PURE_TRAITS } from './definition.ts'
import { canonicalJson, itemsField, numberOf, pathField, pick, readList, readPath, readSettings } from './items.ts'

const MAX_OPERATIONS = 50
const OPS = ['count', 'sum', 'min', 'max', 'avg'] as const
type Op = typeof OPS[number]
/** An output name is one path segment, so that later nodes read it as {{<node id>.<name>}}. */
const NAME_PATTERN = '^[A-Za-z0-9_-]+$'
const NAME = new RegExp(NAME_PATTERN)
const NAME_MAX_LENGTH = 64

interface Operation {
  op: Op
  field: string | undefined
  name: string
}

/** `as`, or the op and its field (`sum_customer_total`), or the op alone when it has no field. */
const defaultName = (op: string, field: string | undefined): string =>
  field === undefined ? op : `${op}_${field.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, NAME_MAX_LENGTH)

/**
 * Output names must differ from each other and from what every output has: `count` (the number of
 * items, which only a count without field may repeat) and a group's `key`.
 */
function checkNames (operations: ReadonlyArray<{ name: string, countsItems: boolean }>): void {
  const seen = new Set<string>()
  operations.forEach(({ name, countsItems }, i) => {
    if (name === 'key' || (name === 'count' && !countsItems)) {
      throw new NodeError(`operations[${i}] is named ${name}, which every ${name === 'key' ? 'group' : 'output'} has already: give it another name with as`)
    }
    if (seen.has(name)) throw new NodeError(`operations[${i}] is named ${name} like an operation before it: give it another name with as`)
    seen.add(name)
  })
}

function readOperations (config: Record<string, unknown>, rawConfig: Record<string, unknown>): Operation[] {
  const operations = readSettings(config, rawConfig, 'operations', MAX_OPERATIONS).map((entry, i) => {
    const op = requiredChoice(entry, 'op', OPS, `operations[${i}].op`)
    const field = readPath(entry, 'field', `operations[${i}].field`)
    const { as } = entry
    if (as !== undefined && as !== null && (typeof as !== 'string' || !NAME.test(as) || as.length > NAME_MAX_LENGTH)) {
      throw new NodeError(`operations[${i}].as must be a name of letters, digits, _ and - (at most ${NAME_MAX_LENGTH})`)
    }
    return { op, field, name: typeof as === 'string' ? as : defaultName(op, field) }
  })
  checkNames(operations.map(({ op, field, name }) => ({ name, countsItems: op === 'count' && field === undefined })))
  return operations
}

/** What one operation has seen of its items. */
class Tally {
  present = 0
  numbers = 0
  sum = 0
  min: number | undefined
  max: number | undefined

  add (value: unknown): void {
    if (value === undefined || value === null) return
    this.present++
    const number = numberOf(value)
    if (number === undefined) return
    this.numbers++
    this.sum += number
    if (this.min === undefined || number < this.min) this.min = number
    if (this.max === undefined || number > this.max) this.max = number
  }

  result (op: Op, items: number, field: string | undefined): number | null {
    switch (op) {
      case 'count': return field === undefined ? items : this.present
      case 'sum': return this.sum
      case 'min': return this.min ?? null
      case 'max': return this.max ?? null
      case 'avg': return this.numbers === 0 ? null : this.sum / this.numbers
    }
  }
}

class Group {
  count = 0
  constructor (readonly key: unknown, readonly tallies: Tally[]) {}
}

function summarise (group: Group, operations: readonly Operation[]): Record<string, unknown> {
  return Object.fromEntries(operations.map(({ op, field, name }, i) => [name, group.tallies[i]!.result(op, group.count, field)]))
}

/**
 * Counts, sums, averages, minima and maxima of a list's fields, over the whole list or per group.
 * Groups are at most as many as items, so 10,000 bounds them too.
 */
export const aggregate = defineNode({
  type: 'aggregate',
  category: 'Data',
  description: 'Counts, sums, averages, minima and maxima over a list, whole or grouped by a field. sum, avg, min and max skip values that are not numbers (decimal text counts as a number).',
  config: {
    items: itemsField('The list to aggregate (at most 10,000 items), usually a template: {{n1.items}}.'),
    operations: Type.Array(Type.Object({
      op: oneOfAnyCase(OPS, { description: 'count: items (with field: items that have it); sum, avg, min, max: of the field’s numbers; avg, min and max of none are null.' }),
      field: Type.Optional(pathField('A path within each item (total); absent: the item itself.')),
      as: Type.Optional(Type.String({ pattern: NAME_PATTERN, maxLength: NAME_MAX_LENGTH, description: 'The output name; default: op_field (sum_total), or op without field.' }))
    }), { minItems: 1, maxItems: MAX_OPERATIONS, description: 'What to compute.' }),
    groupBy: Type.Optional(pathField('A path within each item to group by: the output is then { groups: [{ key, count, ... }] }, in the order keys first appear.'))
  },
  example: { items: '{{n1.items}}', operations: [{ op: 'sum', field: 'total' }, { op: 'avg', field: 'total', as: 'average' }], groupBy: 'customer' },
  traits: PURE_TRAITS,
  validate (config) {
    if (!Array.isArray(config.operations)) return
    const entries = config.operations.filter((entry): entry is Record<string, unknown> => typeof entry === 'object' && entry !== null)
    // A field written as a template is known only when the node runs, and its name checked then.
    if (entries.some(({ field }) => typeof field === 'string' && field.includes('{{'))) return
    checkNames(entries.map(({ op, field, as }) => {
      const fieldPath = typeof field === 'string' && field !== '' ? field : undefined
      const opName = String(op).toLowerCase()
      return { name: typeof as === 'string' ? as : defaultName(opName, fieldPath), countsItems: opName === 'count' && fieldPath === undefined }
    }))
  },
  async execute ({ config, rawConfig }) {
    const items = readList(config, rawConfig, 'items')
    const operations = readOperations(config, rawConfig)
    const groupBy = readPath(config, 'groupBy', 'groupBy')
    const groups = new Map<string, Group>()
    for (const item of items) {
      const key = groupBy === undefined ? null : pick(item, groupBy) ?? null
      const id = canonicalJson(key)
      let group = groups.get(id)
      if (group === undefined) {
        group = new Group(key, operations.map(() => new Tally()))
        groups.set(id, group)
      }
      group.count++
      operations.forEach(({ field }, i) => { group.tallies[i]!.add(pick(item, field)) })
    }
    if (groupBy === undefined) {
      const whole = groups.get(canonicalJson(null)) ?? new Group(null, operations.map(() => new Tally()))
      return { output: { count: whole.count, ...summarise(whole, operations) } }
    }
    return { output: { groups: [...groups.values()].map((group) => ({ key: group.key, count: group.count, ...summarise(group, operations) })) } }
  }
})
