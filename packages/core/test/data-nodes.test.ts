import { createHash, createHmac } from 'node:crypto'
import t, { type Test } from 'tap'
import { acceptedCredentialTypes } from '../src/credentials/references.ts'
import type { WorkflowNode } from '../src/db/schema/index.ts'
import { DomainError } from '../src/errors.ts'
import { condition } from '../src/engine/nodes/condition.ts'
import { nodeDefinition } from '../src/engine/nodes/index.ts'
import { MAX_ITEMS } from '../src/engine/nodes/items.ts'
import { renderTemplate } from '../src/engine/template.ts'
import type { NodeContext, NodeCredential } from '../src/engine/types.ts'
import { validateWorkflowGraph } from '../src/workflows/validation.ts'

const DATA_NODE_TYPES = ['split', 'filter', 'sort', 'dedupe', 'aggregate', 'date', 'crypto']

interface RunOptions {
  /** triggerData and the outputs of earlier nodes, which templates read. */
  result?: Record<string, unknown>
  credential?: NodeCredential
}

/** Runs a node of `type` as the engine does: its config rendered against `result`, then its executor. */
async function run (type: string, rawConfig: Record<string, unknown>, { result = {}, credential }: RunOptions = {}): Promise<any> {
  const definition = nodeDefinition(type)
  if (definition === undefined) throw new Error(`no node type ${type}`)
  const context: NodeContext = {
    node: { id: 'n1', type, config: rawConfig },
    config: renderTemplate(rawConfig, result) as Record<string, unknown>,
    rawConfig,
    run: { id: 'run-1', workflowId: 'wf-1', userId: 'user-1', triggerData: result.triggerData ?? {}, rawBody: null, depth: 0 },
    credential,
    result,
    log: () => {},
    beforeEffect: async () => {},
    signal: new AbortController().signal,
    deps: {} as NodeContext['deps'],
    control: {} as NodeContext['control'],
    attempt: 1,
    mayRetry: () => false,
    idempotencyKey: 'run-1:n1'
  }
  return (await definition.execute(context)).output
}

/** The message of the NodeError running the node fails with. */
async function failure (t: Test, type: string, rawConfig: Record<string, unknown>, options?: RunOptions): Promise<string> {
  try {
    await run(type, rawConfig, options)
  } catch (err) {
    t.equal((err as Error).name, 'NodeError', (err as Error).message)
    return (err as Error).message
  }
  t.fail(`expected ${type} to fail`)
  return ''
}

/** The message of the 400 saving a workflow of this one node is refused with. */
function refusal (t: Test, type: string, config: Record<string, unknown>): string {
  try {
    validateWorkflowGraph([{ id: 'n1', type, config }], [])
  } catch (err) {
    t.type(err, DomainError)
    t.match((err as DomainError).code, /^(VALIDATION_ERROR|INVALID_WORKFLOW_GRAPH)$/)
    return (err as DomainError).message
  }
  t.fail(`expected ${type} ${JSON.stringify(config)} to be refused`)
  return ''
}

const saves = (type: string, config: Record<string, unknown>): void => {
  const node: WorkflowNode = { id: 'n1', type, config }
  validateWorkflowGraph([node], [])
}

const orders = [
  { id: 'A1', total: 120, status: 'paid', customer: { name: 'Ann', tier: 'gold' }, tags: ['vip'] },
  { id: 'A2', total: '80.50', status: 'paid', customer: { name: 'Bob', tier: 'silver' }, tags: [] },
  { id: 'A3', total: 15, status: 'refunded', customer: { name: 'Ann', tier: 'gold' } },
  { id: 'A4', status: 'paid', customer: { name: 'Cy' }, tags: ['new'] }
]
const tooMany = Array.from({ length: MAX_ITEMS + 1 }, (_, i) => ({ i }))

t.test('the data nodes are in the catalogue, pure, and their examples save', async (t) => {
  for (const type of DATA_NODE_TYPES) {
    const definition = nodeDefinition(type)
    t.ok(definition, type)
    t.equal(definition?.traits.pure, true, `${type} is pure`)
    t.doesNotThrow(() => { saves(type, definition!.example) }, `${type}'s example saves`)
  }
  t.same(acceptedCredentialTypes('crypto'), ['hmac'])
  t.same(acceptedCredentialTypes('filter'), [])
})

