import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { checkLiteralMatchPattern, CONDITION_OPERATORS, isConditionOperator, operatorField, testCondition, type ConditionOperator } from './condition.ts'
import { optionalChoice } from './config.ts'
import { defineNode, oneOfAnyCase, PURE_TRAITS, templated } from './definition.ts'
import { itemsField, pathField, pick, readList, readPath, readSettings } from './items.ts'

const MAX_CONDITIONS = 50
const COMBINE = ['all', 'any'] as const

interface Test {
  name: string
  field: string | undefined
  operator: ConditionOperator | undefined
  expected: unknown
}

function readOperator (operator: unknown, name: string): ConditionOperator | undefined {
  if (operator === undefined || operator === null || operator === '') return undefined
  if (typeof operator === 'string' && isConditionOperator(operator)) return operator
  throw new NodeError(`${name} must be one of ${CONDITION_OPERATORS.join(', ')}`)
}

/** The conditions as rendered, each checked: a `matches` pattern once, before any item. */
function readTests (config: Record<string, unknown>, rawConfig: Record<string, unknown>): Test[] {
  return readSettings(config, rawConfig, 'conditions', MAX_CONDITIONS).map((entry, i) => {
    const name = `conditions[${i}]`
    const operator = readOperator(entry.operator, `${name}.operator`)
    try {
      checkLiteralMatchPattern(operator, entry.value)
    } catch (err) {
      throw new NodeError(`${name}.${(err as Error).message}`)
    }
    return { name, field: readPath(entry, 'field', `${name}.field`), operator, expected: entry.value }
  })
}

/**
 * Keeps the items that pass its conditions, each tested as the condition node tests its field
 * (./condition.ts), on a path within the item.
 */
export const filter = defineNode({
  type: 'filter',
  category: 'Data',
  description: 'Keeps the items of a list that pass its conditions (the condition node’s operators, on a field of each item).',
  config: {
    items: itemsField('The list to filter (at most 10,000 items), usually a template: {{n1.body.orders}}.'),
    conditions: Type.Array(Type.Object({
      field: Type.Optional(pathField('A path within each item (customer.tier); absent: the item itself.')),
      operator: operatorField('How the field is tested against value; absent: the field is truthy. gt, gte, lt, lte order values as the condition node does: numbers, decimal texts and ISO 8601 timestamps; anything else makes them false.'),
      value: Type.Optional(Type.Unknown({ description: 'What the field is compared with (a list for in, an RE2 pattern for matches).' }))
    }), { minItems: 1, maxItems: MAX_CONDITIONS, description: 'The tests each item must pass.' }),
    combine: Type.Optional(templated(oneOfAnyCase(COMBINE, { default: 'all', description: 'all: an item must pass every condition; any: at least one.' })))
  },
  example: { items: '{{triggerData.orders}}', conditions: [{ field: 'total', operator: 'gte', value: 100 }], combine: 'all' },
  traits: PURE_TRAITS,
  validate (config) {
    if (!Array.isArray(config.conditions)) return
    config.conditions.forEach((entry: unknown, i) => {
      if (typeof entry !== 'object' || entry === null) return
      const { operator, value } = entry as Record<string, unknown>
      try {
        checkLiteralMatchPattern(operator, value)
      } catch (err) {
        throw new Error(`conditions[${i}].${(err as Error).message}`)
      }
    })
  },
  async execute ({ config, rawConfig }) {
    const items = readList(config, rawConfig, 'items')
    const tests = readTests(config, rawConfig)
    const any = optionalChoice(config, 'combine', COMBINE) === 'any'
    const passes = (item: unknown, index: number): boolean => {
      const passed = ({ name, field, operator, expected }: Test): boolean => {
        try {
          return testCondition(operator, pick(item, field), expected)
        } catch (err) {
          throw new NodeError(`${name} on items[${index}]: ${(err as Error).message}`)
        }
      }
      return any ? tests.some(passed) : tests.every(passed)
    }
    const kept = items.filter(passes)
    return { output: { items: kept, count: kept.length, removed: items.length - kept.length } }
  }
})
