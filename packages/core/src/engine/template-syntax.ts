/**
 * The syntax of `{{path}}` templates (README, Templates): where placeholders are in a text, and
 * the segments of a path. No imports: the console bundles it (through workflows/rename-node.ts)
 * without the renderer's filters and their date library.
 */
export interface Placeholder {
  start: number
  /** Just after the closing `}}`. */
  end: number
  path: string
  /** What follows the path's first `|`: its filters, unparsed. */
  filters?: string
}

const CLOSE_BRACE = 0x7d

/**
 * The placeholders of `text`, left to right: `{{`, then anything but braces,
 * then `}}`; the path is what lies between, trimmed. This finds exactly what
 * `/\{\{\s*([^{}]*?)\s*\}\}/g` finds, but in linear time: the regular
 * expression backtracks cubically on `{{` followed by a long run of spaces.
 * Each character is looked at a bounded number of times because the
 * positions of the next `{` and `}` are remembered while the search moves on.
 */
export function placeholders (text: string): Placeholder[] {
  const indexOrEnd = (char: string, from: number): number => {
    const index = text.indexOf(char, from)
    return index === -1 ? text.length : index
  }
  const found: Placeholder[] = []
  let nextOpen = -1
  let nextClose = -1
  let from = 0
  for (;;) {
    const start = text.indexOf('{{', from)
    if (start === -1) return found
    const inner = start + 2
    if (nextOpen < inner) nextOpen = indexOrEnd('{', inner)
    if (nextClose < inner) nextClose = indexOrEnd('}', inner)
    const stop = Math.min(nextOpen, nextClose)
    if (stop < text.length && text.charCodeAt(stop) === CLOSE_BRACE && text.charCodeAt(stop + 1) === CLOSE_BRACE) {
      found.push({ start, end: stop + 2, ...expressionOf(text.slice(inner, stop)) })
      from = stop + 2
    } else {
      // Between `inner` and `stop` there is no brace, so the next `{{` starts at `stop` or later, or
      // right after this one when a third brace follows (`{{{a}}`, where stop === inner).
      from = stop > inner ? stop : start + 1
    }
  }
}

/** A placeholder's text: its path, and the filters after the first `|` (a path never holds one). */
function expressionOf (text: string): { path: string, filters?: string } {
  const bar = text.indexOf('|')
  return bar === -1 ? { path: text.trim() } : { path: text.slice(0, bar).trim(), filters: text.slice(bar + 1) }
}

/**
 * Splits `a.b-c[0].d` into `['a', 'b-c', '0', 'd']`. Segments may contain `-`
 * (header names such as `x-signature`); `[n]` is accepted as a synonym of `.n`.
 */
export function parsePath (path: string): string[] {
  return path.replace(/\[(\d+)\]/g, '.$1').split('.').map((segment) => segment.trim()).filter((segment) => segment !== '')
}
