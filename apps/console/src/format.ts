const pad = (n: number): string => String(n).padStart(2, '0')

/** Local date and time, to the second: 2026-11-23 14:05:09. */
export function dateTime (iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return '—'
  const d = new Date(iso)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}

/** Local hours and minutes (14:05), with seconds when asked (14:05:09). */
export function clock (iso: string, withSeconds = false): string {
  const d = new Date(iso)
  return `${pad(d.getHours())}:${pad(d.getMinutes())}${withSeconds ? `:${pad(d.getSeconds())}` : ''}`
}

/** How long ago: `just now`, `5 min ago`, `3 h ago`, `2 d ago`. */
export function ago (iso: string | null | undefined, now = Date.now()): string {
  if (iso === null || iso === undefined) return 'never'
  const seconds = Math.round((now - Date.parse(iso)) / 1000)
  if (seconds < 0) return `in ${duration(-seconds * 1000)}`
  if (seconds < 45) return 'just now'
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`
  return `${Math.round(seconds / 86_400)} d ago`
}

/** 350 ms, 1.2 s, 2 min 3 s, 1 h 4 min. */
export function duration (ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—'
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const seconds = Math.round(ms / 1000)
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`
}

/** A platform error as people read it: `Message undeliverable (131026)`; `Cancelled` when it has no code. */
export function errorText (error: { code: number | null, title: string }): string {
  return error.code === null ? error.title : `${error.title} (${error.code})`
}

/** Payloads and outputs can be large (1 MiB per node): the page shows this much of each. */
const JSON_SHOWN_CHARS = 100_000

export function prettyJson (value: unknown): string {
  const text = JSON.stringify(value, null, 2) ?? 'undefined'
  return text.length <= JSON_SHOWN_CHARS ? text : `${text.slice(0, JSON_SHOWN_CHARS)}\n… ${text.length - JSON_SHOWN_CHARS} more characters not shown`
}

/** An error in little room (a table cell, a node on the canvas): its first line, cut to `max` characters; `…` says there is more. */
export function firstLine (text: string, max = 80): string {
  const lines = text.trim().split('\n')
  const line = lines[0]!.trim()
  if (line.length > max) return `${line.slice(0, max - 1)}…`
  return lines.length > 1 ? `${line} …` : line
}

/** A size in bytes as people read it: 512 B, 12.3 KiB, 4.5 MiB. */
export function byteSize (bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`
}
