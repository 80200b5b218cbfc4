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

/** `text` as a JSON string, in bytes; a lower bound when longer than `budget`, without escaping it. */
export function jsonStringBytes (text: string, budget = Number.POSITIVE_INFINITY): number {
  // Every UTF-16 unit is at least one byte of JSON.
  if (text.length + 2 > budget) return text.length + 2
  return Buffer.byteLength(JSON.stringify(text))
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
