import { readFile } from 'node:fs/promises'
import t from 'tap'
import { defineNode, NODE_CATEGORIES, PURE_TRAITS } from '../src/engine/nodes/definition.ts'
import { describeNodeTypes, NODE_TYPES } from '../src/engine/nodes/index.ts'
import { nodeReferenceMarkdown } from '../src/engine/nodes/reference.ts'
import type { WorkflowNode } from '../src/db/schema/workflows.ts'
import { validateWorkflowGraph } from '../src/workflows/validation.ts'

t.test('docs/nodes.md is the reference the definitions write (pnpm docs:nodes)', async (t) => {
  const written = await readFile(new URL('../../../docs/nodes.md', import.meta.url), 'utf8')
  t.equal(written, nodeReferenceMarkdown(), 'run pnpm docs:nodes after changing a node definition')
})

const stub = (id: string, next: string): WorkflowNode => ({ id, type: 'set', config: { values: {} }, next })

/** A type's example as a workflow: alone, or, for a parallel or a merge, in the smallest graph that needs it (packages/core/src/engine/README.md, "Branches and joins"). */
function exampleGraph ({ type, example, traits }: ReturnType<typeof describeNodeTypes>[number]): WorkflowNode[] {
  const node: WorkflowNode = { id: 'example', type, config: example }
  if (traits.flow === 'fork') return [node, ...(example.branches as string[]).map((id) => stub(id, 'join')), { id: 'join', type: 'merge', config: {} }]
  if (traits.flow === 'join') return [{ id: 'fork', type: 'parallel', config: { branches: ['a', 'b'] } }, stub('a', 'example'), stub('b', 'example'), node]
  return [node]
}

t.test('every node type is whole: described, with a schema, and an example its own save-time checks accept', async (t) => {
  const described = describeNodeTypes()
  t.same(described.map((nodeType) => nodeType.type), NODE_TYPES)
  const categories = described.map((nodeType) => NODE_CATEGORIES.indexOf(nodeType.category))
  t.same(categories, [...categories].sort((a, b) => a - b), 'listed by category, in the palette\'s order')
  for (const nodeType of described) {
    t.ok(nodeType.description.length > 20, `${nodeType.type} is described`)
    t.ok(Object.keys((nodeType.configSchema as { properties: object }).properties).length > 0, `${nodeType.type} has config fields`)
    t.doesNotThrow(() => { validateWorkflowGraph(exampleGraph(nodeType), []) }, `${nodeType.type}'s example is a valid node`)
  }
})

t.test('a definition missing a part does not compile', async (t) => {
  // @ts-expect-error category, description, example and traits are required: the catalogue cannot hold a partial type.
  const partial = defineNode({ type: 'partial', config: {}, execute: async () => ({ output: null }) })
  t.equal(partial.type, 'partial')
  t.ok(PURE_TRAITS.pure)
})
