import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { defineNode, oneOfAnyCase, PURE_TRAITS } from './definition.ts'

const MODES = ['all', 'any'] as const
const OUTPUTS = ['byBranch', 'byNode', 'append'] as const

interface Branch { status: string, runId: string, error: string | null, outputs: Record<string, unknown> }

/** What a branch gives the merge: its node outputs, or, when it did not succeed, what says so. */
const entryOf = (branch: Branch): Record<string, unknown> =>
  branch.status === 'SUCCESS' ? branch.outputs : { status: branch.status, error: branch.error, runId: branch.runId }

/**
 * Where the branches of a parallel node meet (engine/README.md, "Branches and joins"): the run goes
 * on from here once they are done (`all`), or once the first succeeded (`any`). Its output is each
 * branch's node outputs keyed by the branch's first node (`byBranch`), every branch's node outputs
 * in one object keyed by node id (`byNode`: node ids are unique in a workflow, so none collide), or
 * a list of them in branch order (`append`). A branch that failed is there too, as its status,
 * error and run id (under its first node's id for `byNode`): `any` keeps the failures it went on past. `byBranch` stays the default so that workflows saved
 * before `byNode` keep their shape; the builder adds merges with `byNode` (docs/nodes.md, merge).
 */
export const merge = defineNode({
  type: 'merge',
  category: 'Flow',
  description: 'Joins the branches of a parallel node, or of a node whose edges run several targets: continues when all (or the first) are done, with their outputs.',
  config: {
    mode: Type.Optional(oneOfAnyCase(MODES, { default: 'all', description: 'all: wait for every branch; the first failure fails the run (unless the parallel node says continueOnFailure). any: go on with the first to succeed, cancelling the others; the branches that failed before it stay in the output; the run fails only when every branch failed.' })),
    output: Type.Optional(oneOfAnyCase(OUTPUTS, { default: 'byBranch', description: 'byBranch: { [first node of a branch]: its node outputs }; byNode: { [node of any branch]: its output }; append: a list of each branch\'s node outputs in branch order. A branch that failed (or was cancelled) is { status, error, runId } in its place (byNode: under its first node).' }))
  },
  example: { mode: 'all', output: 'byBranch' },
  traits: { ...PURE_TRAITS, flow: 'join' },
  async execute ({ config, result, flow }) {
    const fork = flow?.fork
    if (fork === undefined) throw new NodeError('merge is not reached by the branches of any parallel node')
    const branches = (result[fork.id] as { branches?: Record<string, Branch> } | undefined)?.branches ?? {}
    const byBranch = Object.fromEntries(Object.entries(branches).map(([id, branch]) => [id, entryOf(branch)]))
    const output = String(config.output ?? '').toLowerCase()
    if (output === 'append') return { output: Object.values(byBranch) }
    if (output === 'bynode') {
      return { output: Object.assign({}, ...Object.entries(branches).map(([id, branch]) => branch.status === 'SUCCESS' ? branch.outputs : { [id]: entryOf(branch) })) }
    }
    return { output: byBranch }
  }
})
