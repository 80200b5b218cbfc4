import { Type } from 'typebox'
import { NodeError, type NodeContext } from '../types.ts'
import { optionalBoolean, optionalNumber, requiredString } from './config.ts'
import { awaitChildren, childFailure, startChildren } from './child-runs.ts'
import { defineNode, PURE_TRAITS, templated } from './definition.ts'

/** The most children of one foreach node that run at once. */
const MAX_CONCURRENCY = 100
const DEFAULT_CONCURRENCY = 5

/**
 * Runs a workflow once per item of a list (`{item, index}` as each child's triggerData), at
 * most `concurrency` at a time, and goes on once every child ended, with their node outputs in
 * item order. Each time a child ends the node is woken: it starts the next items and suspends
 * again, so a loop of 10,000 items holds no worker and the parent's row is written once per
 * wake, not per child (engine/README.md, "Child runs").
 */
export const foreach = defineNode({
  type: 'foreach',
  category: 'Flow',
  description: 'Runs a workflow once per item of a list, a few at a time, then continues with every result in order.',
  config: {
    workflowId: templated(Type.String({ minLength: 1, maxLength: 64, description: 'The workflow each item runs: yours, not a CRON workflow; active or not.' })),
    items: templated(Type.Array(Type.Unknown(), { description: 'The list (FOREACH_MAX_ITEMS at most), usually a template: {{triggerData.lines}}.' })),
    concurrency: Type.Optional(templated(Type.Integer({ minimum: 1, maximum: MAX_CONCURRENCY, default: DEFAULT_CONCURRENCY, description: 'Items running at once.' }))),
    continueOnFailure: Type.Optional(templated(Type.Boolean({ default: false, description: 'Run every item even when some fail (their errors in errors); false: the first failure cancels the rest and fails the node.' }))),
    collectOutputs: Type.Optional(templated(Type.Boolean({ default: true, description: 'Put each child’s node outputs in results; false: counts and errors only (for outputs past NODE_OUTPUT_MAX_BYTES).' })))
  },
  example: { workflowId: 'workflow-id', items: '{{triggerData.lines}}', concurrency: 5 },
  // Its children are started once per item (the insert skips those that exist), so it needs no checkpoint before it.
  traits: { ...PURE_TRAITS, pure: false, retries: { allowed: false }, callsWorkflow: 'workflowId' },
  async execute (context) {
    const { node, config, control, run, log } = context
    const items = config.items
    if (!Array.isArray(items)) throw new NodeError('items must be a list')
    const maxItems = control.limits.foreachMaxItems
    if (items.length > maxItems) throw new NodeError(`items has ${items.length} items, more than ${maxItems} (FOREACH_MAX_ITEMS)`)
    const workflowId = requiredString(config, 'workflowId')
    const concurrency = optionalNumber(config, 'concurrency', 1, MAX_CONCURRENCY) ?? DEFAULT_CONCURRENCY
    const continueOnFailure = optionalBoolean(config, 'continueOnFailure') ?? false
    const { started, succeeded, failed, firstFailure } = await control.children.progress(run.id, node.id)
    if (firstFailure !== null && !continueOnFailure) {
      const cancelled = await control.children.cancel(run.id, node.id)
      if (cancelled > 0) log('INFO', `Cancelled ${cancelled} runs of the items left`)
      throw childFailure(firstFailure, `Item ${firstFailure.index}`)
    }
    if (succeeded + failed === items.length) return { output: await collected(context, items.length, optionalBoolean(config, 'collectOutputs') ?? true) }
    const running = started - succeeded - failed
    const next = Array.from({ length: Math.max(0, Math.min(concurrency - running, items.length - started)) }, (_, n) => started + n)
    if (next.length > 0) await startChildren(context, workflowId, next.map((index) => ({ index, triggerData: { item: items[index], index } })))
    return awaitChildren({ total: items.length, started: started + next.length, succeeded, failed })
  }
})

/** The node's output once every child ended: counts, each child's outputs in item order (null where it failed) and the failures. */
async function collected ({ run, node, control }: Pick<NodeContext, 'run' | 'node' | 'control'>, total: number, withOutputs: boolean): Promise<Record<string, unknown>> {
  const { children, cut } = await control.children.results(run.id, node.id, withOutputs ? control.limits.nodeOutputMaxBytes : undefined)
  if (cut) throw new NodeError(`The items' outputs exceed ${control.limits.nodeOutputMaxBytes} bytes (NODE_OUTPUT_MAX_BYTES): set collectOutputs to false`)
  const errors = children.filter((child) => child.status !== 'SUCCESS').map((child) => ({ index: child.index, runId: child.runId, status: child.status, error: child.error }))
  return {
    total,
    succeeded: total - errors.length,
    failed: errors.length,
    ...(withOutputs && { results: children.map((child) => child.output ?? null) }),
    errors
  }
}
