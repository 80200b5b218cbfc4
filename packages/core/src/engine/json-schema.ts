/**
 * JSON Schemas written by users that the service checks values against (`Value.Check`): an AGENT
 * workflow's tool arguments, an ai_generate node's answer. Checked when they are saved, so that
 * checking a value later is bounded and runs no pattern.
 */

const MAX_DEPTH = 8

/**
 * The keywords such a schema may use: enough to describe data, none that runs a pattern (a
 * regular expression is not run in linear time by the validator) or fetches a reference.
 */
const SCHEMA_KEYWORDS = new Set([
  'type', 'properties', 'required', 'description', 'title', 'enum', 'const', 'items', 'default', 'examples',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'minLength', 'maxLength', 'minItems', 'maxItems', 'uniqueItems', 'additionalProperties', 'nullable', 'anyOf', 'oneOf'
])

/**
 * Why `schema` cannot be checked against, in a sentence naming it `name`, or undefined when it can:
 * an object's schema (`type: "object"`) of at most `maxBytes` of JSON, nested at most 8 levels,
 * using only the keywords above.
 */
export function objectSchemaProblem (schema: unknown, name: string, maxBytes: number): string | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return `${name} must be a JSON Schema object`
  if ((schema as Record<string, unknown>).type !== 'object') return `${name} must have type "object"`
  if (Buffer.byteLength(JSON.stringify(schema)) > maxBytes) return `${name} must be at most ${maxBytes} bytes of JSON`
  const check = (node: unknown, depth: number, inside: 'schema' | 'map'): string | undefined => {
    if (depth > MAX_DEPTH) return `${name} is nested more than ${MAX_DEPTH} levels`
    if (typeof node !== 'object' || node === null) return inside === 'map' ? `${name} properties must be schemas` : undefined
    if (Array.isArray(node)) return undefined
    for (const [key, value] of Object.entries(node)) {
      if (inside === 'map') {
        const problem = check(value, depth + 1, 'schema')
        if (problem !== undefined) return problem
        continue
      }
      if (!SCHEMA_KEYWORDS.has(key)) return `${name} may not use "${key.slice(0, 40)}"`
      const problem = key === 'properties'
        ? check(value, depth + 1, 'map')
        : key === 'items' || key === 'additionalProperties'
          ? check(value, depth + 1, 'schema')
          : key === 'anyOf' || key === 'oneOf'
            ? (Array.isArray(value) ? value.map((entry) => check(entry, depth + 1, 'schema')).find((found) => found !== undefined) : `${name} ${key} must be an array`)
            : undefined
      if (problem !== undefined) return problem
    }
    return undefined
  }
  return check(schema, 0, 'schema')
}
