import { isDeepStrictEqual } from 'node:util'
import { RE2JS } from 're2js'
import { getPath } from '../template.ts'
import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { optionalObject, optionalString } from './config.ts'
import { defineNode, PURE_TRAITS, templated } from './definition.ts'

const CONDITION_OPERATORS = [
  'equals', 'notEquals', 'contains', 'startsWith', 'exists', 'notExists',
  'gt', 'gte', 'lt', 'lte', 'in', 'matches'
] as const
type Operator = typeof CONDITION_OPERATORS[number]

const isOperator = (value: string): value is Operator => (CONDITION_OPERATORS as readonly string[]).includes(value)

/**
 * `matches` runs RE2 (re2js): time linear in the text matched, whatever the
 * pattern, so no backreferences or lookaround. Matching still costs the
 * pattern's compiled size times the text's length, hence the bounds.
 */
const MATCH_PATTERN_MAX_LENGTH = 1000
/** RE2 program instructions: counted repetition (`a{1000}`) is expanded, so length alone does not bound it. @internal exported for its tests */
export const MATCH_PROGRAM_MAX_SIZE = 500
/** @internal exported for its tests */
export const MATCH_SUBJECT_MAX_LENGTH = 65_536

/** Compiles a `matches` pattern; a NodeError says why one is refused. */
function compileMatchPattern (pattern: string): RE2JS {
  if (pattern.length > MATCH_PATTERN_MAX_LENGTH) {
    throw new NodeError(`value is not a usable regular expression: longer than ${MATCH_PATTERN_MAX_LENGTH} characters`)
  }
  let compiled: RE2JS
  try {
    compiled = RE2JS.compile(pattern)
  } catch (err) {
    const reason = err instanceof Error ? err.message.replace(/^error parsing regexp: /, '') : String(err)
    throw new NodeError(`value is not a valid regular expression (RE2 syntax): ${reason}`)
  }
  if (compiled.programSize() > MATCH_PROGRAM_MAX_SIZE) {
    throw new NodeError(`value is not a usable regular expression: it compiles to ${compiled.programSize()} instructions, more than ${MATCH_PROGRAM_MAX_SIZE}`)
  }
  return compiled
}

function matches (value: unknown, expected: unknown): boolean {
  const pattern = compileMatchPattern(String(expected ?? ''))
  if (value === undefined || value === null) return false
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value)
  if (text.length > MATCH_SUBJECT_MAX_LENGTH) {
    throw new NodeError(`field value is too long to match: more than ${MATCH_SUBJECT_MAX_LENGTH} characters`)
  }
  return pattern.test(text)
}

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
    case 'matches': return matches(value, expected)
  }
}

/**
 * Branches on a value of the run. `field` is a path into `result`
 * (`triggerData.body.event`) or a template. With `cases` it is a switch:
 * `cases[value]`, else `default`.
 */
export const condition = defineNode({
  type: 'condition',
  description: 'Branches: tests a value of the run and continues with then or else, or picks one of cases.',
  config: {
    field: Type.String({ minLength: 1, description: 'A path into the run (triggerData.body.event, n1.status), or a template.' }),
    operator: Type.Optional(templated(Type.Union(CONDITION_OPERATORS.map((name) => Type.Literal(name)), { description: 'How field is tested against value; absent: field is truthy.' }))),
    value: Type.Optional(Type.Unknown({ description: 'What field is compared with (a list for in, an RE2 pattern for matches).' })),
    then: Type.Optional(Type.String({ description: 'The node to continue with when the test passes.' })),
    else: Type.Optional(Type.String({ description: 'The node to continue with when it fails.' })),
    cases: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'A switch instead of a test: the value of field → the node to continue with.' })),
    default: Type.Optional(Type.String({ description: 'With cases: the node to continue with when no case matches.' }))
  },
  example: { field: 'triggerData.amount', operator: 'gt', value: 100, then: '', else: '' },
  traits: {
    ...PURE_TRAITS,
    links: [{ field: 'then', kind: 'node' }, { field: 'else', kind: 'node' }, { field: 'cases', kind: 'map' }, { field: 'default', kind: 'node' }]
  },
  // A pattern written as a template is known only when the node runs, and checked then.
  validate (config) {
    const pattern = config.value
    if (config.operator === 'matches' && (typeof pattern === 'number' || (typeof pattern === 'string' && !pattern.includes('{{')))) {
      compileMatchPattern(String(pattern))
    }
  },
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
})
