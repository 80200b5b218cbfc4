import t from 'tap'
import { createJsonSizer } from '../src/engine/json-size.ts'
import { getPath, renderTemplate, templatePaths, templateProblem } from '../src/engine/template.ts'

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

t.test('filters transform a value after its path: upper, lower, trim, default, json, length, date', async (t) => {
  const scope = { ...result, triggerData: { ...result.triggerData, name: ' Ada ', at: '2026-03-01T09:30:00Z', ms: 0, empty: '' } }
  t.equal(renderTemplate('{{triggerData.name | trim | upper}}', scope), 'ADA')
  t.equal(renderTemplate('Hi {{ triggerData.name|lower }}!', scope), 'Hi  ada !')
  t.equal(renderTemplate("{{triggerData.missing | default: 'none'}}", scope), 'none')
  t.equal(renderTemplate('{{triggerData.empty | default: 7}}', scope), 7, 'a single placeholder keeps the default’s type')
  t.equal(renderTemplate("{{triggerData.count | default: 'none'}}", scope), 3, 'a present value passes through')
  t.equal(renderTemplate('{{n1.body | json}}', scope), '{"id":"order-7","tags":["x","y"]}')
  t.equal(renderTemplate('{{triggerData.items | length}}', scope), 2)
  t.equal(renderTemplate('{{n1.body.id | length}}', scope), 7)
  t.equal(renderTemplate("{{triggerData.at | date: 'yyyy-MM-dd HH:mm'}}", scope), '2026-03-01 09:30')
  t.equal(renderTemplate("{{triggerData.at | date: 'HH:mm', 'Asia/Tokyo'}}", scope), '18:30')
  t.equal(renderTemplate("{{triggerData.ms | date: 'yyyy'}}", scope), '1970', 'epoch milliseconds')
  t.equal(renderTemplate("{{triggerData.at | date: 'yyyy|MM'}}", scope), '2026|03', 'a bar inside quotes is text')
})

t.test('a missing value with a default is not reported missing; without one it is', async (t) => {
  const missing: string[] = []
  renderTemplate("{{a.b | default: 'x'}} {{c.d | upper}}", {}, (path) => missing.push(path))
  t.same(missing, ['c.d'])
})

t.test('filters are checked when a workflow is saved, and paths read before them', async (t) => {
  t.equal(templateProblem({ a: ['{{x | upper}}', "{{y | default: 'z'}}"] }), undefined)
  t.match(templateProblem('{{x | eval}}'), /Unknown template filter: eval/)
  t.match(templateProblem('{{x | default}}'), /default takes one argument/)
  t.match(templateProblem('{{x | upper: 1}}'), /upper takes no argument/)
  t.match(templateProblem("{{x | default: 'open}}"), /unclosed quote/)
  t.match(templateProblem('{{x | default: bare}}'), /must be quoted text or a number/)
  t.match(templateProblem("{{x | date: 'yyyy', 'Mars/Base'}}"), /unknown timezone/)
  t.match(templateProblem(`{{x ${'| trim '.repeat(11)}}}`), /at most 10 filters/)
  t.same(templatePaths('{{credentials.api.token | trim}}'), ['credentials.api.token'])
  t.throws(() => renderTemplate("{{triggerData.phone | date: 'yyyy'}}", result), /date filter: 15550001111 is not a time/)
})

t.test('filters stay linear: a placeholder of 100,000 bars and quotes is parsed in one pass', async (t) => {
  const started = performance.now()
  t.match(templateProblem(`{{x ${'|'.repeat(100_000)}}}`), /at most 10 filters|Unknown template filter/)
  t.match(templateProblem(`{{x | default: '${'\\\''.repeat(50_000)}}}`), /unclosed quote|longer than/)
  t.ok(performance.now() - started < 1000)
})
