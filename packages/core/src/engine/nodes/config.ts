import { NodeError } from '../types.ts'

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
