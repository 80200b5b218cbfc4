import { isDeepStrictEqual } from 'node:util'
import { RE2JS } from 're2js'
import { getPath } from '../template.ts'
import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { optionalObject, optionalString } from './config.ts'
import { numberOf } from './items.ts'
import { defineNode, PURE_TRAITS, templated } from './definition.ts'

/** How a value is tested against an expected one: the condition node's and the filter node's (./filter.ts). */
export const CONDITION_OPERATORS = [
  'equals', 'notEquals', 'contains', 'startsWith', 'exists', 'notExists',
  'gt', 'gte', 'lt', 'lte', 'in', 'matches'
] as const
export type ConditionOperator = typeof CONDITION_OPERATORS[number]

export const isConditionOperator = (value: string): value is ConditionOperator => (CONDITION_OPERATORS as readonly string[]).includes(value)

/** The operator field's schema: one of the operators, or a template. */
export const operatorField = (description: string) =>
  Type.Optional(templated(Type.Union(CONDITION_OPERATORS.map((name) => Type.Literal(name)), { description })))

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

/**
 * Patterns compiled, by their text: a filter tests one pattern on up to 10,000 items, and
 * compiling costs far more than matching. Emptied when full, which the bound keeps rare.
 */
const compiledPatterns = new Map<string, RE2JS>()
const COMPILED_PATTERNS_MAX = 64

/** Compiles a `matches` pattern (and an ask's `pattern`); a NodeError says why one is refused. */
export function compileMatchPattern (pattern: string): RE2JS {
  const cached = compiledPatterns.get(pattern)
  if (cached !== undefined) return cached
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
  if (compiledPatterns.size >= COMPILED_PATTERNS_MAX) compiledPatterns.clear()
  compiledPatterns.set(pattern, compiled)
  return compiled
}

/**
 * The save-time check of a `matches` pattern: a literal one must compile (a NodeError says
 * why not); a pattern written as a template is known only when the node runs, and checked then.
 */
export function checkLiteralMatchPattern (operator: unknown, pattern: unknown): void {
  if (operator === 'matches' && (typeof pattern === 'number' || (typeof pattern === 'string' && !pattern.includes('{{')))) {
    compileMatchPattern(String(pattern))
  }
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

/** An ISO 8601 date, or date and time with an optional offset (docs/decisions.md, the comparison rule). */
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/

/** The instant an ISO 8601 text names, in ms; a time without an offset is UTC, as a date alone is, whatever the worker's zone. */
function instantOf (value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined
  const parts = ISO_TIMESTAMP.exec(value)
  if (parts === null) return undefined
  const hasTime = value.length > 10
  const instant = Date.parse(`${value.replace(' ', 'T')}${hasTime && parts[1] === undefined ? 'Z' : ''}`)
  return Number.isFinite(instant) ? instant : undefined
}

/**
 * How `gt`, `gte`, `lt` and `lte` order two values: numbers and decimal texts (`10`, `"-2.5"`) by
 * value, two ISO 8601 timestamps as instants; anything else (`"n/a"`, `""`, null, a boolean, an
 * object, a number against a timestamp) is not ordered: undefined, and the test is false.
 */
function compare (left: unknown, right: unknown): number | undefined {
  const a = numberOf(left)
  const b = numberOf(right)
  if (a !== undefined && b !== undefined) return a - b
  const x = instantOf(left)
  const y = instantOf(right)
  if (x !== undefined && y !== undefined) return x - y
  return undefined
}

/** Whether `value` passes `operator` against `expected`; no operator: whether it is truthy. */
export function testCondition (operator: ConditionOperator | undefined, value: unknown, expected: unknown): boolean {
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
  category: 'Logic',
  description: 'Branches: tests a value of the run and continues with then or else, or picks one of cases.',
  config: {
    field: Type.String({ minLength: 1, description: 'A path into the run (triggerData.body.event, n1.status), or a template.' }),
    operator: operatorField('How field is tested against value; absent: field is truthy. gt, gte, lt, lte compare numbers and decimal texts ("10", "-2.5") by value, and two ISO 8601 timestamps as instants (no offset: UTC); any other value ("n/a", "", null, true, an object) makes them false.'),
    value: Type.Optional(Type.Unknown({ description: 'What field is compared with (a list for in, an RE2 pattern for matches).' })),
    then: Type.Optional(Type.String({ description: 'The node to continue with when the test passes.' })),
    else: Type.Optional(Type.String({ description: 'The node to continue with when it fails.' })),
    cases: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'A switch instead of a test: the value of field → the node to continue with.' })),
    default: Type.Optional(Type.String({ description: 'With cases: the node to continue with when no case matches.' }))
  },
  example: { field: 'triggerData.amount', operator: 'gt', value: 100 },
  traits: {
    ...PURE_TRAITS,
    links: [{ field: 'then', kind: 'node' }, { field: 'else', kind: 'node' }, { field: 'cases', kind: 'map' }, { field: 'default', kind: 'node' }],
    resultPaths: ['field']
  },
  validate (config) {
    checkLiteralMatchPattern(config.operator, config.value)
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
    if (operatorName !== undefined && !isConditionOperator(operatorName)) {
      throw new NodeError(`operator must be one of ${CONDITION_OPERATORS.join(', ')}`)
    }
    const matched = testCondition(operatorName, value, config.value)
    const next = matched ? config.then : config.else
    return {
      output: { field: rawField, value: value ?? null, matched, next: typeof next === 'string' ? next : null },
      next: typeof next === 'string' ? next : null,
      // A builder names a condition's two handles true/false or then/else.
      handles: matched ? ['true', 'then', 'yes'] : ['false', 'else', 'no']
    }
  }
})