t.test('filter: conditions on paths within items, all or any', async (t) => {
  const result = { triggerData: { orders } }
  const paid = await run('filter', { items: '{{triggerData.orders}}', conditions: [{ field: 'status', operator: 'equals', value: 'paid' }] }, { result })
  t.same(paid.items.map((o: { id: string }) => o.id), ['A1', 'A2', 'A4'])
  t.equal(paid.count, 3)
  t.equal(paid.removed, 1)

  const big = await run('filter', { items: '{{triggerData.orders}}', conditions: [{ field: 'total', operator: 'gt', value: 50 }, { field: 'customer.tier', operator: 'equals', value: 'gold' }] }, { result })
  t.same(big.items.map((o: { id: string }) => o.id), ['A1'], 'all: every condition')
  const either = await run('filter', { items: '{{triggerData.orders}}', combine: 'ANY', conditions: [{ field: 'total', operator: 'gt', value: 50 }, { field: 'customer.tier', operator: 'equals', value: 'gold' }] }, { result })
  t.same(either.items.map((o: { id: string }) => o.id), ['A1', 'A2', 'A3'], 'any: one condition, decimal text compared as a number')

  const tagged = await run('filter', { items: '{{triggerData.orders}}', conditions: [{ field: 'tags.0' }] }, { result })
  t.same(tagged.items.map((o: { id: string }) => o.id), ['A1', 'A4'], 'no operator: the field is truthy')
  const noTotal = await run('filter', { items: '{{triggerData.orders}}', conditions: [{ field: 'total', operator: 'notExists' }] }, { result })
  t.same(noTotal.items.map((o: { id: string }) => o.id), ['A4'])
  const names = await run('filter', { items: '{{triggerData.orders}}', conditions: [{ field: 'customer.name', operator: 'matches', value: '^(Ann|Cy)$' }, { field: 'id', operator: 'in', value: 'A1, A4' }] }, { result })
  t.same(names.items.map((o: { id: string }) => o.id), ['A1', 'A4'])
  const numbers = await run('filter', { items: [1, 5, 10, 50], conditions: [{ operator: 'gte', value: '{{triggerData.min}}' }] }, { result: { triggerData: { min: 10 } } })
  t.same(numbers, { items: [10, 50], count: 2, removed: 2 }, 'no field: the item itself; value from a template')
  t.same(await run('filter', { items: [], conditions: [{ field: 'a', operator: 'exists' }] }), { items: [], count: 0, removed: 0 })
})

t.test('filter tests each item exactly as the condition node tests its field', async (t) => {
  const cases: Array<[string, unknown, unknown]> = [
    ['equals', 5, '5'], ['equals', { a: 1 }, { a: 1 }], ['equals', null, null], ['notEquals', 'a', 'b'],
    ['contains', ['x', 2], '2'], ['contains', 'hello', 'ell'], ['contains', 5, '5'], ['startsWith', 'order-1', 'order-'],
    ['exists', 0, undefined], ['exists', null, undefined], ['notExists', undefined, undefined],
    ['gt', '10', 9], ['gt', 'b', 'a'], ['gte', 3, 3], ['lt', '2024-01-01', '2024-02-01'], ['lte', undefined, 5], ['lt', '', 1],
    ['in', 'b', ['a', 'b']], ['in', 'c', 'a, b'], ['matches', 'Order-12', '(?i)^order-\\d+$'], ['matches', { id: 'x' }, '"id":"x"']
  ]
  for (const [operator, value, expected] of cases) {
    const raw = { field: 'triggerData.v', operator, value: expected }
    const decided = await condition.execute({ node: { id: 'c', type: 'condition', config: raw }, config: raw, rawConfig: raw, result: { triggerData: { v: value } } } as unknown as NodeContext)
    const matched = (decided.output as { matched: boolean }).matched
    const kept = await run('filter', { items: [{ v: value }], conditions: [{ field: 'v', operator, value: expected }] })
    t.equal(kept.count === 1, matched, `${JSON.stringify(value)} ${operator} ${JSON.stringify(expected)}: ${matched}`)
  }
})

t.test('filter: bounds, wrong types and bad conditions fail naming the field', async (t) => {
  t.equal(await failure(t, 'filter', { items: tooMany, conditions: [{ field: 'i', operator: 'exists' }] }), `items has ${MAX_ITEMS + 1} items, more than ${MAX_ITEMS}`)
  t.same((await run('filter', { items: tooMany.slice(1), conditions: [{ field: 'i', operator: 'gte', value: 1 }] })).count, MAX_ITEMS, '10,000 items pass')
  t.equal(await failure(t, 'filter', { items: '{{triggerData.order}}', conditions: [{ field: 'a' }] }, { result: { triggerData: { order: { id: 1 } } } }),
    'items must be a list (an array), but it is an object ({{triggerData.order}})')
  t.equal(await failure(t, 'filter', { items: '{{triggerData.nothing}}', conditions: [{ field: 'a' }] }, { result: { triggerData: {} } }),
    'items must be a list (an array), but it is empty ({{triggerData.nothing}})')
  t.equal(await failure(t, 'filter', { items: [1], conditions: [] }), 'conditions needs at least one entry')
  t.equal(await failure(t, 'filter', { items: [1], conditions: 'status' }), 'conditions must be a list (an array), but it is text')
  t.equal(await failure(t, 'filter', { items: [1], conditions: ['status'] }), 'conditions[0] must be an object, but it is text')
  t.equal(await failure(t, 'filter', { items: [1], conditions: [{ field: 'a', operator: '{{triggerData.op}}' }] }, { result: { triggerData: { op: 'bigger' } } }),
    'conditions[0].operator must be one of equals, notEquals, contains, startsWith, exists, notExists, gt, gte, lt, lte, in, matches')
  t.equal(await failure(t, 'filter', { items: [1], conditions: [{ field: 'a', operator: 'matches', value: '{{triggerData.p}}' }] }, { result: { triggerData: { p: '(' } } }),
    'conditions[0].value is not a valid regular expression (RE2 syntax): missing closing ): `(`')
  t.equal(await failure(t, 'filter', { items: [{ a: 'x'.repeat(70_000) }], conditions: [{ field: 'a', operator: 'matches', value: 'x' }] }),
    'conditions[0] on items[0]: field value is too long to match: more than 65536 characters')
  t.equal(await failure(t, 'filter', { items: [1], conditions: [{ field: 5 }] }), 'conditions[0].field must be a path within an item (customer.name) of at most 200 characters')
  t.equal(await failure(t, 'filter', { items: [1], combine: 'most', conditions: [{ field: 'a' }] }), 'combine must be one of all, any')
})

