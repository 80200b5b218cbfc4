import { context } from '@opentelemetry/api'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import { contextOf } from '../observability/tracing.ts'
import { resumeJobId, RUN_JOB, type Queues, type RunJobData } from '../queues/catalog.ts'
import type { runStore } from './run-store.ts'
import { effectiveQuotas, type Quotas } from '../users/quotas.ts'
import { database, redis, type Execution, type StepOutcome } from './execution.ts'
import { NodeError, type NodeResult } from './types.ts'

export interface SuspensionOptions {
  store: ReturnType<typeof runStore>
  /** Where resume jobs go. */
  queues: Queues
  /** Every owner's quotas unless an admin set others: a run may wait only within its owner's `waitingRuns`. */
  quotas?: Quotas
  /** Dispatches events a suspending node wrote (an approval's `workflow.run.waiting`). */
  dispatchWritten: (runId: string, eventIds: string[]) => Promise<void>
}

/**
 * Waits and resumes (engine/README.md, "Waits and resumes"): a node that returns `suspendUntil`
 * leaves its run WAITING at it, and a delayed job on the run's queue resumes it then; the node
 * runs again when it does.
 */
export function createSuspension ({ store, queues, quotas, dispatchWritten }: SuspensionOptions) {
  return {
    /** A run may wait (WAITING, a delayed job in Redis) only while its owner has fewer waiting runs than their quota. */
    async checkWaitingQuota (userId: string): Promise<void> {
      if (quotas === undefined) return
      const { waiting, quotas: set } = await database(store.waitingRuns(userId))
      const max = effectiveQuotas(quotas, set).waitingRuns
      if (waiting >= max) throw new NodeError(`Too many waiting runs (max ${max}): this run cannot wait`)
    },

    /** Writes the suspension at `node` and adds the job that resumes the run at `until`. */
    async suspend (execution: Execution, node: WorkflowNode, { suspendUntil: until, suspendKey, events }: NodeResult & { suspendUntil: Date }, requestId: string | undefined): Promise<StepOutcome> {
      const { run, pending, trace } = execution
      pending.lines.push({ nodeId: node.id, level: 'INFO', message: `Node ${node.id} waiting until ${until.toISOString()}`, at: new Date() })
      const suspended = await execution.writer.suspend(execution, node.id)
      if (suspended !== 'written') return suspended
      // The resumed part of the run logs with the request id too, and continues this execution's trace.
      const traceparent = trace.spans?.traceparent()
      const data: RunJobData = { runId: run.id, userId: run.userId, ...(requestId !== undefined && { requestId }), ...(traceparent !== undefined && { traceparent }) }
      const resumeJob = resumeJobId(run.id, node.id)
      const add = async (): Promise<unknown> => await queues[run.queue].add(RUN_JOB, data, {
        // Not a fourth `:`-separated part: BullMQ refuses a custom id with other than three, so the key
        // is encoded (an ask's `ask:2` refused every suspension of an ask, each retried as a resume).
        jobId: suspendKey === undefined ? resumeJob : `${resumeJob}@${encodeURIComponent(suspendKey)}`,
        delay: Math.max(0, until.getTime() - Date.now())
      })
      // BullMQ's PRODUCER span, and so the resumed job's CONSUMER span, is a child of this run.execute.
      await redis(traceparent === undefined ? add() : context.with(contextOf(traceparent), add))
      if (events !== undefined && events.length > 0) await dispatchWritten(run.id, events)
      return 'written'
    }
  }
}
