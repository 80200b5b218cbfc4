/**
 * `{{path}}` templates (contract, "Templates"): paths resolve against the run's
 * `result`, so `{{triggerData.phone}}` and `{{n1.body.id}}` both work.
 */

/** Called once per placeholder whose path resolves to nothing. */
export type MissingPathHandler = (path: string) => void

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g
const SINGLE_PLACEHOLDER = /^\{\{\s*([^{}]*?)\s*\}\}$/

/**
 * Splits `a.b-c[0].d` into `['a', 'b-c', '0', 'd']`. Segments may contain `-`
 * (header names such as `x-signature`); `[n]` is accepted as a synonym of `.n`.
 */
export function parsePath (path: string): string[] {
  return path.replace(/\[(\d+)\]/g, '.$1').split('.').map((segment) => segment.trim()).filter((segment) => segment !== '')
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

function stringify (value: unknown): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'object') return JSON.stringify(value)
  return String(value)
}

function renderString (text: string, scope: unknown, onMissing?: MissingPathHandler): unknown {
  const single = SINGLE_PLACEHOLDER.exec(text)
  if (single !== null) {
    const value = getPath(scope, single[1])
    if (value === undefined) {
      onMissing?.(single[1])
      return ''
    }
    return value
  }
  if (!text.includes('{{')) return text
  return text.replace(PLACEHOLDER, (_match, path: string) => {
    const value = getPath(scope, path)
    if (value === undefined) onMissing?.(path)
    return stringify(value)
  })
}

/**
 * Renders every string inside `value` (objects and arrays are walked, other
 * values are returned as they are). A string that is exactly one placeholder
 * keeps the type of what it points to; inside longer text values are
 * stringified, objects as JSON. A missing path renders as ''.
 */
export function renderTemplate (value: unknown, scope: unknown, onMissing?: MissingPathHandler): unknown {
  if (typeof value === 'string') return renderString(value, scope, onMissing)
  if (Array.isArray(value)) return value.map((item) => renderTemplate(item, scope, onMissing))
  if (value !== null && typeof value === 'object') {
    const rendered: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) rendered[key] = renderTemplate(item, scope, onMissing)
    return rendered
  }
  return value
}