t.test('filter at save time: operators, literal patterns and templates', async (t) => {
  t.equal(refusal(t, 'filter', { items: '{{n0.items}}', conditions: [{ field: 'a', operator: 'bigger', value: 1 }] }),
    'Node n1: config.conditions.0.operator must be one of equals, notEquals, contains, startsWith, exists, notExists, gt, gte, lt, lte, in, matches (or a template)')
  t.equal(refusal(t, 'filter', { items: '{{n0.items}}', conditions: [{ field: 'a', operator: 'matches', value: '(a)\\1' }] }),
    'Node n1: conditions[0].value is not a valid regular expression (RE2 syntax): invalid escape sequence: `\\1`')
  t.equal(refusal(t, 'filter', { items: 5, conditions: [{ field: 'a' }] }), 'Node n1: config.items must be array (or a template)')
  t.equal(refusal(t, 'filter', { items: tooMany, conditions: [{ field: 'a' }] }), `Node n1: config.items must not have more than ${MAX_ITEMS} items (or a template)`)
  t.equal(refusal(t, 'filter', { items: [], conditions: [] }), 'Node n1: config.conditions must not have fewer than 1 items')
  t.equal(refusal(t, 'filter', { items: [], combine: 'most', conditions: [{ field: 'a' }] }), 'Node n1: config.combine must be one of all, any (or a template)')
  t.doesNotThrow(() => { saves('filter', { items: '{{n0.items}}', combine: '{{triggerData.combine}}', conditions: [{ field: 'a', operator: '{{triggerData.op}}', value: '{{triggerData.pattern}}' }] }) })
  t.doesNotThrow(() => { saves('filter', { items: [{ a: 1 }], conditions: [{ field: 'a', operator: 'matches', value: '^\\d+$' }] }) })
})

t.test('sort: numbers as numbers, text by character codes, missing last, stable', async (t) => {
  const ids = (output: { items: Array<{ id: string }> }): string[] => output.items.map((item) => item.id)
  const result = { triggerData: { orders } }
  t.same(ids(await run('sort', { items: '{{triggerData.orders}}', by: 'total' }, { result })), ['A3', 'A2', 'A1', 'A4'], 'a single path; decimal text is a number; missing last')
  t.same(ids(await run('sort', { items: '{{triggerData.orders}}', by: [{ field: 'total', order: 'desc' }] }, { result })), ['A1', 'A2', 'A3', 'A4'], 'missing last in desc too')
  t.same(ids(await run('sort', { items: '{{triggerData.orders}}', by: [{ field: 'customer.name', order: 'desc' }, { field: 'id' }] }, { result })), ['A4', 'A2', 'A1', 'A3'])
  t.same(ids(await run('sort', { items: '{{triggerData.orders}}', by: [{ field: 'customer.tier' }] }, { result })), ['A1', 'A3', 'A2', 'A4'], 'equal keys keep their order')
  t.same(ids(await run('sort', { items: '{{triggerData.orders}}', by: [{ field: 'customer.tier', order: 'desc' }] }, { result })), ['A2', 'A1', 'A3', 'A4'], 'stable in desc too')
  t.same((await run('sort', { items: [10, 9, 'b', 'B', 'a', null, 100, '9.5', true, false, { x: 1 }, [1]] })).items,
    [9, '9.5', 10, 100, 'B', 'a', 'b', false, true, [1], { x: 1 }, null], 'no by: the items themselves, by kind then value')
  t.same((await run('sort', { items: ['é', 'z', 'e'], by: [{ order: 'desc' }] })).items, ['é', 'z', 'e'], 'code units, no locale')

  const stable = Array.from({ length: MAX_ITEMS }, (_, i) => ({ key: i % 3, i }))
  const sorted = (await run('sort', { items: stable, by: 'key' })).items as Array<{ key: number, i: number }>
  t.ok(sorted.every((item, n) => n === 0 || item.key > sorted[n - 1]!.key || item.i > sorted[n - 1]!.i), '10,000 items, stable')

  t.equal(await failure(t, 'sort', { items: tooMany, by: 'i' }), `items has ${MAX_ITEMS + 1} items, more than ${MAX_ITEMS}`)
  t.equal(await failure(t, 'sort', { items: 'abc', by: 'i' }), 'items must be a list (an array), but it is text')
  t.equal(await failure(t, 'sort', { items: [], by: 5 }), 'by must be a field or a list of { field, order }, but it is a number')
  t.equal(await failure(t, 'sort', { items: [], by: [{ field: 'a', order: '{{triggerData.order}}' }] }, { result: { triggerData: { order: 'up' } } }), 'by[0].order must be one of asc, desc')
  t.equal(refusal(t, 'sort', { items: [], by: [{ field: 'a', order: 'up' }] }), 'Node n1: config.by.0.order must be one of asc, desc (or a template)')
  t.equal(refusal(t, 'sort', { items: [], by: [] }), 'Node n1: config.by must be string or must not have fewer than 1 items')
  t.doesNotThrow(() => { saves('sort', { items: '{{n1.items}}', by: [{ field: 'a', order: '{{triggerData.order}}' }] }) })
})

