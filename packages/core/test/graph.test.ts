import t from 'tap'
import type { WorkflowNode } from '../src/db/schema/workflows.ts'
import { flowOf, NODE_LINK_FIELDS } from '../src/engine/nodes/index.ts'
import { FORK_MAX_NESTING, joinOf, nextNodeId, startNode, withImplicitForks } from '../src/engine/graph.ts'

const node = (id: string, extra: Partial<WorkflowNode> = {}): WorkflowNode => ({ id, type: 'set', config: {}, ...extra })

t.test('the start node is the first node in array order that no link points to', async (t) => {
  t.equal(startNode({ nodes: [node('b', { next: 'c' }), node('a', { next: 'b' }), node('c')] }, NODE_LINK_FIELDS)?.id, 'a')
  const condition = node('check', { type: 'condition', config: { field: 'x', then: 'yes', else: 'no' } })
  t.equal(startNode({ nodes: [node('yes'), node('no'), condition] }, NODE_LINK_FIELDS)?.id, 'check')
  t.equal(startNode({ nodes: [node('x'), node('y')], edges: [{ source: 'y', target: 'x' }] }, NODE_LINK_FIELDS)?.id, 'y')
  t.equal(startNode({ nodes: [] }, NODE_LINK_FIELDS), undefined)
})

t.test('next follows the branch the node chose, then its next, then its edges', async (t) => {
  const graph = {
    nodes: [node('a', { next: 'b' }), node('b'), node('c'), node('d')],
    edges: [{ source: 'a', target: 'd' }, { source: 'b', target: 'c' }]
  }
  t.equal(nextNodeId(graph, graph.nodes[0], NODE_LINK_FIELDS, { next: 'c' }), 'c')
  t.equal(nextNodeId(graph, graph.nodes[0], NODE_LINK_FIELDS), 'b')
  t.equal(nextNodeId(graph, graph.nodes[1], NODE_LINK_FIELDS), 'c')
  t.equal(nextNodeId(graph, graph.nodes[3], NODE_LINK_FIELDS), null, 'no link: the run ends')
})

t.test('a condition follows the edge whose handle stands for its branch, never the other one', async (t) => {
  const graph = {
    nodes: [node('check', { type: 'condition' }), node('yes'), node('no')],
    edges: [{ source: 'check', target: 'yes', sourceHandle: 'true' }, { source: 'check', target: 'no', sourceHandle: 'false' }]
  }
  t.equal(nextNodeId(graph, graph.nodes[0], NODE_LINK_FIELDS, { next: null, handles: ['true', 'then'] }), 'yes')
  t.equal(nextNodeId(graph, graph.nodes[0], NODE_LINK_FIELDS, { next: null, handles: ['false', 'else'] }), 'no')
  t.equal(nextNodeId(graph, graph.nodes[0], NODE_LINK_FIELDS, { next: null, handles: ['default'] }), null)
  const plain = { nodes: graph.nodes, edges: [{ source: 'check', target: 'no', sourceHandle: null }] }
  t.equal(nextNodeId(plain, graph.nodes[0], NODE_LINK_FIELDS, { next: null, handles: ['true'] }), 'no', 'an edge without a handle is followed')
})

t.test('a workflow without any link runs its nodes in array order', async (t) => {
  const graph = { nodes: [node('one'), node('two'), node('three')] }
  t.equal(startNode(graph, NODE_LINK_FIELDS)?.id, 'one')
  t.equal(nextNodeId(graph, graph.nodes[0], NODE_LINK_FIELDS), 'two')
  t.equal(nextNodeId(graph, graph.nodes[1], NODE_LINK_FIELDS), 'three')
  t.equal(nextNodeId(graph, graph.nodes[2], NODE_LINK_FIELDS), null)
})

t.test('once any link exists, nodes without one end the run', async (t) => {
  const graph = { nodes: [node('one', { next: 'three' }), node('two'), node('three')] }
  t.equal(nextNodeId(graph, graph.nodes[2], NODE_LINK_FIELDS), null)
})

