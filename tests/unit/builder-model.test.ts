import t from 'tap'
import { renameNode } from '@switchboard/core/workflows/rename-node'
import {
  connect, disconnect, drawnLinks, freeHandle, pasteNodes, removeNodes, renameTraitsOf, sampleFields, upstreamOf, withPositions, type Definition
} from '../../apps/console/src/builder.ts'

// The link fields GET /api/automation/node-types lists for these types.
const linkFields = {
  condition: [{ field: 'then', kind: 'node' }, { field: 'else', kind: 'node' }, { field: 'cases', kind: 'map' }, { field: 'default', kind: 'node' }],
  parallel: [{ field: 'branches', kind: 'list' }]
} as const

const empty: Definition = {
  nodes: [
    { id: 'check', type: 'condition', config: { field: 'triggerData.n' } },
    { id: 'fork', type: 'parallel', config: {} },
    { id: 'a', type: 'set', config: {} },
    { id: 'b', type: 'set', config: {} }
  ],
  edges: null
}

t.test('a drawn link is the field the API reads; disconnecting clears it', async (t) => {
  let definition = connect(empty, 'check', 'then', 'a', linkFields)
  definition = connect(definition, 'check', 'else', 'b', linkFields)
  definition = connect(definition, 'fork', 'branches', 'a', linkFields)
  definition = connect(definition, 'fork', 'branches', 'b', linkFields)
  definition = connect(definition, 'a', 'next', 'b', linkFields)
  t.same(definition.nodes[0]!.config, { field: 'triggerData.n', then: 'a', else: 'b' })
  t.same(definition.nodes[1]!.config, { branches: ['a', 'b'] })
  t.equal(definition.nodes[2]!.next, 'b')
  t.same(drawnLinks(definition, linkFields).map((link) => `${link.id}>${link.target}@${link.handle}`), [
    'check:then>a@then', 'check:else>b@else', 'fork:branches[0]>a@branches', 'fork:branches[1]>b@branches', 'a:next>b@next'
  ])
  t.same(connect(definition, 'a', 'next', 'a', linkFields), definition, 'no link to itself')

  let cleared = disconnect(definition, 'fork:branches[0]')
  t.same(cleared.nodes[1]!.config, { branches: ['b'] })
  cleared = disconnect(cleared, 'check:then')
  t.same(cleared.nodes[0]!.config, { field: 'triggerData.n', else: 'b' })
  cleared = disconnect(cleared, 'a:next')
  t.notOk('next' in cleared.nodes[2]!)

  const cased = connect(connect(empty, 'check', 'cases.gold', 'a', { ...linkFields }), 'check', 'cases.silver', 'b', linkFields)
  t.same(cased.nodes[0]!.config!.cases, { gold: 'a', silver: 'b' })
  t.same(disconnect(cased, 'check:cases.gold').nodes[0]!.config!.cases, { silver: 'b' })
})