t.test('aggregate: count, sum, avg, min, max over the list', async (t) => {
  const output = await run('aggregate', {
    items: '{{triggerData.orders}}',
    operations: [
      { op: 'count' }, { op: 'count', field: 'total' }, { op: 'sum', field: 'total' }, { op: 'avg', field: 'total', as: 'average' },
      { op: 'min', field: 'total' }, { op: 'MAX', field: 'total' }, { op: 'sum', field: 'customer.name' }, { op: 'avg', field: 'missing' }, { op: 'max', field: 'missing' }
    ]
  }, { result: { triggerData: { orders } } })
  t.same(output, {
    count: 4,
    count_total: 3,
    sum_total: 215.5,
    average: 215.5 / 3,
    min_total: 15,
    max_total: 120,
    sum_customer_name: 0,
    avg_missing: null,
    max_missing: null
  }, 'non-numbers skipped, decimal text counted; avg and max of nothing are null')
  t.same(await run('aggregate', { items: [], operations: [{ op: 'sum' }, { op: 'avg' }] }), { count: 0, sum: 0, avg: null })
  t.same(await run('aggregate', { items: [1, 2, 'x', 3], operations: [{ op: 'sum' }, { op: 'min' }] }), { count: 4, sum: 6, min: 1 }, 'no field: the items themselves')
})

t.test('aggregate: groups in the order their keys first appear', async (t) => {
  const output = await run('aggregate', { items: '{{triggerData.orders}}', groupBy: 'customer.tier', operations: [{ op: 'sum', field: 'total', as: 'revenue' }] }, { result: { triggerData: { orders } } })
  t.same(output, {
    groups: [
      { key: 'gold', count: 2, revenue: 135 },
      { key: 'silver', count: 1, revenue: 80.5 },
      { key: null, count: 1, revenue: 0 }
    ]
  })
  const byList = await run('aggregate', { items: [{ k: { a: 1, b: 2 } }, { k: { b: 2, a: 1 } }, { k: [1] }], groupBy: 'k', operations: [{ op: 'count' }] })
  t.same(byList.groups, [{ key: { a: 1, b: 2 }, count: 2 }, { key: [1], count: 1 }], 'object keys compared whatever their order')
  const many = await run('aggregate', { items: Array.from({ length: MAX_ITEMS }, (_, i) => ({ i })), groupBy: 'i', operations: [{ op: 'count' }] })
  t.equal(many.groups.length, MAX_ITEMS, 'at most 10,000 groups: one per item')
})

