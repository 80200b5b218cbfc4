import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { optionalChoice } from './config.ts'
import { defineNode, oneOfAnyCase, PURE_TRAITS, templated } from './definition.ts'
import { kindOf, MAX_ITEMS, pathField, pick, readPath } from './items.ts'

const MODES = ['items', 'entries'] as const

/** The list (or, for entries, the object) the node splits: `value`, or the field within it; `name` says which. */
function source (config: Record<string, unknown>, rawConfig: Record<string, unknown>): { list: unknown, name: string } {
  const field = readPath(config, 'field', 'field')
  const { value } = config
  if (value === undefined || value === null || value === '') {
    const raw = rawConfig.value
    throw new NodeError(`value is required: the list to split${typeof raw === 'string' && raw.includes('{{') ? `, but ${raw.slice(0, 200)} is empty` : ''}`)
  }
  if (field === undefined) return { list: value, name: 'value' }
  const list = pick(value, field)
  if (list === undefined) throw new NodeError(`value has no field ${field}`)
  return { list, name: `value.${field}` }
}

/**
 * Turns a list inside the run's data into items for the data nodes after it (filter, sort,
 * aggregate, dedupe), or an object into its entries.
 */
export const split = defineNode({
  type: 'split',
  category: 'Data',
  description: 'Turns a list (or an object’s entries) into items for the nodes after it, optionally one field of each.',
  config: {
    value: templated(Type.Union([
      Type.Array(Type.Unknown(), { maxItems: MAX_ITEMS }),
      Type.Record(Type.String(), Type.Unknown())
    ], { description: 'The list or object, usually a template: {{triggerData.orders}}.' })),
    field: Type.Optional(pathField('A path within value to the list (body.orders); absent: value itself.')),
    pluck: Type.Optional(pathField('A path within each element: the items are those values (null where missing).')),
    mode: Type.Optional(templated(oneOfAnyCase(MODES, { default: 'items', description: 'items: the elements of a list; entries: an object’s { key, value } pairs.' })))
  },
  example: { value: '{{triggerData.orders}}', pluck: 'id' },
  traits: PURE_TRAITS,
  async execute ({ config, rawConfig }) {
    const { list, name } = source(config, rawConfig)
    const entries = optionalChoice(config, 'mode', MODES) === 'entries'
    let elements: unknown[]
    if (entries) {
      if (typeof list !== 'object' || list === null || Array.isArray(list)) throw new NodeError(`${name} must be an object to split into entries, but it is ${kindOf(list)}`)
      const keys = Object.keys(list)
      if (keys.length > MAX_ITEMS) throw new NodeError(`${name} has ${keys.length} entries, more than ${MAX_ITEMS}`)
      elements = keys.map((key) => ({ key, value: (list as Record<string, unknown>)[key] }))
    } else {
      if (!Array.isArray(list)) {
        const hint = typeof list === 'object' && list !== null ? ': set mode to entries to split an object' : ''
        throw new NodeError(`${name} must be a list (an array), but it is ${kindOf(list)}${hint}`)
      }
      if (list.length > MAX_ITEMS) throw new NodeError(`${name} has ${list.length} items, more than ${MAX_ITEMS}`)
      elements = list
    }
    const pluck = readPath(config, 'pluck', 'pluck')
    return { output: { items: pluck === undefined ? elements : elements.map((element) => pick(element, pluck) ?? null) } }
  }
})
