import { NodeError, type NodeCredential } from '../types.ts'

/** Reading rendered config values; errors name the field so the author can fix it. */

export function requiredString (config: Record<string, unknown>, field: string): string {
  const value = optionalString(config, field)
  if (value === undefined || value === '') throw new NodeError(`${field} is required`)
  return value
}

/** Numbers and booleans are accepted as text: a single-placeholder template keeps the value's type. */
export function optionalString (config: Record<string, unknown>, field: string): string | undefined {
  const value = config[field]
  if (value === undefined || value === null || value === '') return undefined
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  throw new NodeError(`${field} must be a string`)
}

export function optionalNumber (config: Record<string, unknown>, field: string, min: number, max: number): number | undefined {
  const value = config[field]
  if (value === undefined || value === null || value === '') return undefined
  const number = typeof value === 'string' ? Number(value) : value
  if (typeof number !== 'number' || !Number.isFinite(number) || number < min || number > max) {
    throw new NodeError(`${field} must be a number from ${min} to ${max}`)
  }
  return number
}

export function optionalBoolean (config: Record<string, unknown>, field: string): boolean | undefined {
  const value = config[field]
  if (value === undefined || value === null || value === '') return undefined
  if (value === true || value === 'true') return true
  if (value === false || value === 'false') return false
  throw new NodeError(`${field} must be true or false`)
}

export function optionalObject (config: Record<string, unknown>, field: string): Record<string, unknown> | undefined {
  const value = config[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'object' || Array.isArray(value)) throw new NodeError(`${field} must be an object`)
  return value as Record<string, unknown>
}

/**
 * One of `values`, written in any case (the schema's `oneOfAnyCase`), as `values` spells it.
 * `name` is how an error names the field (`operations[0].op`).
 */
export function optionalChoice<const T extends string> (config: Record<string, unknown>, field: string, values: readonly T[], name = field): T | undefined {
  const value = config[field]
  if (value === undefined || value === null || value === '') return undefined
  const choice = typeof value === 'string' ? values.find((candidate) => candidate.toLowerCase() === value.toLowerCase()) : undefined
  if (choice === undefined) throw new NodeError(`${name} must be one of ${values.join(', ')}`)
  return choice
}

export function requiredChoice<const T extends string> (config: Record<string, unknown>, field: string, values: readonly T[], name = field): T {
  const choice = optionalChoice(config, field, values, name)
  if (choice === undefined) throw new NodeError(`${name} is required: one of ${values.join(', ')}`)
  return choice
}

/** The shared secret of a node's `credential`: an hmac credential's `secret`. */
export function hmacSecret ({ name, type, data }: NodeCredential, nodeType: string): string {
  if (type !== 'hmac' || data.secret === undefined) throw new NodeError(`Credential ${name} is ${type}: ${nodeType} needs an hmac credential`)
  return data.secret
}
