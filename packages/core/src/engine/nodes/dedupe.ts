import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { defineNode, PURE_TRAITS } from './definition.ts'
import { canonicalJson, itemsField, kindOf, pathField, pick, readList, readPath } from './items.ts'

const MAX_FIELDS = 20

function readFields (config: Record<string, unknown>): string[] | undefined {
  const { fields } = config
  if (fields === undefined || fields === null) return undefined
  if (!Array.isArray(fields)) throw new NodeError(`fields must be a list of paths within an item, but it is ${kindOf(fields)}`)
  if (fields.length > MAX_FIELDS) throw new NodeError(`fields has ${fields.length} paths, more than ${MAX_FIELDS}`)
  if (fields.length === 0) return undefined
  return fields.map((field, i) => {
    const path = readPath({ field }, 'field', `fields[${i}]`)
    if (path === undefined) throw new NodeError(`fields[${i}] is empty: give a path within an item (email)`)
    return path
  })
}

/**
 * Keeps the first item of each key. Keys are compared as JSON text with object keys sorted, so
 * `{a, b}` and `{b, a}` are one key, and a missing field is the same as null.
 */
export const dedupe = defineNode({
  type: 'dedupe',
  category: 'Data',
  description: 'Removes repeated items from a list, keeping the first: items are the same when the fields given (or the whole items) are equal.',
  config: {
    items: itemsField('The list (at most 10,000 items), usually a template: {{n1.items}}.'),
    fields: Type.Optional(Type.Array(pathField('A path within each item (email).'), { maxItems: MAX_FIELDS, description: 'What makes two items the same; absent or empty: the whole item.' }))
  },
  example: { items: '{{n1.items}}', fields: ['email'] },
  traits: PURE_TRAITS,
  async execute ({ config, rawConfig }) {
    const items = readList(config, rawConfig, 'items')
    const fields = readFields(config)
    const seen = new Set<string>()
    const kept = items.filter((item) => {
      const key = canonicalJson(fields === undefined ? item : fields.map((field) => pick(item, field) ?? null))
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
    return { output: { items: kept, removed: items.length - kept.length } }
  }
})
