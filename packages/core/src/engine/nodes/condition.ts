import { isDeepStrictEqual } from 'node:util'
import { getPath } from '../template.ts'
import { NodeError, type NodeExecutor } from '../types.ts'
import { optionalObject, optionalString } from './config.ts'

export const CONDITION_OPERATORS = [
  'equals', 'notEquals', 'contains', 'startsWith', 'exists', 'notExists',
  'gt', 'gte', 'lt', 'lte', 'in', 'matches'
] as const
type Operator = typeof CONDITION_OPERATORS[number]

const isOperator = (value: string): value is Operator => (CONDITION_OPERATORS as readonly string[]).includes(value)

/**
 * Scalars of different types compare by their text, so that a number from a
 * JSON body equals the same number typed as text in the node's config.
 */
function equals (left: unknown, right: unknown): boolean {
  if (left === null || left === undefined || right === null || right === undefined) return left === right
  if (typeof left === 'object' || typeof right === 'object') return isDeepStrictEqual(left, right)
  return String(left) === String(right)
}

/** Numbers compare as numbers, anything else (ISO timestamps included) as text; undefined when a side is missing. */
function compare (left: unknown, right: unknown): number | undefined {
  if (left === null || left === undefined || right === null || right === undefined) return undefined
  const a = Number(left)
  const b = Number(right)
  if (left !== '' && right !== '' && Number.isFinite(a) && Number.isFinite(b)) return a - b
  const x = String(left)
  const y = String(right)
  return x < y ? -1 : x > y ? 1 : 0
}

function test (operator: Operator | undefined, value: unknown, expected: unknown): boolean {
  switch (operator) {
    case undefined: return Boolean(value)
    case 'equals': return equals(value, expected)
    case 'notEquals': return !equals(value, expected)
    case 'contains':
      if (Array.isArray(value)) return value.some((item) => equals(item, expected))
      return typeof value === 'string' && value.includes(String(expected ?? ''))
    case 'startsWith': return typeof value === 'string' && value.startsWith(String(expected ?? ''))
    case 'exists': return value !== undefined && value !== null
    case 'notExists': return value === undefined || value === null
    case 'gt': return (compare(value, expected) ?? Number.NaN) > 0
    case 'gte': return (compare(value, expected) ?? Number.NaN) >= 0
    case 'lt': return (compare(value, expected) ?? Number.NaN) < 0
    case 'lte': return (compare(value, expected) ?? Number.NaN) <= 0
    case 'in': {
      const list = Array.isArray(expected) ? expected : typeof expected === 'string' ? expected.split(',').map((item) => item.trim()) : []
      return list.some((item) => equals(value, item))
    }
    case 'matches': {
      let pattern: RegExp
      try {
        pattern = new RegExp(String(expected ?? ''))
      } catch {
        throw new NodeError(`value is not a valid regular expression: ${String(expected)}`)
      }
      return value !== undefined && value !== null && pattern.test(typeof value === 'object' ? JSON.stringify(value) : String(value))
    }
  }
}

/**
 * Branches on a value of the run. `field` is a path into `result`
 * (`triggerData.body.event`) or a template. With `cases` it is a switch:
 * `cases[value]`, else `default`.
 */
export const condition: NodeExecutor<'condition'> = {
  type: 'condition',
  async execute ({ config, rawConfig, result }) {
    const rawField = rawConfig.field
    if (typeof rawField !== 'string' || rawField.trim() === '') throw new NodeError('field is required')
    const value = rawField.includes('{{') ? config.field : getPath(result, rawField)

    const cases = optionalObject(config, 'cases')
    if (cases !== undefined) {
      const key = value === undefined || value === null ? undefined : typeof value === 'object' ? JSON.stringify(value) : String(value)
      const matched = key !== undefined && Object.hasOwn(cases, key)
      const next = matched ? cases[key] : config.default
      return {
        output: { field: rawField, value: value ?? null, matched, next: typeof next === 'string' ? next : null },
        next: typeof next === 'string' ? next : null,
        handles: matched ? [key] : ['default']
      }
    }

    const operatorName = optionalString(config, 'operator')
    if (operatorName !== undefined && !isOperator(operatorName)) {
      throw new NodeError(`operator must be one of ${CONDITION_OPERATORS.join(', ')}`)
    }
    const matched = test(operatorName, value, config.value)
    const next = matched ? config.then : config.else
    return {
      output: { field: rawField, value: value ?? null, matched, next: typeof next === 'string' ? next : null },
      next: typeof next === 'string' ? next : null,
      // A builder names a condition's two handles true/false or then/else.
      handles: matched ? ['true', 'then', 'yes'] : ['false', 'else', 'no']
    }
  }
}
