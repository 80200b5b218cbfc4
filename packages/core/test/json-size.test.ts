import t from 'tap'
import { createJsonSizer, jsonStringBytes, MAX_STORED_JSON_DEPTH, UnserializableValueError } from '../src/engine/json-size.ts'

/** `value` inside `levels` arrays. */
function wrap (value: unknown, levels: number): unknown {
  for (let i = 0; i < levels; i++) value = [value]
  return value
}
const nested = (levels: number): unknown => wrap(1, levels)

t.test('the size is the byte length of JSON.stringify', async (t) => {
  const values: unknown[] = [
    null, true, false, 0, -1.5e-7, 1e21, Number.NaN, Number.POSITIVE_INFINITY, '', 'plain', 'quote " backslash \\ newline \n tab \t',
    '\u0000\u001f control', 'é ü 日本 😀', 'lone \ud800 surrogate', [], {}, [1, 'two', null, undefined, () => 3],
    { a: 1, skipped: undefined, fn: () => 1, nested: { 'key "quoted"': ['x', { y: [] }] }, ключ: 'значение' },
    new Date('2026-01-02T03:04:05.678Z'), { when: new Date(0), buffer: Buffer.from('hi') }, undefined
  ]
  const sizer = createJsonSizer()
  for (const value of values) {
    t.equal(sizer.measure(value), Buffer.byteLength(JSON.stringify(value ?? null)), JSON.stringify(value ?? null))
  }
})

t.test('past the limit it stops early with a number above the limit', async (t) => {
  const big = { text: 'x'.repeat(1024 * 1024) }
  const manyReferences = { refs: Array.from({ length: 5000 }, () => big) }
  const sizer = createJsonSizer()
  const limit = 8 * 1024 * 1024
  const started = performance.now()
  t.ok(sizer.measure(manyReferences, limit) > limit)
  t.ok(performance.now() - started < 500, `5,000 references to 1 MiB measured in ${Math.round(performance.now() - started)}ms`)
  // What was cut short is not remembered: measured again without a limit, the size is exact.
  t.equal(sizer.measure({ refs: [big, big] }), Buffer.byteLength(JSON.stringify({ refs: [big, big] })))
})

t.test('what JSON.stringify cannot serialize is reported, not thrown as a RangeError', async (t) => {
  const sizer = createJsonSizer()
  t.equal(sizer.measure(nested(MAX_STORED_JSON_DEPTH - 1)), JSON.stringify(nested(MAX_STORED_JSON_DEPTH - 1)).length)
  t.throws(() => sizer.measure(nested(MAX_STORED_JSON_DEPTH + 1)), new UnserializableValueError(`it is nested more than ${MAX_STORED_JSON_DEPTH} levels deep`))
  t.throws(() => createJsonSizer().measure(JSON.parse('['.repeat(100_000) + ']'.repeat(100_000))), UnserializableValueError)
  // A remembered object nested under more levels than before is still refused.
  const inner = nested(600)
  t.ok(sizer.measure(inner) > 0)
  t.throws(() => sizer.measure(wrap(inner, 500)), UnserializableValueError)
  const circular: Record<string, unknown> = { a: 1 }
  circular.self = circular
  t.throws(() => sizer.measure(circular), new UnserializableValueError('it contains a circular reference'))
  t.throws(() => sizer.measure({ n: 10n }), new UnserializableValueError('it contains a BigInt'))
  // The same object twice side by side is not circular.
  const shared = { x: 1 }
  t.equal(sizer.measure([shared, shared]), JSON.stringify([shared, shared]).length)
})

t.test('a string is counted as JSON.stringify writes it, escapes and surrogates included', async (t) => {
  const ascii = String.fromCharCode(...Array.from({ length: 128 }, (_, code) => code))
  const random = Array.from({ length: 200 }, (_, n) => String.fromCharCode(...Array.from({ length: 1 + (n % 17) }, (_, i) => (n * 7919 + i * 104729) % 0x10000)))
  const strings = [
    '', 'plain', ascii, 'é', 'ߟ', 'ࠀ', '日本', '😀', '\ud83d', '\ude00', '\ude00\ud83d', 'a\ud83d', '\ud83d\ud83d\ude00', '\u2028\u2029', '\u007f\u0080',
    ...random
  ]
  strings.forEach((text, i) => { t.equal(jsonStringBytes(text), Buffer.byteLength(JSON.stringify(text)), `string ${i}`) })
  t.ok(jsonStringBytes('"'.repeat(100), 50) > 50, 'past the budget: a number above it')
})
