import { Type } from 'typebox'
import { NodeError, type NodeResult } from '../types.ts'
import { optionalBoolean } from './config.ts'
import { awaitChildren, childFailure, childParent } from './child-runs.ts'
import { defineNode, PURE_TRAITS, templated } from './definition.ts'
import { FORK_MAX_NESTING } from '../graph.ts'

/** The most branches one parallel node (or a node's edges, an implicit fork) starts. */
export const PARALLEL_MAX_BRANCHES = 10

/**
 * Starts its branches at once, each a child run of the same workflow version from its first node
 * to the merge they meet at (engine/README.md, "Branches and joins"): each checkpoints on its own,
 * on any worker. The run waits (no worker held) and goes on at the merge once the branches are
 * done: all of them, or the first to succeed when the merge's mode is `any` (the others are
 * cancelled; every branch failed fails the run). The branches' node outputs join the run's result.
 * An implicit fork (a node's edges, graph.ts `withImplicitForks`) runs as this node; when its
 * branches meet at no merge, each ends on its own and the run ends once all have.
 */
export const parallel = defineNode({
  type: 'parallel',
  category: 'Flow',
  description: `Runs several branches at once; the run continues at the merge node they meet at. A node whose edges without a sourceHandle lead to several nodes forks the same way (each target a branch), meeting at a merge or, when no branch reaches one, each ending on its own, the run ending once all have (the first failure fails it). Forks nest inside branches up to ${FORK_MAX_NESTING} levels (400 when saved beyond); each level's branches are child runs one level deeper, within SUBWORKFLOW_MAX_DEPTH.`,
  config: {
    branches: Type.Array(Type.String({ minLength: 1 }), { minItems: 2, maxItems: PARALLEL_MAX_BRANCHES, description: 'The first node of each branch.' }),
    continueOnFailure: Type.Optional(templated(Type.Boolean({ default: false, description: 'Go on to the merge when a branch fails (its error in the merge’s input); false: the first failure cancels the others and fails the run.' })))
  },
  example: { branches: ['lookupA', 'lookupB'] },
  traits: { ...PURE_TRAITS, pure: false, links: [{ field: 'branches', kind: 'list' }], flow: 'fork', retries: { allowed: false } },
  async execute (context): Promise<NodeResult> {
    const { node, config, run, result, control, flow, log } = context
    // No join: an implicit fork whose branches end on their own (a save refuses a parallel without one).
    const join = flow?.join
    const branches = config.branches
    if (!Array.isArray(branches)) throw new NodeError('branches must be a list of node ids')
    const firstOnly = join?.config?.mode === 'any'
    const continueOnFailure = optionalBoolean(config, 'continueOnFailure') ?? false
    const progress = await control.children.progress(run.id, node.id)
    if (progress.started === 0) {
      await control.children.startBranches(childParent(context), branches.map((startNodeId, index) => ({ index, startNodeId: String(startNodeId) })), result)
      log('INFO', `Started ${branches.length} branches`)
      return awaitChildren({ branches: branches.length, succeeded: 0, failed: 0 })
    }
    const { succeeded, failed, firstFailure } = progress
    const allFailed = failed === branches.length
    if (firstFailure !== null && ((!continueOnFailure && !firstOnly) || allFailed)) {
      await control.children.cancel(run.id, node.id)
      throw childFailure(firstFailure, `Branch ${String(branches[firstFailure.index])}`)
    }
    const done = firstOnly ? succeeded > 0 : succeeded + failed === branches.length
    if (!done) return awaitChildren({ branches: branches.length, succeeded, failed })
    if (firstOnly) {
      const cancelled = await control.children.cancel(run.id, node.id)
      if (cancelled > 0) log('INFO', `Cancelled ${cancelled} branches: the first one is done`)
    }
    // Each branch's own node outputs: its child's result without what the run had when it started.
    const byBranch: Record<string, unknown> = {}
    const outputs: Record<string, unknown> = {}
    const { children, cut } = await control.children.results(run.id, node.id, control.limits.nodeOutputMaxBytes)
    if (cut) throw new NodeError(`The branches' outputs exceed ${control.limits.nodeOutputMaxBytes} bytes (NODE_OUTPUT_MAX_BYTES)`)
    for (const child of children) {
      // `any` keeps the branches that succeeded or failed; those it cancelled (or a cancel stopped) are left out.
      if (firstOnly && child.status === 'CANCELLED') continue
      const own = Object.fromEntries(Object.entries(child.output ?? {}).filter(([id]) => !(id in result)))
      Object.assign(outputs, own)
      byBranch[String(branches[child.index])] = { status: child.status, runId: child.runId, error: child.error, outputs: own }
    }
    const output = { branches: byBranch }
    return join === undefined ? { output, outputs, ends: true } : { output, outputs, next: join.id }
  }
})
