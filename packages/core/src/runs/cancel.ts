import { sql, type SQL } from 'drizzle-orm'
import { durationMsSince } from '../db/sql.ts'
import { RUN_CANCELLED_EVENT, someoneListens } from '../events/outbox.ts'

/** The most levels of children a cancel follows: SUBWORKFLOW_MAX_DEPTH is at most this. */
const MAX_CHILD_DEPTH = 50

/**
 * The `workflow.run.cancelled` events (the outbox, events/outbox.ts: `{runId, workflowId}`) of the runs
 * `ended` (a CTE returning id, workflow_id, user_id) someone listens to; each event's id is
 * `cancelled:<runId>`, a run is cancelled once.
 */
export const cancelledEvents = (ended: SQL): SQL => sql`
  insert into events (id, name, user_id, payload)
  select 'cancelled:' || ended.id, ${RUN_CANCELLED_EVENT}, ended.user_id, jsonb_build_object('runId', ended.id, 'workflowId', ended.workflow_id)
  from ${ended} as ended
  where ${someoneListens(RUN_CANCELLED_EVENT, sql`ended.user_id`, { except: sql`ended.workflow_id` })}
  returning id`

/**
 * Cancels the unfinished runs among `roots` and, level by level, their unfinished descendants
 * (a cancelled parent cancels what it waits for), with their log lines and their
 * `workflow.run.cancelled` events; returns the cancelled runs' ids (`id`) and their events' (`eventId`, null: none).
 * `roots` is a statement selecting run ids.
 */
export function cancelDescendants (roots: SQL): SQL {
  return sql`
    with recursive tree (id, level) as (
      select id, 0 from (${roots}) as root
      union all
      select child.id, tree.level + 1 from runs child join tree on child.parent_run_id = tree.id
      where tree.level < ${MAX_CHILD_DEPTH}
    ), cancelled as (
      update runs set status = 'CANCELLED', completed_at = now(),
        duration_ms = ${durationMsSince(sql`coalesce(started_at, created_at)`)}
      where id in (select id from tree) and status in ('PENDING', 'RUNNING', 'WAITING')
      returning id, workflow_id, user_id
    ), logged as (
      insert into run_logs (run_id, level, message) select id, 'INFO', 'Run cancelled with its parent' from cancelled
    ), emitted as (${cancelledEvents(sql`cancelled`)})
    select cancelled.id, emitted.id as "eventId" from cancelled left join emitted on emitted.id = 'cancelled:' || cancelled.id
  `
}
