import t from 'tap'
import type { WorkflowNode } from '../src/db/schema/workflows.ts'
import { nodeDefinition } from '../src/engine/nodes/index.ts'
import { DomainError } from '../src/errors.ts'
import { renameNode } from '../src/workflows/rename-node.ts'
import { validateWorkflowGraph } from '../src/workflows/validation.ts'

const traitsOf = (type: string) => nodeDefinition(type)?.traits

/** The reference workflow: webhook → code computes a total → condition on it → http_request, else send_chat. */
const reference = (): { nodes: WorkflowNode[], edges?: unknown } => ({
  nodes: [
    { id: 'code', type: 'code', config: { code: 'return { total: input.triggerData.body.items.length }' }, next: 'check' },
    { id: 'check', type: 'condition', config: { field: 'code.total', operator: 'gt', value: 100, then: 'notify', else: 'reply' } },
    { id: 'notify', type: 'http_request', config: { method: 'POST', url: 'https://example.test/{{ code.total }}', body: { total: '{{code.total}}', items: ['{{code[0] | json}}', 'code.total'] } } },
    { id: 'reply', type: 'send_chat', config: { phone: '{{triggerData.body.phone}}', text: 'Hi {{triggerData.body.name}}, your total is {{code.total | default: \'0\'}}' } }
  ]
})

t.test('renaming a node rewrites its id, its links, its templates and its condition paths', async (t) => {
  const before = reference()
  const frozen = JSON.stringify(before)
  const renamed = renameNode(before, 'code', 'compute_total', traitsOf)
  t.equal(JSON.stringify(before), frozen, 'the input is left as it was')
  const [code, check, notify, reply] = renamed.nodes
  t.equal(code!.id, 'compute_total')
  t.equal(code!.config!.code, 'return { total: input.triggerData.body.items.length }')
  t.equal(code!.next, 'check')
  t.equal(check!.config!.field, 'compute_total.total')
  t.same(notify!.config, {
    method: 'POST',
    url: 'https://example.test/{{ compute_total.total }}',
    body: { total: '{{compute_total.total}}', items: ['{{compute_total[0] | json}}', 'code.total'] }
  }, 'spacing, filters and index forms kept; text that is no template is left alone')
  t.equal(reply!.config!.text, 'Hi {{triggerData.body.name}}, your total is {{compute_total.total | default: \'0\'}}')
  t.equal(reply!.config!.phone, '{{triggerData.body.phone}}')
  t.same(renamed.unrewritable, [], 'the renamed code node does not mention itself')
  t.same(renamed.rewritten, [
    { nodeId: 'check', field: 'field' },
    { nodeId: 'notify', field: 'url' },
    { nodeId: 'notify', field: 'body.total' },
    { nodeId: 'notify', field: 'body.items[0]' },
    { nodeId: 'reply', field: 'text' }
  ])
  t.doesNotThrow(() => { validateWorkflowGraph(renamed.nodes, renamed.edges) }, 'the result is a valid workflow')
})

