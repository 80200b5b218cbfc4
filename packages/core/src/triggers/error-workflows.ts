import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import type { TriggerType } from '../db/schema/index.ts'
import { textArray } from '../db/sql.ts'
import { RUN_FAILED_EVENT, type OutboxEvent } from '../events/outbox.ts'
import type { Logger } from '../logger.ts'
import { insertRuns, type CreatedRun } from '../runs/start.ts'

/** What an error workflow's run starts with (README, Error workflows): `{run: ErrorTriggerRun}`. */
interface ErrorTriggerRun {
  id: string
  workflowId: string
  workflowName: string
  error: string | null
  /** The node the run failed at; null when it failed before reaching one. */
  failedNodeId: string | null
  triggerData: unknown
  startedAt: string | null
}

interface FailedRunRow {
  run: ErrorTriggerRun
  errorWorkflowId: string
  /** The error workflow to start, null when its workflow names one that is gone or became a CRON workflow. */
  target: { id: string, userId: string, triggerType: TriggerType, runTags: string | null } | null
}

/**
 * Inserts, in the dispatch's transaction `tx`, the runs of the error workflows of the failed runs
 * whose `workflow.run.failed` events are dispatched (README, Error workflows), with
 * `error_of_run_id` the failed run: a failed run's error workflow starts once however often its
 * event is dispatched (runs_error_of_run_idx). Not for the runs of an error workflow (no loop),
 * child runs (their failure is their parent's to report), test runs, or events a caller posted.
 * The error workflow is called, not triggered: active or not, without its flowControl.
 */
export async function insertErrorRuns (tx: DbOrTx, events: readonly OutboxEvent[], logger: Pick<Logger, 'warn'>): Promise<CreatedRun[]> {
  const eventIds = events.filter(({ name }) => name === RUN_FAILED_EVENT).map(({ id }) => id)
  if (eventIds.length === 0) return []
  // The event's run and user must agree: a payload names a run of its own user only.
  const failed = await tx.execute<FailedRunRow & Record<string, unknown>>(sql`
    select w.error_workflow_id as "errorWorkflowId",
      json_build_object('id', r.id, 'workflowId', r.workflow_id, 'workflowName', w.name, 'error', r.error,
        'failedNodeId', r.current_node_id, 'triggerData', r.trigger_data, 'startedAt', r.started_at) as run,
      case when target.id is not null then json_build_object('id', target.id, 'userId', target.user_id,
        'triggerType', target.trigger_type, 'runTags', target.run_tags) end as target
    from events e
    join runs r on r.id = e.payload->>'runId' and r.user_id = e.user_id
    join workflows w on w.id = r.workflow_id
    left join workflows target on target.id = w.error_workflow_id and target.user_id = w.user_id and target.trigger_type <> 'CRON'
    where e.id = any(${textArray(eventIds)}) and not e.started_by_writer
      and w.error_workflow_id is not null and r.error_of_run_id is null and r.parent_run_id is null and not r.test
  `)
  for (const { run, errorWorkflowId, target } of failed) {
    if (target === null) logger.warn({ runId: run.id, workflowId: run.workflowId, errorWorkflowId }, 'error workflow not started: it is gone or a CRON workflow')
  }
  const { created } = await insertRuns(tx, {
    runs: failed.flatMap(({ run, target }) => target === null
      ? []
      : [{ workflow: target, triggerData: { run: { ...run, startedAt: run.startedAt === null ? null : new Date(run.startedAt).toISOString() } }, errorOfRunId: run.id }])
  })
  return created
}