t.test('aggregate: names, bounds and wrong types', async (t) => {
  t.equal(await failure(t, 'aggregate', { items: tooMany, operations: [{ op: 'count' }] }), `items has ${MAX_ITEMS + 1} items, more than ${MAX_ITEMS}`)
  t.equal(await failure(t, 'aggregate', { items: { a: 1 }, operations: [{ op: 'count' }] }), 'items must be a list (an array), but it is an object')
  t.equal(await failure(t, 'aggregate', { items: [], operations: [{ op: 'median', field: 'a' }] }), 'operations[0].op must be one of count, sum, min, max, avg')
  t.equal(await failure(t, 'aggregate', { items: [], operations: [{ field: 'a' }] }), 'operations[0].op is required: one of count, sum, min, max, avg')
  t.equal(await failure(t, 'aggregate', { items: [], operations: [{ op: 'sum', field: 'a' }, { op: 'sum', field: 'a' }] }), 'operations[1] is named sum_a like an operation before it: give it another name with as')
  t.equal(await failure(t, 'aggregate', { items: [], operations: [{ op: 'sum', field: 'a', as: 'count' }] }), 'operations[0] is named count, which every output has already: give it another name with as')
  t.equal(await failure(t, 'aggregate', { items: [], groupBy: 'g', operations: [{ op: 'sum', field: 'a', as: 'key' }] }), 'operations[0] is named key, which every group has already: give it another name with as')
  t.equal(await failure(t, 'aggregate', { items: [], operations: [{ op: 'sum', field: 'a', as: 'a.b' }] }), 'operations[0].as must be a name of letters, digits, _ and - (at most 64)')
  t.equal(refusal(t, 'aggregate', { items: [], operations: [{ op: 'sum', field: 'a' }, { op: 'SUM', field: 'a' }] }), 'Node n1: operations[1] is named sum_a like an operation before it: give it another name with as')
  t.equal(refusal(t, 'aggregate', { items: [], operations: [{ op: 'median', field: 'a' }] }), 'Node n1: config.operations.0.op must be one of count, sum, min, max, avg')
  t.equal(refusal(t, 'aggregate', { items: [], operations: [] }), 'Node n1: config.operations must not have fewer than 1 items')
  t.doesNotThrow(() => { saves('aggregate', { items: '{{n1.items}}', groupBy: 'customer.tier', operations: [{ op: 'count' }, { op: 'sum', field: '{{triggerData.field}}' }] }) })
})

t.test('split: a list, a field of it, or an object’s entries', async (t) => {
  const result = { triggerData: { body: { orders } } }
  t.same(await run('split', { value: '{{triggerData.body.orders}}', pluck: 'id' }, { result }), { items: ['A1', 'A2', 'A3', 'A4'] })
  t.same(await run('split', { value: '{{triggerData.body}}', field: 'orders', pluck: 'customer.tier' }, { result }), { items: ['gold', 'silver', 'gold', null] }, 'null where the path is missing')
  t.same((await run('split', { value: '{{triggerData.body.orders}}' }, { result })).items, orders)
  t.same(await run('split', { value: { a: 1, b: [2] }, mode: 'entries' }), { items: [{ key: 'a', value: 1 }, { key: 'b', value: [2] }] })
  t.same(await run('split', { value: { a: { n: 1 } }, mode: 'entries', pluck: 'value.n' }), { items: [1] })

  t.equal(await failure(t, 'split', { value: { a: 1 } }), 'value must be a list (an array), but it is an object: set mode to entries to split an object')
  t.equal(await failure(t, 'split', { value: [1], mode: 'entries' }), 'value must be an object to split into entries, but it is a list')
  t.equal(await failure(t, 'split', { value: '{{triggerData.body}}', field: 'lines' }, { result }), 'value has no field lines')
  t.equal(await failure(t, 'split', { value: '{{triggerData.body}}', field: 'orders.0.id' }, { result }), 'value.orders.0.id must be a list (an array), but it is text')
  t.equal(await failure(t, 'split', { value: '{{triggerData.missing}}' }, { result }), 'value is required: the list to split, but {{triggerData.missing}} is empty')
  t.equal(await failure(t, 'split', { value: tooMany }), `value has ${MAX_ITEMS + 1} items, more than ${MAX_ITEMS}`)
  t.equal(await failure(t, 'split', { value: Object.fromEntries(tooMany.map((_, i) => [`k${i}`, i])), mode: 'entries' }), `value has ${MAX_ITEMS + 1} entries, more than ${MAX_ITEMS}`)
  t.equal(refusal(t, 'split', { value: 'orders' }), 'Node n1: config.value must be array or must be object (or a template)')
  t.equal(refusal(t, 'split', { value: '{{triggerData.x}}', mode: 'rows' }), 'Node n1: config.mode must be one of items, entries (or a template)')
  t.equal(refusal(t, 'split', {}), 'Node n1: config value is required')
})