t.test('every kind of link is rewritten: next, node, map and list link fields, edges', async (t) => {
  const nodes: WorkflowNode[] = [
    { id: 'start', type: 'set', config: { values: {} }, next: 'a' },
    { id: 'a', type: 'condition', config: { field: 'triggerData.kind', cases: { gold: 'b', silver: 'x' }, default: 'x' } },
    { id: 'b', type: 'ask', config: { text: 'Sure?', invalid: 'x', timedOut: 'x', exited: 'c' }, next: 'c' },
    { id: 'c', type: 'approval', config: { approved: 'fork', rejected: 'x' } },
    { id: 'fork', type: 'parallel', config: { branches: ['x', 'y'] } },
    { id: 'x', type: 'set', config: { values: { seen: '{{fork.branches.x.outputs.x.seen}}' } }, next: 'join' },
    { id: 'y', type: 'set', config: { values: {} }, next: 'join' },
    { id: 'join', type: 'merge', config: {} },
    { id: 'after', type: 'set', config: { values: { fromX: '{{join.x.x.seen}}', fromY: '{{join.y.y}}', list: '{{join[0].x}}' } } }
  ]
  const edges = [{ source: 'join', target: 'after', sourceHandle: null }, { source: 'x', target: 'y', id: 'e1' }]
  const renamed = renameNode({ nodes, edges }, 'x', 'lookup', traitsOf)
  const byId = new Map(renamed.nodes.map((node) => [node.id, node]))
  t.same(byId.get('a')!.config!.cases, { gold: 'b', silver: 'lookup' })
  t.equal(byId.get('a')!.config!.default, 'lookup')
  t.match(byId.get('b')!.config, { invalid: 'lookup', timedOut: 'lookup', exited: 'c' })
  t.equal(byId.get('c')!.config!.rejected, 'lookup')
  t.same(byId.get('fork')!.config!.branches, ['lookup', 'y'])
  t.same(byId.get('lookup')!.config!.values, { seen: '{{fork.branches.lookup.outputs.lookup.seen}}' }, 'a parallel node’s output is keyed by branch and node ids')
  t.same(byId.get('after')!.config!.values, { fromX: '{{join.lookup.lookup.seen}}', fromY: '{{join.y.y}}', list: '{{join[0].lookup}}' }, 'so is a merge’s')
  t.same(renamed.edges, [{ source: 'join', target: 'after', sourceHandle: null }, { source: 'lookup', target: 'y', id: 'e1' }])
  t.same(renamed.rewritten, [
    { nodeId: 'a', field: 'cases.silver' },
    { nodeId: 'a', field: 'default' },
    { nodeId: 'b', field: 'invalid' },
    { nodeId: 'b', field: 'timedOut' },
    { nodeId: 'c', field: 'rejected' },
    { nodeId: 'fork', field: 'branches[0]' },
    { nodeId: 'lookup', field: 'values.seen' },
    { nodeId: 'after', field: 'values.fromX' },
    { nodeId: 'after', field: 'values.list' },
    { nodeId: 'lookup', field: 'edges[1]' }
  ])
})

t.test('mentions inside code are listed, never rewritten', async (t) => {
  const nodes: WorkflowNode[] = [
    { id: 'fetch', type: 'http_request', config: { url: 'https://example.test' }, next: 'js' },
    { id: 'js', type: 'code', config: { code: 'const a = input.fetch.body\nconst b = input["fetch"]\nreturn { a, b }' }, next: 'other' },
    { id: 'other', type: 'code', config: { code: 'return { prefetched: input.prefetch, fetcher: 1 }' } }
  ]
  const renamed = renameNode({ nodes }, 'fetch', 'load', traitsOf)
  t.same(renamed.unrewritable, [{ nodeId: 'js', field: 'code' }], 'a whole-word mention only: prefetch and fetcher are other names')
  t.equal(renamed.nodes[1]!.config!.code, nodes[1]!.config!.code)
  t.equal(renamed.nodes[0]!.id, 'load')
})

t.test('refusals: from names no node, to is taken, to cannot be read by a template', async (t) => {
  const refusal = (from: string, to: string) => {
    try {
      renameNode(reference(), from, to, traitsOf)
    } catch (err) {
      return err instanceof DomainError ? { code: err.code, message: err.message } : err
    }
    return undefined
  }
  t.same(refusal('nope', 'x'), { code: 'VALIDATION_ERROR', message: 'from names no node of the workflow: nope' })
  t.same(refusal('code', 'check'), { code: 'INVALID_WORKFLOW_GRAPH', message: 'Duplicate node id: check' })
  t.match(refusal('code', 'compute.total'), { code: 'VALIDATION_ERROR', message: /^to cannot be read by a template: compute\.total/ })
  t.equal(refusal('reply', 'reply.v2'), undefined, 'a node no template reads may take any id')
  const same = renameNode(reference(), 'code', 'code', traitsOf)
  t.same(same.nodes, reference().nodes, 'a rename to the same id changes nothing')
})
