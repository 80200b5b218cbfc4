import t from 'tap'
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
