import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import type { EdgeRule, RunStatus, TriggerType, WorkflowNode } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import { isAdmin, type Viewer, workflowLimit } from '../users/viewer.ts'

/** A run to replay, with what starting its replay needs of its workflow (never the nodes). */
interface ReplaySource {
  id: string
  status: RunStatus
  workflowVersion: number
  workflow: { id: string, userId: string, triggerType: TriggerType, isActive: boolean }
}

/** The run `id` as `viewer` may see it, with its workflow; null when they may not. One statement, payloads left in the database. */
export async function replaySource (db: DbOrTx, id: string, viewer: Viewer): Promise<ReplaySource | null> {
  const [row] = await db.execute<{ id: string, status: RunStatus, workflowVersion: number, workflowId: string, userId: string, triggerType: TriggerType, isActive: boolean }>(sql`
    select runs.id, runs.status, runs.workflow_version as "workflowVersion", workflows.id as "workflowId",
      workflows.user_id as "userId", workflows.trigger_type as "triggerType", workflows.is_active as "isActive"
    from runs join workflows on workflows.id = runs.workflow_id
    where runs.id = ${id} ${isAdmin(viewer) ? sql`` : sql`and runs.user_id = ${viewer.id}`} and ${workflowLimit(viewer, sql`runs.workflow_id`)}
  `)
  if (row === undefined) return null
  const { workflowId, userId, triggerType, isActive, ...run } = row
  return { ...run, workflow: { id: workflowId, userId, triggerType, isActive } }
}

interface UnretriedFilter {
  workflowId: string
  status: RunStatus
  /** createdAt at or after this time. */
  from: Date
  /** createdAt before this time. */
  to: Date
  limit: number
}

/**
 * The oldest runs of a workflow in a time range with a status that no run replays yet. Takes the
 * workflow's bulk retry lock first (until `tx` ends), and reads after it in a statement of its own,
 * so a concurrent bulk retry of the workflow waits and then sees the replays this one committed:
 * no run is replayed twice. The runs are share-locked until `tx` ends, so retention (which skips
 * locked rows) cannot delete one before its replay has copied it.
 */
export async function lockRunsToReplay (tx: DbOrTx, filter: UnretriedFilter): Promise<Array<{ id: string, workflowVersion: number }>> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`bulk-retry:${filter.workflowId}`}, 0))`)
  return await tx.execute<{ id: string, workflowVersion: number }>(sql`
    select id, workflow_version as "workflowVersion" from runs
    where workflow_id = ${filter.workflowId} and status = ${filter.status}
      and created_at >= ${filter.from.toISOString()} and created_at < ${filter.to.toISOString()}
      and not exists (select from runs replay where replay.retried_from = runs.id)
    order by created_at, id
    limit ${filter.limit}
    for key share
  `)
}

/**
 * What a retry from a node needs of the run `id`: its result and the definition the retry will
 * execute (`version`, or the workflow's current one), in one statement.
 */
export async function replayDefinition (db: DbOrTx, id: string, version?: number): Promise<{ result: Record<string, unknown>, nodes: WorkflowNode[], edges: unknown, edgeRule: EdgeRule }> {
  const [row] = await db.execute<{ result: Record<string, unknown>, nodes: WorkflowNode[], edges: unknown, edgeRule: EdgeRule }>(sql`
    select runs.result, coalesce(versions.nodes, workflows.nodes) as nodes,
      case when versions.workflow_id is null then workflows.edges else versions.edges end as edges,
      coalesce(versions.edge_rule, 'all') as "edgeRule"
    from runs join workflows on workflows.id = runs.workflow_id
    left join workflow_versions versions on versions.workflow_id = runs.workflow_id and versions.version = coalesce(${version ?? null}::integer, workflows.version)
    where runs.id = ${id}
  `)
  if (row === undefined) throw new DomainError('RUN_NOT_FOUND', 'Run not found')
  return row
}
