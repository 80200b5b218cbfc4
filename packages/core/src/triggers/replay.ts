import { and, eq } from 'drizzle-orm'
import { recordAudit, type AuditContext } from '../audit/log.ts'
import type { DbOrTx } from '../db/client.ts'
import { isFinished, workflows, type RunStatus } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import { lockRunsToReplay, replayDefinition, replaySource } from '../runs/replays.ts'
import type { RequestStart } from '../runs/group-start.ts'
import { enqueueRuns, insertRuns, type RunServiceDeps } from '../runs/start.ts'
import { isAdmin, type Viewer, workflowLimit } from '../users/viewer.ts'
import { retryStartPoint } from '../workflows/retry-point.ts'

/** Which definition a replay executes: the workflow's current version, or the one the first run executed. */
type ReplayVersion = 'current' | 'original'

/** The statuses the bulk retry picks runs by. */
export const BULK_RETRY_STATUSES = ['FAILED', 'CANCELLED'] as const satisfies readonly RunStatus[]

/** Runs one bulk retry starts at most; what is left is for the next call. */
export const BULK_RETRY_MAX_RUNS = 500

const workflowNotActive = (): DomainError => new DomainError('WORKFLOW_NOT_ACTIVE', 'Workflow is not active')

export interface Replayed {
  runId: string
  retriedFrom: string
}

export interface ReplayRunInput {
  runId: string
  viewer: Viewer
  version: ReplayVersion
  /** Idempotency-Key: the same key for the same run within 24 hours returns the first replay. */
  idempotencyKey?: string
  /** Start at this node with the outputs of the nodes before it, rather than at the start. */
  fromNodeId?: string
}

/**
 * The start of a replay of a finished run: a new run of its workflow with its triggerData and
 * raw body (so a verify_signature node checks the same bytes, copied by the insert itself), on
 * the workflow's current version or the run's own, linked to it by `retriedFrom`. As /fire: the
 * run belongs to the workflow's owner, an inactive workflow starts nothing. The key is the
 * caller's, per run replayed: a key reused for another run is another key.
 */
export async function planReplay (db: DbOrTx, input: ReplayRunInput): Promise<Omit<RequestStart, 'deadline' | 'requestId'> & { retriedFrom: string }> {
  const source = await replaySource(db, input.runId, input.viewer)
  if (source === null) throw new DomainError('RUN_NOT_FOUND', 'Run not found')
  if (!isFinished(source.status)) throw new DomainError('RUN_NOT_FINISHED', 'Run is not finished: only a finished run can be retried')
  if (!source.workflow.isActive) throw workflowNotActive()
  const version = input.version === 'original' ? source.workflowVersion : undefined
  const startAt = input.fromNodeId === undefined ? undefined : await startPointOf(db, source.id, version, input.fromNodeId)
  return {
    ...(startAt !== undefined && { startAt }),
    workflow: source.workflow,
    retriedFrom: source.id,
    ...(input.version === 'original' && { workflowVersion: source.workflowVersion }),
    ...(input.idempotencyKey !== undefined && input.idempotencyKey !== '' && { idempotencyKey: `retry:${source.id}:${input.idempotencyKey}` })
  }
}

/** Where a retry from `fromNodeId` starts: the definition it will execute, the first run's outputs before that node. */
async function startPointOf (db: DbOrTx, runId: string, version: number | undefined, fromNodeId: string) {
  const { result, nodes, edges, edgeRule } = await replayDefinition(db, runId, version)
  return retryStartPoint({ nodes, edges, edgeRule }, result, fromNodeId)
}

/** The workflow whose runs a bulk retry replays, as `viewer` may see it (never its nodes); null when they may not. */
async function replayTarget (db: DbOrTx, id: string, viewer: Viewer) {
  const [target] = await db.select({ id: workflows.id, userId: workflows.userId, triggerType: workflows.triggerType, isActive: workflows.isActive })
    .from(workflows)
    .where(and(eq(workflows.id, id), isAdmin(viewer) ? undefined : eq(workflows.userId, viewer.id), workflowLimit(viewer, workflows.id)))
    .limit(1)
  return target ?? null
}

export interface ReplayRunsInput {
  workflowId: string
  viewer: Viewer
  status: typeof BULK_RETRY_STATUSES[number]
  /** createdAt at or after this time. */
  from: Date
  /** createdAt before this time. */
  to: Date
  version: ReplayVersion
  requestId?: string
  /** Who retries, recorded in the transaction that starts the replays ('runs.bulk_retried'). */
  audit?: AuditContext
}

/**
 * Replays the runs of a workflow created in [from, to) with `status` that were not retried yet
 * (by either retry), oldest first, BULK_RETRY_MAX_RUNS at most; `more` says whether others
 * remain, which the same call, made again, replays next. Bulk retries of one workflow take turns
 * (a lock held until the replays are committed), so none replays a run twice.
 */
export async function replayRuns (deps: RunServiceDeps, input: ReplayRunsInput): Promise<{ runs: Replayed[], more: boolean }> {
  const workflow = await replayTarget(deps.db, input.workflowId, input.viewer)
  if (workflow === null) throw new DomainError('WORKFLOW_NOT_FOUND', 'Workflow not found')
  if (!workflow.isActive) throw workflowNotActive()
  // One connection: the lock, the read and the inserts share the transaction; the jobs are queued after its commit.
  const { runs, more, created } = await deps.db.transaction(async (tx) => {
    const sources = await lockRunsToReplay(tx, { workflowId: workflow.id, status: input.status, from: input.from, to: input.to, limit: BULK_RETRY_MAX_RUNS + 1 })
    const taken = sources.slice(0, BULK_RETRY_MAX_RUNS)
    const { started, created } = await insertRuns(tx, {
      runs: taken.map((source) => ({ workflow, retriedFrom: source.id, ...(input.version === 'original' && { workflowVersion: source.workflowVersion }) })),
      requestId: input.requestId
    })
    const more = sources.length > taken.length
    if (input.audit !== undefined) {
      await recordAudit(tx, input.audit, {
        action: 'runs.bulk_retried',
        targetType: 'workflow',
        targetId: workflow.id,
        details: { status: input.status, from: input.from.toISOString(), to: input.to.toISOString(), version: input.version, runs: started.length, more }
      })
    }
    return { runs: started.map(({ runId }, i) => ({ runId, retriedFrom: taken[i]!.id })), more, created }
  })
  await enqueueRuns(deps, created)
  return { runs, more }
}
