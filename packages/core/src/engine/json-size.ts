/**
 * Measures how large a value is once serialized as JSON, without building
 * the JSON text, and stops as soon as a limit is passed. Node outputs and run
 * results are measured before they are stored, and templates while they are
 * rendered, so that a value which would serialize to gigabytes (the same
 * large object referenced thousands of times) is refused after a few
 * references rather than after the worker ran out of memory.
 */

/**
 * Deeper than this, JSON.stringify overflows the call stack (about 5,000
 * levels on Node 20) or comes close: such a value cannot be stored.
 * @internal exported for its tests
 */
export const MAX_STORED_JSON_DEPTH = 1000

/** A value JSON.stringify cannot serialize: nested too deeply, circular, or a BigInt. */
export class UnserializableValueError extends Error {
  override name = 'UnserializableValueError'
}

interface Measured {
  /** UTF-8 bytes of the JSON text; past the budget only a lower bound. */
  bytes: number
  /** Arrays and objects on the deepest path from the value down, itself included (0 for a scalar). */
  height: number
}

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
const isSkipped = (value: unknown): boolean =>
  value === undefined || typeof value === 'function' || typeof value === 'symbol'

/** A character JSON.stringify escapes or UTF-8 writes in more than one byte. */
// eslint-disable-next-line no-control-regex -- control characters are what JSON escapes
const NOT_ONE_BYTE = /[\u0000-\u001f"\\\u0080-\uffff]/
/** The control characters JSON.stringify writes as two characters (\b \t \n \f \r); the others as \u00XX. */
const SHORT_ESCAPES = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d])

const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff

/**
 * `text` as a JSON string, in bytes; a lower bound when longer than `budget`. Counted without
 * building the JSON text: a node's 1 MB string output is measured twice, and each copy was 1 MB
 * of garbage (docs/decisions.md, code nodes' memory).
 */
export function jsonStringBytes (text: string, budget = Number.POSITIVE_INFINITY): number {
  // Every UTF-16 unit is at least one byte of JSON.
  if (text.length + 2 > budget || !NOT_ONE_BYTE.test(text)) return text.length + 2
  let bytes = 2
  for (let i = 0; i < text.length && bytes <= budget; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x20) bytes += SHORT_ESCAPES.has(code) ? 2 : 6
    else if (code < 0x80) bytes += code === 0x22 || code === 0x5c ? 2 : 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4
      i++
    } else if (code >= 0xd800 && code <= 0xdfff) bytes += 6 // a lone surrogate, written as \uXXXX
    else bytes += 3
  }
  return bytes
}

export interface JsonSizer {
  /**
   * The size in bytes of `JSON.stringify(value ?? null)`: exact when at
   * most `limit`, otherwise some number above `limit`. Throws
   * UnserializableValueError for what cannot be serialized.
   */
  measure: (value: unknown, limit?: number) => number
}

/**
 * A sizer that remembers the size of every object it measured completely,
 * so measuring a value that references an object again costs nothing. The
 * objects measured must not change afterwards: use one sizer per run.
 */
export function createJsonSizer (maxDepth = MAX_STORED_JSON_DEPTH): JsonSizer {
  const sizes = new WeakMap<object, Measured>()
  const open = new Set<object>()

  function measureObject (value: object, budget: number, depth: number): Measured {
    const known = sizes.get(value)
    if (known !== undefined) {
      if (depth + known.height > maxDepth) throw new UnserializableValueError(`it is nested more than ${maxDepth} levels deep`)
      return known
    }
    if (depth >= maxDepth) throw new UnserializableValueError(`it is nested more than ${maxDepth} levels deep`)
    if (open.has(value)) throw new UnserializableValueError('it contains a circular reference')
    open.add(value)
    try {
      let bytes = 2
      let height = 1
      let count = 0
      const add = (item: Measured): boolean => {
        bytes += item.bytes + (count++ > 0 ? 1 : 0)
        height = Math.max(height, item.height + 1)
        return bytes <= budget
      }
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i]
          if (!add(isSkipped(item) ? { bytes: 4, height: 0 } : measureValue(item, budget - bytes, depth + 1))) return { bytes, height }
        }
      } else {
        for (const key of Object.keys(value)) {
          const item = (value as Record<string, unknown>)[key]
          if (isSkipped(item)) continue
          const keyBytes = jsonStringBytes(key, budget - bytes) + 1
          const measured = measureValue(item, budget - bytes - keyBytes, depth + 1)
          if (!add({ bytes: keyBytes + measured.bytes, height: measured.height })) return { bytes, height }
        }
      }
      const measured = { bytes, height }
      sizes.set(value, measured)
      return measured
    } finally {
      open.delete(value)
    }
  }

  function measureValue (value: unknown, budget: number, depth: number): Measured {
    switch (typeof value) {
      case 'string': return { bytes: jsonStringBytes(value, budget), height: 0 }
      case 'number': return { bytes: Number.isFinite(value) ? String(value).length : 4, height: 0 }
      case 'boolean': return { bytes: value ? 4 : 5, height: 0 }
      case 'bigint': throw new UnserializableValueError('it contains a BigInt')
      case 'object': {
        if (value === null) return { bytes: 4, height: 0 }
        const toJSON = (value as { toJSON?: unknown }).toJSON
        // Dates and Buffers serialize as what their toJSON returns.
        if (typeof toJSON === 'function') return measureValue(toJSON.call(value, ''), budget, depth)
        return measureObject(value, budget, depth)
      }
      default: return { bytes: 4, height: 0 }
    }
  }

  return {
    measure: (value, limit = Number.POSITIVE_INFINITY) => measureValue(value, limit, 0).bytes
  }
}
