import t from 'tap'
import { createJsonSizer } from '../src/engine/json-size.ts'
import { getPath, renderTemplate } from '../src/engine/template.ts'

const result = {
  triggerData: {
    phone: '15550001111',
    count: 3,
    active: false,
    nothing: null,
    headers: { 'x-signature': 'sha256=abc' },
    items: [{ id: 'a' }, { id: 'b' }]
  },
  n1: { status: 200, body: { id: 'order-7', tags: ['x', 'y'] } }
}

t.test('a string that is exactly one placeholder keeps the value type', async (t) => {
  t.equal(renderTemplate('{{triggerData.count}}', result), 3)
  t.equal(renderTemplate('{{ triggerData.active }}', result), false)
  t.equal(renderTemplate('{{triggerData.nothing}}', result), null)
  t.same(renderTemplate('{{n1.body}}', result), { id: 'order-7', tags: ['x', 'y'] })
})

t.test('inside longer text values are stringified, objects as JSON', async (t) => {
  t.equal(renderTemplate('Hi {{triggerData.phone}}, {{triggerData.count}} items', result), 'Hi 15550001111, 3 items')
  t.equal(renderTemplate('tags={{n1.body.tags}}', result), 'tags=["x","y"]')
  t.equal(renderTemplate('none:{{triggerData.nothing}}.', result), 'none:.')
  t.equal(renderTemplate('plain text', result), 'plain text')
})

t.test('paths reach earlier nodes, array items and segments with dashes', async (t) => {
  t.equal(renderTemplate('{{n1.body.id}}', result), 'order-7')
  t.equal(renderTemplate('{{triggerData.headers.x-signature}}', result), 'sha256=abc')
  t.equal(renderTemplate('{{triggerData.items.1.id}}', result), 'b')
  t.equal(renderTemplate('{{triggerData.items[0].id}}', result), 'a')
})

t.test('objects and arrays are rendered recursively; other values pass through', async (t) => {
  const rendered = renderTemplate({ to: '{{triggerData.phone}}', list: ['{{n1.status}}', 7], flag: true, empty: null }, result)
  t.same(rendered, { to: '15550001111', list: [200, 7], flag: true, empty: null })
})

t.test('a missing path renders as an empty string and is reported once per placeholder', async (t) => {
  const missing: string[] = []
  const onMissing = (path: string): void => { missing.push(path) }
  t.equal(renderTemplate('{{triggerData.nope}}', result, onMissing), '')
  t.equal(renderTemplate('a{{n2.x}}b{{triggerData.phone}}c', result, onMissing), 'ab15550001111c')
  t.same(missing, ['triggerData.nope', 'n2.x'])
})

t.test('prototype properties never resolve', async (t) => {
  t.equal(getPath(result, 'triggerData.constructor'), undefined)
  t.equal(getPath(result, '__proto__'), undefined)
  t.equal(getPath(result, 'triggerData.phone.length'), undefined)
})

t.test('placeholders are found as the former regular expression found them', async (t) => {
  // The renderer once used /\{\{\s*([^{}]*?)\s*\}\}/g (and its anchored twin for a whole string); it must
  // find the same placeholders on every text, here all short texts of an alphabet rich in braces and spaces.
  const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g
  const SINGLE_PLACEHOLDER = /^\{\{\s*([^{}]*?)\s*\}\}$/
  const scope = { a: 'A', b: { c: 1 }, 'a b': 'AB' }
  const stringify = (value: unknown): string => value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value)
  const reference = (text: string): unknown => {
    const single = SINGLE_PLACEHOLDER.exec(text)
    if (single !== null) return getPath(scope, single[1]) ?? ''
    return text.replace(PLACEHOLDER, (_match, path: string) => stringify(getPath(scope, path)))
  }
  const alphabet = ['{', '}', ' ', 'a', 'b', '.', 'c', '\n', '\u00a0']
  let seed = 7
  const random = (below: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % below }
  const differences: unknown[] = []
  for (let i = 0; i < 50_000 && differences.length < 5; i++) {
    let text = ''
    for (let length = random(14); length > 0; length--) text += alphabet[random(alphabet.length)]
    const [rendered, expected] = [renderTemplate(text, scope), reference(text)]
    if (JSON.stringify(rendered) !== JSON.stringify(expected)) differences.push({ text, rendered, expected })
  }
  t.same(differences, [])
  t.same(renderTemplate('{{{a}}', scope), '{A')
  t.same(renderTemplate('{{ {{a}} }}', scope), '{{ A }}')
  t.same(renderTemplate('{{a}b}}', scope), '{{a}b}}')
})

t.test('rendering is linear: an unclosed {{ before 40,000 spaces takes milliseconds, not hours', async (t) => {
  for (const text of ['{{' + ' '.repeat(40_000), '{{' + ' '.repeat(1024 * 1024) + '}', '{{ a'.repeat(100_000), '{'.repeat(200_000)]) {
    const started = performance.now()
    t.equal(renderTemplate(text, result), text)
    t.ok(performance.now() - started < 1000, `${JSON.stringify(text.slice(0, 6))}… rendered in ${Math.round(performance.now() - started)}ms`)
  }
})

t.test('with a limit, the rendered size is the size of its JSON, counted as it is rendered', async (t) => {
  const sizer = createJsonSizer()
  const config = { values: { text: 'Hi {{triggerData.phone}} "é" {{n1.body}}', whole: '{{n1.body}}', list: ['{{triggerData.count}}', 7, null], missing: '{{nope}}' } }
  const rendered = renderTemplate(config, result)
  const bytes = Buffer.byteLength(JSON.stringify(rendered))
  t.same(renderTemplate(config, result, undefined, { maxBytes: bytes, sizer }), rendered)
  t.throws(() => renderTemplate(config, result, undefined, { maxBytes: bytes - 1, sizer }), { name: 'NodeError', message: `Rendered config exceeds ${bytes - 1} bytes` })
})

t.test('a large object referenced thousands of times fails after a few references, without building the text', async (t) => {
  const big = { items: Array.from({ length: 8192 }, (_, i) => ({ id: i, text: 'x'.repeat(48) })) }
  const scope = { triggerData: big }
  const maxBytes = 1024 * 1024
  t.ok(Buffer.byteLength(JSON.stringify(big)) < maxBytes, 'one reference fits')
  const whole = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, '{{triggerData}}']))
  const inText = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, 'copy: {{triggerData}}']))
  for (const values of [whole, inText]) {
    const started = performance.now()
    t.throws(() => renderTemplate({ values }, scope, undefined, { maxBytes }), { message: `Rendered config exceeds ${maxBytes} bytes` })
    t.ok(performance.now() - started < 1000, `refused in ${Math.round(performance.now() - started)}ms`)
  }
  t.same(renderTemplate({ values: { a: '{{triggerData}}' } }, scope, undefined, { maxBytes }), { values: { a: big } })
})
