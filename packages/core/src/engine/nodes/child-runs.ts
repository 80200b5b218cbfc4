import type { ChildParent, ChildRun } from '../children.ts'
import { NodeError, type NodeContext, type NodeResult } from '../types.ts'

/**
 * What run_workflow and foreach share (engine/README.md, "Child runs"): starting children, the
 * depth bound, and the suspension that waits for them. A child's end wakes the parent; the
 * parent also checks again on a timer, in case a wake was lost (a worker killed between a
 * child's end and its wake): at most once a minute per node.
 */
const RECHECK_MS = 60_000

/** The parent's suspension while its children run: `output` is stored, and shown, meanwhile. */
export function awaitChildren (output: Record<string, unknown>, now = Date.now()): NodeResult {
  const minute = Math.ceil(now / RECHECK_MS) * RECHECK_MS
  const until = new Date(minute + RECHECK_MS)
  return { output: { ...output, until: until.toISOString() }, suspendUntil: until, suspendKey: String(minute) }
}

/** The parent of the children `context`'s node starts, once the depth bound allows another level. */
export function childParent ({ run, node, control }: Pick<NodeContext, 'run' | 'node' | 'control'>): ChildParent {
  const max = control.limits.subworkflowMaxDepth
  if (run.depth >= max) {
    throw new NodeError(`Sub-workflows nested deeper than ${max} levels (SUBWORKFLOW_MAX_DEPTH): does a workflow call itself?`)
  }
  return { runId: run.id, userId: run.userId, nodeId: node.id, depth: run.depth }
}

/** Starts the children of `items`; a NodeError names a workflow that cannot be called. */
export async function startChildren (context: Pick<NodeContext, 'run' | 'node' | 'control'>, workflowId: string, items: ReadonlyArray<{ index: number, triggerData: unknown }>): Promise<void> {
  const started = await context.control.children.start(childParent(context), workflowId, items)
  if (started === 'missing') throw new NodeError(`Workflow ${workflowId} not found`)
  if (started === 'cron') throw new NodeError(`Workflow ${workflowId} is a CRON workflow: it cannot be called`)
}

/** A child that did not succeed, as a node error. */
export const childFailure = (child: ChildRun, what: string): NodeError =>
  new NodeError(`${what} (run ${child.runId}) ${child.status === 'CANCELLED' ? 'was cancelled' : `failed: ${child.error ?? 'unknown error'}`}`)
