/**
 * `{{path}}` templates (README, Templates): paths resolve against the run's
 * `result`, so `{{triggerData.phone}}` and `{{n1.body.id}}` both work; filters
 * may follow the path (`{{triggerData.name | upper}}`, template-filters.ts).
 */
import { createJsonSizer, jsonStringBytes, UnserializableValueError, type JsonSizer } from './json-size.ts'
import { applyFilters, expectsMissing, parseFilters } from './template-filters.ts'
import { NodeError } from './types.ts'
import { parsePath, placeholders, type Placeholder } from './template-syntax.ts'

/** Called once per placeholder whose path resolves to nothing. */
type MissingPathHandler = (path: string) => void

interface RenderLimit {
  /** The rendered value may serialize to at most this many bytes of JSON. */
  maxBytes: number
  /** Shared with the caller so that sizes of the run's objects are measured once. */
  sizer?: JsonSizer
}

/** Own properties only, so that `{{constructor}}` or `{{__proto__}}` resolve to nothing. */
export function getPath (scope: unknown, path: string): unknown {
  const segments = parsePath(path)
  if (segments.length === 0) return undefined
  let value: unknown = scope
  for (const segment of segments) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return undefined
    value = (value as Record<string, unknown>)[segment]
  }
  return value
}

/** Every placeholder in the strings of `value` (objects and arrays walked), in order, before anything is rendered. */
function allPlaceholders (value: unknown): Placeholder[] {
  if (typeof value === 'string') return value.includes('{{') ? placeholders(value) : []
  if (Array.isArray(value)) return value.flatMap(allPlaceholders)
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(allPlaceholders)
  return []
}

/** The paths of every placeholder in the strings of `value`, in order: what a template would read. */
export const templatePaths = (value: unknown): string[] => allPlaceholders(value).map(({ path }) => path)

/**
 * The first problem of the placeholders in the strings of `value` (an unknown filter, a bad
 * argument), for a workflow being saved; undefined when there is none.
 */
export function templateProblem (value: unknown): string | undefined {
  for (const { filters } of allPlaceholders(value)) {
    if (filters === undefined) continue
    try {
      parseFilters(filters)
    } catch (err) {
      return (err as Error).message
    }
  }
  return undefined
}

/**
 * Renders one value against `scope` while counting the size of the result
 * as JSON, so that a config which would render to gigabytes fails after the
 * first pieces past the limit instead of being built.
 */
class Renderer {
  private remaining: number
  private readonly sizer: JsonSizer

  constructor (private readonly scope: unknown, private readonly onMissing: MissingPathHandler | undefined, private readonly limit: RenderLimit | undefined) {
    this.remaining = limit?.maxBytes ?? Number.POSITIVE_INFINITY
    this.sizer = limit?.sizer ?? createJsonSizer()
  }

  private tooLarge (): never {
    throw new NodeError(`Rendered config exceeds ${this.limit?.maxBytes} bytes`)
  }

  private charge (bytes: number): void {
    this.remaining -= bytes
    if (this.remaining < 0) this.tooLarge()
  }

  private resolve ({ path, filters }: Placeholder): unknown {
    const value = getPath(this.scope, path)
    const parsed = filters === undefined ? [] : parseFilters(filters)
    if (value === undefined && !expectsMissing(parsed)) this.onMissing?.(path)
    return parsed.length === 0 ? value : applyFilters(value, parsed)
  }

  render (value: unknown): unknown {
    if (typeof value === 'string') return this.renderString(value)
    if (Array.isArray(value)) {
      this.charge(2 + Math.max(0, value.length - 1))
      return value.map((item) => this.render(item))
    }
    if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value)
      this.charge(2 + Math.max(0, entries.length - 1))
      const rendered: Record<string, unknown> = {}
      for (const [key, item] of entries) {
        this.charge(jsonStringBytes(key, this.remaining) + 1)
        rendered[key] = this.render(item)
      }
      return rendered
    }
    this.charge(this.sizer.measure(value, this.remaining))
    return value
  }

  private renderString (text: string): unknown {
    const found = text.includes('{{') ? placeholders(text) : []
    if (found.length === 0) {
      this.charge(jsonStringBytes(text, this.remaining))
      return text
    }
    // A string that is exactly one placeholder keeps the value itself: it costs its size as JSON.
    if (found.length === 1 && found[0].start === 0 && found[0].end === text.length) {
      const value = this.resolve(found[0])
      if (value === undefined) {
        this.charge(2)
        return ''
      }
      this.charge(this.sizer.measure(value, this.remaining))
      return value
    }
    const pieces: string[] = []
    let length = 0
    let copied = 0
    const append = (piece: string): void => {
      // A JSON string has at least one byte per UTF-16 unit: stop before building more than the limit allows.
      length += piece.length
      if (length + 2 > this.remaining) this.tooLarge()
      pieces.push(piece)
    }
    for (const placeholder of found) {
      append(text.slice(copied, placeholder.start))
      append(this.stringify(this.resolve(placeholder), this.remaining - length))
      copied = placeholder.end
    }
    append(text.slice(copied))
    const rendered = pieces.join('')
    this.charge(jsonStringBytes(rendered, this.remaining))
    return rendered
  }

  /** A value inside longer text: null and missing as '', objects as JSON (measured first, so never larger than `budget` allows). */
  private stringify (value: unknown, budget: number): string {
    if (value === null || value === undefined) return ''
    if (typeof value !== 'object') return String(value)
    if (this.sizer.measure(value, budget) > budget) this.tooLarge()
    return JSON.stringify(value)
  }
}

/**
 * Renders every string inside `value` (objects and arrays are walked, other
 * values are returned as they are). A string that is exactly one placeholder
 * keeps the type of what it points to; inside longer text values are
 * stringified, objects as JSON. A missing path renders as ''. With `limit`,
 * a result larger than `limit.maxBytes` as JSON fails with a NodeError
 * before it is built.
 */
export function renderTemplate (value: unknown, scope: unknown, onMissing?: MissingPathHandler, limit?: RenderLimit): unknown {
  try {
    return new Renderer(scope, onMissing, limit).render(value)
  } catch (err) {
    if (err instanceof UnserializableValueError) throw new NodeError(`Rendered config cannot be serialized: ${err.message}`)
    throw err
  }
}
