import { Type } from 'typebox'
import { NodeError, type NodeResult } from '../types.ts'
import { optionalNumber, optionalString } from './config.ts'
import { defineNode, PURE_TRAITS, templated } from './definition.ts'

const MINUTE_MS = 60_000
const MAX_TIMEOUT_MINUTES = 366 * 24 * 60
const DEFAULT_TIMEOUT_MINUTES = 7 * 24 * 60
/** What the approver is asked: a message rendered longer is cut there. */
const MAX_MESSAGE_LENGTH = 2000

/**
 * Waits for a person or a partner system to approve or reject (engine/README.md, "Waits and
 * resumes"): the run is WAITING (no worker held) until `POST /api/automation/runs/:id/resume`,
 * the one-time public `POST /webhook/resume/:token`, or the timeout. The first time the node runs
 * it opens the approval (a new token, and a `workflow.run.waiting` event whose payload holds the
 * resume path, for a workflow to send to the approver) and suspends until its timeout; when the
 * run is resumed the node runs again, reads the decision and continues with `approved`,
 * `rejected` or `timedOut`. Rejected with no `rejected` node, the run ends; timed out with no
 * `timedOut` node, it fails.
 */
export const approval = defineNode({
  type: 'approval',
  category: 'Flow',
  description: 'Waits for someone to approve or reject (in the console, through the API, or a one-time link), then branches.',
  config: {
    message: Type.Optional(templated(Type.String({ maxLength: MAX_MESSAGE_LENGTH, description: 'What the approver is asked (templates rendered).' }))),
    timeoutMinutes: Type.Optional(templated(Type.Number({ minimum: 1, maximum: MAX_TIMEOUT_MINUTES, default: DEFAULT_TIMEOUT_MINUTES, description: 'How long the approval stays open (up to 366 days).' }))),
    approved: Type.Optional(Type.String({ description: 'The node to continue with when approved; absent: the node’s next.' })),
    rejected: Type.Optional(Type.String({ description: 'The node to continue with when rejected; absent: the run ends.' })),
    timedOut: Type.Optional(Type.String({ description: 'The node to continue with when nobody decided in time; absent: the run fails.' }))
  },
  example: { message: 'Refund {{triggerData.amount}} to {{triggerData.customer}}?', timeoutMinutes: 1440 },
  traits: {
    ...PURE_TRAITS,
    pure: false,
    links: [{ field: 'approved', kind: 'node' }, { field: 'rejected', kind: 'node' }, { field: 'timedOut', kind: 'node' }],
    retries: { allowed: false }
  },
  async execute ({ node, config, run, result, control, log }): Promise<NodeResult> {
    const now = Date.now()
    let wait = await control.waits.get(run.id, node.id)
    if (wait !== undefined && wait.decision === null && wait.expiresAt.getTime() <= now) wait = await control.waits.expire(run.id, node.id)
    if (wait === undefined) {
      const message = optionalString(config, 'message')?.slice(0, MAX_MESSAGE_LENGTH) ?? null
      const minutes = optionalNumber(config, 'timeoutMinutes', 1, MAX_TIMEOUT_MINUTES) ?? DEFAULT_TIMEOUT_MINUTES
      const expiresAt = new Date(now + minutes * MINUTE_MS)
      const opened = await control.waits.open({ runId: run.id, nodeId: node.id, userId: run.userId, workflowId: run.workflowId, message, expiresAt })
      if (opened === undefined) throw new NodeError('the approval was decided before it was opened')
      log('INFO', `Waiting for approval until ${expiresAt.toISOString()}`)
      return {
        output: { status: 'waiting', message, expiresAt: expiresAt.toISOString(), until: expiresAt.toISOString(), resumePath: `/webhook/resume/${opened.token}` },
        suspendUntil: expiresAt,
        events: opened.eventId === null ? [] : [opened.eventId]
      }
    }
    // Woken before anything was decided (another timer of the run): wait on.
    if (wait.decision === null) return { output: result[node.id], suspendUntil: wait.expiresAt }
    const output = { status: 'decided', decision: wait.decision, data: wait.data ?? null, decidedBy: wait.decidedBy, decidedAt: wait.decidedAt?.toISOString() ?? null }
    if (wait.decision === 'timeout') {
      if (typeof config.timedOut !== 'string') throw new NodeError(`Approval timed out at ${wait.expiresAt.toISOString()}`)
      return { output, next: config.timedOut, handles: ['timedOut', 'timeout'] }
    }
    if (wait.decision === 'reject') {
      return typeof config.rejected === 'string' ? { output, next: config.rejected, handles: ['rejected'] } : { output, ends: true }
    }
    return { output, next: typeof config.approved === 'string' ? config.approved : null, handles: ['approved'] }
  }
})