t.test('dedupe: keeps the first of each key', async (t) => {
  const result = { triggerData: { orders } }
  const byName = await run('dedupe', { items: '{{triggerData.orders}}', fields: ['customer.name'] }, { result })
  t.same(byName.items.map((o: { id: string }) => o.id), ['A1', 'A2', 'A4'])
  t.equal(byName.removed, 1)
  const byTwo = await run('dedupe', { items: '{{triggerData.orders}}', fields: ['customer.tier', 'status'] }, { result })
  t.same(byTwo.items.map((o: { id: string }) => o.id), ['A1', 'A2', 'A3', 'A4'])
  t.same(await run('dedupe', { items: [{ a: 1, b: { c: 2, d: 3 } }, { b: { d: 3, c: 2 }, a: 1 }, { a: 1 }, 1, '1', 1, null] }),
    { items: [{ a: 1, b: { c: 2, d: 3 } }, { a: 1 }, 1, '1', null], removed: 2 }, 'whole items, keys in any order; 1 and "1" differ')
  t.same(await run('dedupe', { items: [{ a: 1 }, { a: null }, { b: 2 }], fields: ['a'] }), { items: [{ a: 1 }, { a: null }], removed: 1 }, 'missing is null')
  t.same((await run('dedupe', { items: [{ a: 1 }, { a: 1 }], fields: [] })).removed, 1, 'no fields: the whole item')

  t.equal(await failure(t, 'dedupe', { items: tooMany }), `items has ${MAX_ITEMS + 1} items, more than ${MAX_ITEMS}`)
  t.equal(await failure(t, 'dedupe', { items: [], fields: 'email' }), 'fields must be a list of paths within an item, but it is text')
  t.equal(await failure(t, 'dedupe', { items: [], fields: ['email', ''] }), 'fields[1] is empty: give a path within an item (email)')
  t.equal(refusal(t, 'dedupe', { items: [], fields: 'email' }), 'Node n1: config.fields must be array')
})

t.test('date: parse, format, add, subtract, difference, now', async (t) => {
  t.same(await run('date', { operation: 'parse', value: '2024-03-01T10:00:00+02:00' }), { value: '2024-03-01T08:00:00.000Z' })
  t.same(await run('date', { operation: 'parse', value: '01/03/2024 10:30', format: 'dd/MM/yyyy HH:mm', timezone: 'Europe/Paris' }), { value: '2024-03-01T10:30:00.000+01:00' })
  t.same(await run('date', { operation: 'parse', value: '{{triggerData.at}}' }, { result: { triggerData: { at: 1_700_000_000_000 } } }), { value: '2023-11-14T22:13:20.000Z' }, 'epoch ms from a template')
  t.same(await run('date', { operation: 'format', value: '2024-03-01T23:30:00Z', format: 'cccc d LLLL yyyy HH:mm', timezone: 'Asia/Tokyo' }), { value: 'Saturday 2 March 2024 08:30' })
  t.same(await run('date', { operation: 'add', value: '2024-03-30T12:00:00', timezone: 'Europe/Paris', amount: { days: 1 } }), { value: '2024-03-31T12:00:00.000+02:00' }, 'a calendar day across the change of clocks')
  t.same(await run('date', { operation: 'add', value: '2024-01-31T00:00:00Z', amount: { months: 1, hours: 1.5 } }), { value: '2024-02-29T01:30:00.000Z' })
  t.same(await run('date', { operation: 'subtract', value: '2024-03-01T00:00:00Z', amount: { years: '1', weeks: 1 } }), { value: '2023-02-22T00:00:00.000Z' })
  t.same(await run('date', { operation: 'add', value: '2024-03-01T00:00:00Z', amount: { days: -1 } }), { value: '2024-02-29T00:00:00.000Z' }, 'a negative amount goes back')
  t.same(await run('date', { operation: 'difference', value: '2024-03-01T00:00:00Z', to: '2024-03-02T12:00:00Z', unit: 'days' }), { value: 1.5 })
  t.same(await run('date', { operation: 'difference', value: '2024-03-02T00:00:00Z', to: '2024-03-01T00:00:00Z', unit: 'hours' }), { value: -24 })
  t.same(await run('date', { operation: 'difference', value: 0, to: 1000 }), { value: 1000 }, 'milliseconds by default')
  t.same(await run('date', { operation: 'difference', value: '2024-01-31T00:00:00Z', to: '2024-02-29T00:00:00Z', unit: 'months' }), { value: 1 }, 'calendar months')
  t.same(await run('date', { operation: 'difference', value: '2024-01-01T00:00:00Z', to: '2024-02-16T00:00:00Z', unit: 'months' }), { value: 1.5172413793103448 })

  const before = Date.now()
  const now = await run('date', { operation: 'now' })
  t.ok(Date.parse(now.value) >= before - 1 && Date.parse(now.value) <= Date.now(), now.value)
  t.match(now.value, /Z$/)
  t.match((await run('date', { operation: 'now', timezone: 'America/New_York' })).value, /-0[45]:00$/)
  const sinceNow = await run('date', { operation: 'difference', value: new Date(Date.now() - 60_000).toISOString(), unit: 'minutes' })
  t.ok(sinceNow.value >= 1 && sinceNow.value < 2, 'to: now by default')
})

