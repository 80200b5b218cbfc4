import t from 'tap'
import { retryStartPoint } from '../src/workflows/retry-point.ts'

const chain = {
  nodes: [
    { id: 'a', type: 'set', config: { values: { x: 1 } }, next: 'check' },
    { id: 'check', type: 'condition', config: { field: '{{a.x}}', operator: 'equals', value: 1, then: 'yes', else: 'no' } },
    { id: 'yes', type: 'set', config: {}, next: 'end' },
    { id: 'no', type: 'set', config: {}, next: 'end' },
    { id: 'end', type: 'set', config: {} }
  ]
}
const result = { triggerData: { n: 1 }, a: { x: 1 }, check: { result: true }, yes: { ok: 1 }, end: { done: true } }

t.test('keeps the outputs of the nodes before the node, drops it and everything after it', async (t) => {
  t.same(retryStartPoint(chain, result, 'check'), { nodeId: 'check', result: { triggerData: { n: 1 }, a: { x: 1 } } })
  t.same(retryStartPoint(chain, result, 'end').result, { triggerData: { n: 1 }, a: { x: 1 }, check: { result: true }, yes: { ok: 1 } })
  t.same(retryStartPoint(chain, result, 'a').result, { triggerData: { n: 1 } })
})

t.test('refuses a node the workflow lacks, a node inside a parallel branch, and a masked credential value before the node', async (t) => {
  t.throws(() => retryStartPoint(chain, result, 'nope'), { code: 'VALIDATION_ERROR', message: 'fromNodeId names no node of the workflow: nope' })
  const forked = {
    nodes: [
      { id: 'fork', type: 'parallel', config: { branches: ['left', 'right'] } },
      { id: 'left', type: 'set', config: {}, next: 'join' },
      { id: 'right', type: 'set', config: {}, next: 'join' },
      { id: 'join', type: 'merge', config: {}, next: 'after' },
      { id: 'after', type: 'set', config: {} }
    ]
  }
  t.throws(() => retryStartPoint(forked, {}, 'left'), { message: 'Node left is inside a parallel branch: retry from the parallel node' })
  t.same(retryStartPoint(forked, { fork: {}, left: {}, right: {}, join: {} }, 'after').result, { fork: {}, left: {}, right: {}, join: {} }, 'after the merge: allowed')
  t.same(retryStartPoint(forked, { fork: {} }, 'fork').result, {})
  t.throws(() => retryStartPoint(chain, { ...result, a: { headers: { authorization: 'Bearer [credential]' } } }, 'end'), {
    message: 'Cannot retry from end: the output of a holds a masked credential value; retry the whole run'
  })
  t.same(retryStartPoint(chain, { ...result, yes: { token: '[credential]' } }, 'check').result, { triggerData: { n: 1 }, a: { x: 1 } }, 'a masked value after the node is dropped with it')
})

t.test('a node inside the branch of a node\'s edges (edge rule all) is refused; under first it is an ordinary node', async (t) => {
  const fanOut = {
    nodes: [{ id: 'a', type: 'set', config: {} }, { id: 'b', type: 'set', config: {} }, { id: 'c', type: 'set', config: {} }],
    edges: [{ source: 'a', target: 'b' }, { source: 'a', target: 'c' }]
  }
  t.throws(() => retryStartPoint({ ...fanOut, edgeRule: 'all' }, {}, 'c'), { message: 'Node c is inside a parallel branch: retry from a, whose edges start the branches' })
  t.same(retryStartPoint({ ...fanOut, edgeRule: 'all' }, { a: {}, 'a:fork': {}, b: {}, c: {} }, 'a').result, {}, 'from the node that forks: its fork runs again')
  t.throws(() => retryStartPoint({ ...fanOut, edgeRule: 'all' }, {}, 'a:fork'), { message: 'fromNodeId names no node of the workflow: a:fork' })
  t.same(retryStartPoint({ ...fanOut, edgeRule: 'first' }, { a: {}, b: {} }, 'c').result, { a: {}, b: {} })
})