t.test('under the edge rule all, a node\'s edges without a sourceHandle to several nodes fork through a parallel node; under first they stay as stored', async (t) => {
  const graph = {
    nodes: [node('a'), node('b'), node('c'), node('d'), node('a:fork')],
    edges: [{ source: 'a', target: 'b' }, { source: 'a', target: 'c', sourceHandle: null }, { source: 'a', target: 'd', sourceHandle: 'x' }, { source: 'a', target: 'b' }]
  }
  t.equal(withImplicitForks(graph, 'first'), graph, 'first: the graph as stored')
  t.equal(nextNodeId(graph, graph.nodes[0], NODE_LINK_FIELDS), 'b', 'first: the first edge only')
  const forked = withImplicitForks(graph, 'all')
  t.same(forked.nodes.at(-1), { id: 'a:fork-2', type: 'parallel', config: { branches: ['b', 'c'] } }, 'one branch per target, an id no node has')
  t.same(forked.edges, [{ source: 'a', target: 'a:fork-2' }, { source: 'a', target: 'd', sourceHandle: 'x' }], 'an edge with a handle keeps its meaning')
  t.same([...forked.implicitForks!], [['a:fork-2', 'a']])
  t.equal(nextNodeId(forked, forked.nodes[0], NODE_LINK_FIELDS), 'a:fork-2')
  t.equal(nextNodeId(forked, forked.nodes[0], NODE_LINK_FIELDS, { handles: ['x'] }), 'd', 'a branch chosen by its handle')
  t.equal(startNode(forked, NODE_LINK_FIELDS)?.id, 'a')

  const withNext = { nodes: [node('a', { next: 'c' }), node('b'), node('c')], edges: [{ source: 'a', target: 'b' }, { source: 'a', target: 'c' }] }
  t.equal(withImplicitForks(withNext, 'all'), withNext, 'next is followed before edges: no fork')
  const one = { nodes: [node('a'), node('b')], edges: [{ source: 'a', target: 'b' }, { source: 'a', target: 'b' }] }
  t.equal(withImplicitForks(one, 'all'), one, 'two edges to one node: no fork')
})

t.test('joinOf: an implicit fork meets at its merge or at none; forks nest up to FORK_MAX_NESTING levels', async (t) => {
  const merged = withImplicitForks({
    nodes: [node('a'), node('b'), node('c'), node('m', { type: 'merge' })],
    edges: [{ source: 'a', target: 'b' }, { source: 'a', target: 'c' }, { source: 'b', target: 'm' }, { source: 'c', target: 'm' }]
  }, 'all')
  t.same(joinOf(merged, merged.nodes.at(-1)!, NODE_LINK_FIELDS, flowOf), { joinId: 'm' })
  const open = withImplicitForks({ nodes: [node('a'), node('b'), node('c')], edges: [{ source: 'a', target: 'b' }, { source: 'a', target: 'c' }] }, 'all')
  t.same(joinOf(open, open.nodes.at(-1)!, NODE_LINK_FIELDS, flowOf), { joinId: undefined }, 'no merge: each branch ends on its own')
  const parallelOpen = { nodes: [node('p', { type: 'parallel', config: { branches: ['b', 'c'] } }), node('b'), node('c')] }
  t.match(joinOf(parallelOpen, parallelOpen.nodes[0], NODE_LINK_FIELDS, flowOf), { problem: 'branch b never reaches a merge node', at: 'p' }, 'a parallel node still needs its merge')

  /** Forks `levels` deep: each level's node forks by two edges into the next, the last level's branches end. */
  const nested = (levels: number) => {
    const nodes = [node('f1')]
    const edges = []
    for (let level = 1; level <= levels; level++) {
      const next = level === levels ? ['leafA', 'leafB'] : [`f${level + 1}`, `side${level}`]
      for (const target of next) {
        edges.push({ source: `f${level}`, target })
        nodes.push(node(target))
      }
    }
    return withImplicitForks({ nodes, edges }, 'all')
  }
  const deepest = nested(FORK_MAX_NESTING)
  t.same(joinOf(deepest, deepest.nodes.find((n) => n.id === 'f1:fork')!, NODE_LINK_FIELDS, flowOf), { joinId: undefined }, `${FORK_MAX_NESTING} levels`)
  const tooDeep = nested(FORK_MAX_NESTING + 1)
  t.match(joinOf(tooDeep, tooDeep.nodes.find((n) => n.id === 'f1:fork')!, NODE_LINK_FIELDS, flowOf), {
    problem: `branches nest deeper than ${FORK_MAX_NESTING} levels`, at: `f${FORK_MAX_NESTING + 1}:fork`
  })
})