t.test('date: invalid input fails naming the field with luxon’s reason', async (t) => {
  t.equal(await failure(t, 'date', { operation: 'parse', value: 'next tuesday' }), 'value is not a valid date: unparsable: the input "next tuesday" can\'t be parsed as ISO 8601')
  t.equal(await failure(t, 'date', { operation: 'parse', value: '31/02/2024', format: 'dd/MM/yyyy' }), 'value is not a valid date in the format dd/MM/yyyy: unit out of range: you specified 31 (of type number) as a day, which is invalid')
  t.equal(await failure(t, 'date', { operation: 'format', value: { at: 1 }, format: 'yyyy' }), 'value must be a date (ISO 8601 text or epoch milliseconds), but it is an object')
  t.equal(await failure(t, 'date', { operation: 'add', amount: { days: 1 } }), 'value must be a date (ISO 8601 text or epoch milliseconds), but it is empty')
  t.equal(await failure(t, 'date', { operation: 'parse', value: 1e20 }), 'value is not a valid date: Timestamp out of range')
  t.equal(await failure(t, 'date', { operation: 'difference', value: '2024-01-01', to: 'later' }), 'to is not a valid date: unparsable: the input "later" can\'t be parsed as ISO 8601')
  t.equal(await failure(t, 'date', { operation: 'now', timezone: '{{triggerData.tz}}' }, { result: { triggerData: { tz: 'Mars/Olympus' } } }), 'timezone is not an IANA time zone (Europe/Paris, UTC): Mars/Olympus')
  t.equal(await failure(t, 'date', { operation: 'format', value: '2024-01-01' }), 'format is required to format a date')
  t.equal(await failure(t, 'date', { operation: 'format', value: '2024-01-01', format: 'y'.repeat(201) }), 'format is longer than 200 characters')
  t.equal(await failure(t, 'date', { operation: 'parse', value: '2'.repeat(1001) }), 'value is longer than 1000 characters')
  t.equal(await failure(t, 'date', { operation: 'add', value: '2024-01-01' }), 'amount must be an object of years, months, weeks, days, hours, minutes, seconds, but it is empty')
  t.equal(await failure(t, 'date', { operation: 'add', value: '2024-01-01', amount: { fortnights: 1 } }), 'amount.fortnights is not a unit: use years, months, weeks, days, hours, minutes, seconds')
  t.equal(await failure(t, 'date', { operation: 'add', value: '2024-01-01', amount: { months: 1.5 } }), 'amount.months must be a whole number from -1000000 to 1000000')
  t.equal(await failure(t, 'date', { operation: 'add', value: '2024-01-01', amount: { days: 'soon' } }), 'amount.days must be a number from -1000000 to 1000000')
  t.equal(await failure(t, 'date', { operation: 'add', value: '2024-01-01', amount: { years: 1_000_000 } }), 'value plus amount is out of range: invalid input')
  t.equal(await failure(t, 'date', { operation: 'when' }), 'operation must be one of format, parse, add, subtract, difference, now')
  t.equal(await failure(t, 'date', { operation: 'difference', value: 0, unit: 'fortnights' }), 'unit must be one of milliseconds, seconds, minutes, hours, days, weeks, months, years')
})

t.test('date at save time: time zones, operations and amounts', async (t) => {
  t.equal(refusal(t, 'date', { operation: 'now', timezone: 'Mars/Olympus' }), 'Node n1: timezone is not an IANA time zone (Europe/Paris, UTC): Mars/Olympus')
  t.equal(refusal(t, 'date', { operation: 'when' }), 'Node n1: config.operation must be one of format, parse, add, subtract, difference, now (or a template)')
  t.equal(refusal(t, 'date', { operation: 'format', value: '2024-01-01' }), 'Node n1: format is required to format a date')
  t.equal(refusal(t, 'date', { operation: 'add', value: '2024-01-01' }), 'Node n1: amount is required to add')
  t.equal(refusal(t, 'date', { operation: 'add', value: '2024-01-01', amount: { fortnights: 1 } }), 'Node n1: config.amount.fortnights is not a known field')
  t.equal(refusal(t, 'date', { operation: 'add', value: '2024-01-01', amount: { months: 1.5 } }), 'Node n1: config.amount.months must be integer (or a template)')
  t.equal(refusal(t, 'date', { operation: 'format', value: '2024-01-01', format: 'y'.repeat(201) }), 'Node n1: config.format must not have more than 200 characters')
  t.equal(refusal(t, 'date', {}), 'Node n1: config operation is required')
  t.doesNotThrow(() => { saves('date', { operation: '{{triggerData.op}}', value: '{{triggerData.at}}', timezone: '{{triggerData.tz}}', amount: { days: '{{triggerData.days}}' }, unit: '{{triggerData.unit}}' }) })
  t.doesNotThrow(() => { saves('date', { operation: 'DIFFERENCE', value: 0, to: '2024-01-01', unit: 'Days', timezone: 'utc' }) })
})