t.test('removing, pasting and renaming keep the links consistent', async (t) => {
  let definition = connect(connect(connect(empty, 'check', 'then', 'a', linkFields), 'a', 'next', 'b', linkFields), 'fork', 'branches', 'b', linkFields)
  definition = withPositions(definition, linkFields)
  t.ok(definition.nodes.every((node) => node.position !== undefined), 'laid out')

  const removed = removeNodes(definition, ['b'], linkFields)
  t.same(removed.nodes.map((node) => node.id), ['check', 'fork', 'a'])
  t.notOk('next' in removed.nodes[2]!, 'a no longer links to b')
  t.same(removed.nodes[1]!.config, { branches: [] })

  const copied = definition.nodes.filter((node) => node.id === 'a' || node.id === 'b')
  const { definition: pasted, pasted: ids } = pasteNodes(definition, copied, { x: 40, y: 40 }, linkFields)
  t.same(ids, ['a-2', 'b-2'])
  const a2 = pasted.nodes.find((node) => node.id === 'a-2')!
  t.equal(a2.next, 'b-2', 'links among the copies follow them')
  t.equal(a2.position!.x, copied[0]!.position!.x + 40)
  const checkCopy = pasteNodes(definition, [definition.nodes[0]!], { x: 0, y: 0 }, linkFields)
  t.notOk('then' in checkCopy.definition.nodes.at(-1)!.config!, 'a link to a node not copied is dropped')

  // The builder renames through core's renameNode (packages/core/test/rename-node.test.ts has every kind of reference),
  // given the traits GET /api/automation/node-types lists.
  const traitsOf = renameTraitsOf([
    ...Object.entries(linkFields).map(([type, links]) => ({ type, traits: { links } })),
    { type: 'code', traits: { links: [], codeFields: ['code'] } }
  ])
  const referring: Definition = {
    ...definition,
    nodes: [
      ...definition.nodes.map((node) => node.id === 'b' ? { ...node, config: { values: { total: '{{a.total}}' } } } : node),
      { id: 'sum', type: 'code', config: { code: 'return input.a.total' } }
    ]
  }
  const renamed = renameNode(referring, 'a', 'enrich', traitsOf)
  t.equal(renamed.nodes[0]!.config!.then, 'enrich')
  t.equal(renamed.nodes[2]!.id, 'enrich')
  t.same(renamed.nodes[3]!.config, { values: { total: '{{enrich.total}}' } }, 'a template follows')
  t.same(renamed.unrewritable, [{ nodeId: 'sum', field: 'code' }], 'code is listed, for the builder to ask')
  t.equal(renamed.nodes[4]!.config!.code, 'return input.a.total')
})

t.test('the data picker: the fields of the sample, bounded, from the nodes before the selected one', async (t) => {
  t.same(sampleFields({ triggerData: { order: { id: 1 } }, fetch: { status: 200 } }), [
    { path: 'triggerData', value: { order: { id: 1 } }, depth: 1 },
    { path: 'triggerData.order', value: { id: 1 }, depth: 2 },
    { path: 'triggerData.order.id', value: 1, depth: 3 },
    { path: 'fetch', value: { status: 200 }, depth: 1 },
    { path: 'fetch.status', value: 200, depth: 2 }
  ])
  const wide = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i]))
  t.equal(sampleFields({ triggerData: wide }).length, 200)

  const definition: Definition = {
    nodes: [
      { id: 'start', type: 'set', next: 'check' },
      { id: 'check', type: 'condition', config: { field: 'start.x', then: 'yes', else: 'no' } },
      { id: 'yes', type: 'set', next: 'end' },
      { id: 'no', type: 'set' },
      { id: 'end', type: 'set', next: 'start' }
    ],
    edges: null
  }
  t.same([...upstreamOf(definition, 'yes', linkFields)].sort(), ['check', 'end', 'start'], 'a loop back counts')
  t.same([...upstreamOf(definition, 'no', linkFields)].sort(), ['check', 'end', 'start', 'yes'], 'through the loop, the other branch too')
  t.same([...upstreamOf({ ...definition, nodes: definition.nodes.slice(0, 4) }, 'no', linkFields)].sort(), ['check', 'start'], 'not a sibling branch')
})

t.test('a node added after a selected one: its first free way out', async (t) => {
  t.equal(freeHandle({ id: 'c', type: 'condition', config: { field: 'x' } }, linkFields), 'then')
  t.equal(freeHandle({ id: 'c', type: 'condition', config: { field: 'x', then: 'a' } }, linkFields), 'else')
  t.equal(freeHandle({ id: 'p', type: 'parallel', config: { branches: ['a'] } }, linkFields), 'branches', 'a list takes one more')
  t.equal(freeHandle({ id: 's', type: 'set' }, linkFields), 'next')
  t.equal(freeHandle({ id: 's', type: 'set', next: 'a' }, linkFields), undefined, 'taken: the new node is not linked')
})
