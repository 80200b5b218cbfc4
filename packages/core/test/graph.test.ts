import t from 'tap'
import type { WorkflowNode } from '../src/db/schema/workflows.ts'
import { NODE_LINK_FIELDS } from '../src/engine/nodes/index.ts'
import { nextNodeId, startNode } from '../src/engine/graph.ts'

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