t.test('crypto: hash, hmac with a credential, random ids', async (t) => {
  const sha256 = (text: string, encoding: 'hex' | 'base64' | 'base64url' = 'hex'): string => createHash('sha256').update(text).digest(encoding)
  t.same(await run('crypto', { operation: 'hash', value: 'abc' }), { value: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' })
  t.same(await run('crypto', { operation: 'hash', value: 'héllo', encoding: 'base64' }), { value: sha256('héllo', 'base64') }, 'text as UTF-8')
  t.same(await run('crypto', { operation: 'hash', value: '{{triggerData.order}}', encoding: 'base64url' }, { result: { triggerData: { order: { id: 'A1', total: 5 } } } }),
    { value: sha256('{"id":"A1","total":5}', 'base64url') }, 'other values as their JSON text')
  t.same(await run('crypto', { operation: 'hash', value: 42, algorithm: 'MD5' }), { value: createHash('md5').update('42').digest('hex') })
  t.same(await run('crypto', { operation: 'hash', value: '', algorithm: 'sha512' }), { value: createHash('sha512').update('').digest('hex') })

  const credential: NodeCredential = { name: 'signing', type: 'hmac', data: { secret: 'hmac-secret-value' } }
  t.same(await run('crypto', { operation: 'hmac', value: 'payload', credential: 'signing' }, { credential }),
    { value: createHmac('sha256', 'hmac-secret-value').update('payload').digest('hex') })
  t.same(await run('crypto', { operation: 'hmac', value: 'payload', algorithm: 'sha1', encoding: 'base64', credential: 'signing' }, { credential }),
    { value: createHmac('sha1', 'hmac-secret-value').update('payload').digest('base64') })

  const id = (await run('crypto', { operation: 'randomId' })).value as string
  t.match(id, /^[A-Za-z0-9]{24}$/)
  t.not((await run('crypto', { operation: 'randomId' })).value, id)
  t.match((await run('crypto', { operation: 'RANDOMID', length: 8 })).value, /^[A-Za-z0-9]{8}$/)
  t.match((await run('crypto', { operation: 'randomId', length: '{{triggerData.n}}' }, { result: { triggerData: { n: 64 } } })).value, /^[A-Za-z0-9]{64}$/)
})

t.test('crypto: bounds, missing values and credentials', async (t) => {
  const credential: NodeCredential = { name: 'signing', type: 'hmac', data: { secret: 'hmac-secret-value' } }
  t.equal(await failure(t, 'crypto', { operation: 'hash', value: 'x'.repeat(1024 * 1024 + 1) }), 'value is 1048577 bytes, more than 1048576')
  t.equal(await failure(t, 'crypto', { operation: 'hash' }), 'value is required to hash')
  t.equal(await failure(t, 'crypto', { operation: 'hmac', value: 'x' }), 'credential is required for hmac: the name of an hmac credential')
  t.equal(await failure(t, 'crypto', { operation: 'hmac', value: 'x', credential: 'api' }, { credential: { name: 'api', type: 'bearer', data: { token: 'bearer-token-value' } } }),
    'Credential api is bearer: crypto needs an hmac credential')
  t.equal(await failure(t, 'crypto', { operation: 'hmac', value: 'x', algorithm: 'md5', credential: 'signing' }, { credential }), 'algorithm must be one of sha1, sha256, sha384, sha512')
  t.equal(await failure(t, 'crypto', { operation: 'hash', value: 'x', algorithm: 'md4' }), 'algorithm must be one of sha1, sha256, sha384, sha512, md5')
  t.equal(await failure(t, 'crypto', { operation: 'hash', value: 'x', encoding: 'base32' }), 'encoding must be one of hex, base64, base64url')
  t.equal(await failure(t, 'crypto', { operation: 'randomId', length: 7 }), 'length must be a number from 8 to 64')
  t.equal(await failure(t, 'crypto', { operation: 'randomId', length: 8.5 }), 'length must be a whole number from 8 to 64')
  t.equal(await failure(t, 'crypto', {}), 'operation is required: one of hash, hmac, randomId')

  t.equal(refusal(t, 'crypto', { operation: 'hash', value: 'x', algorithm: 'md4' }), 'Node n1: config.algorithm must be one of sha1, sha256, sha384, sha512, md5 (or a template)')
  t.equal(refusal(t, 'crypto', { operation: 'hmac', value: 'x', algorithm: 'md5', credential: 'signing' }), 'Node n1: algorithm md5 is for hash only: hmac takes sha1, sha256, sha384, sha512')
  t.equal(refusal(t, 'crypto', { operation: 'hmac', value: 'x' }), 'Node n1: credential is required for hmac: the name of an hmac credential')
  t.equal(refusal(t, 'crypto', { operation: 'randomId', length: 65 }), 'Node n1: config.length must be <= 64 (or a template)')
  t.equal(refusal(t, 'crypto', { operation: 'hash', value: 'x', encoding: 'base32' }), 'Node n1: config.encoding must be one of hex, base64, base64url (or a template)')
  t.doesNotThrow(() => { saves('crypto', { operation: '{{triggerData.op}}', value: '{{triggerData.email}}', algorithm: '{{triggerData.algorithm}}', encoding: '{{triggerData.encoding}}' }) })
  t.doesNotThrow(() => { saves('crypto', { operation: 'hmac', value: '{{triggerData.body}}', credential: 'signing', algorithm: 'sha512' }) })
})
