import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { optionalBoolean, requiredString } from './config.ts'
import { isFinished } from '../../db/schema/runs.ts'
import { awaitChildren, childFailure, startChildren } from './child-runs.ts'
import { defineNode, PURE_TRAITS, templated } from './definition.ts'

/**
 * Calls another workflow of the owner (any trigger type but CRON, active or not: README,
 * Flow) with `input` as its triggerData, as a child run. Waiting, the run is WAITING
 * (no worker held) until the child ends, and goes on with its node outputs, or fails with its
 * error; not waiting, it goes on at once with the child's run id.
 */
export const runWorkflow = defineNode({
  type: 'run_workflow',
  category: 'Flow',
  description: 'Runs another workflow with an input as its triggerData, waiting for its result or not.',
  config: {
    workflowId: templated(Type.String({ minLength: 1, maxLength: 64, description: 'The workflow to run: yours, not a CRON workflow; active or not.' })),
    input: Type.Optional(Type.Unknown({ description: 'Its triggerData (templates rendered). Default: {}.' })),
    wait: Type.Optional(templated(Type.Boolean({ default: true, description: 'Wait for it to end and continue with its node outputs; false: continue at once with its run id.' })))
  },
  example: { workflowId: 'workflow-id', input: { orderId: '{{triggerData.orderId}}' } },
  // Its child is started once per run and node (the insert skips it when it exists), so it needs no checkpoint before it.
  traits: { ...PURE_TRAITS, pure: false, retries: { allowed: false }, callsWorkflow: 'workflowId' },
  async execute (context) {
    const { node, config, result, control, run, log } = context
    // The first time the node runs it starts its child; each time after (woken, or after a crash), it finds it.
    const started = typeof (result[node.id] as { runId?: unknown } | undefined)?.runId === 'string'
    const workflowId = started ? undefined : requiredString(config, 'workflowId')
    if (workflowId !== undefined) await startChildren(context, workflowId, [{ index: 0, triggerData: config.input ?? {} }])
    const child = await control.children.child(run.id, node.id, 0)
    if (child === undefined) throw new NodeError('the child run was not found')
    if (workflowId !== undefined) {
      log('INFO', `Started run ${child.runId} of workflow ${workflowId}`)
      if (optionalBoolean(config, 'wait') === false) return { output: { runId: child.runId } }
    }
    if (!isFinished(child.status)) return awaitChildren({ runId: child.runId, status: child.status })
    if (child.status !== 'SUCCESS') throw childFailure(child, 'Sub-workflow run')
    return { output: { runId: child.runId, status: child.status, output: child.output ?? {} } }
  }
})
