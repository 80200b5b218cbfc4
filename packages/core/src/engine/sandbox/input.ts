/**
 * The host's side of a code node's `input` (README, Code): in the sandbox, `input` is a
 * read-only view of the run whose entries (triggerData, each earlier node's output by its id) are
 * copied in only when the code first reads them (thread.ts). Here: the entries a job may read,
 * and each entry's JSON text as UTF-8 bytes in a SharedArrayBuffer, made at its first read and
 * shared by reference with every thread that reads it until the garbage collector takes them,
 * never copied between threads. The bytes are held weakly: kept for the whole run, they doubled
 * the memory of every entry read while the run lived (20 runs each reading six 1 MB outputs held
 * 130 MB more, docs/decisions.md), so a read after a collection serializes the entry again.
 */

/** The entries one job may read: the run's keys in order and their values when the job was submitted. */
export interface InputEntries {
  /** The run's result object, which the bytes are kept with. */
  source: object
  keys: string[]
  values: unknown[]
}

/** What the pool answers a thread's read of entry `index`: its bytes, or why there are none. */
export type EntryReply = { seq: number, bytes: SharedArrayBuffer } | { seq: number, error: string }

/** Each run's entries as JSON bytes, by key, with the value they were made from. */
const serialized = new WeakMap<object, Map<string, { value: unknown, bytes: WeakRef<SharedArrayBuffer> }>>()

/** An input given as a view (an object of entries); anything else (null, a number, an array) is copied in whole, as JSON. */
export const isEntries = (input: unknown): input is Record<string, unknown> =>
  typeof input === 'object' && input !== null && !Array.isArray(input)

/** The entries of `input` as JSON.stringify would write them: values that are not JSON (undefined, a function) are left out. */
export function entriesOf (input: Record<string, unknown>): InputEntries {
  const keys: string[] = []
  const values: unknown[] = []
  for (const key of Object.keys(input)) {
    const value = input[key]
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue
    keys.push(key)
    values.push(value)
  }
  return { source: input, keys, values }
}

/** Entry `index`'s JSON as UTF-8 bytes: the same bytes until they are collected, then made again. */
export function entryBytes (entries: InputEntries, index: number): SharedArrayBuffer {
  const key = entries.keys[index]!
  const value = entries.values[index]
  let run = serialized.get(entries.source)
  if (run === undefined) {
    run = new Map()
    serialized.set(entries.source, run)
  }
  const cached = run.get(key)
  const shared = cached !== undefined && cached.value === value ? cached.bytes.deref() : undefined
  if (shared !== undefined) return shared
  const json = JSON.stringify(value) ?? 'null'
  const bytes = new SharedArrayBuffer(Buffer.byteLength(json))
  Buffer.from(bytes).write(json)
  run.set(key, { value, bytes: new WeakRef(bytes) })
  return bytes
}
