import { sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { jsonb } from '../db/sql.ts'
import { storableText } from '../db/storable.ts'
import type { LogLevel, RunStatus } from '../db/schema/runs.ts'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import type { QueueName } from '../queues/catalog.ts'

/**
 * The engine's statements. Each step of a run is one round trip: the node's
 * result, the run's position, its log lines, a status change and the
 * workflow counters go together, and every status change is guarded by the
 * status it expects, so a cancelled or finished run is never overwritten.
 */

export interface LogLine {
  nodeId: string | null
  level: LogLevel
  message: string
  at: Date
}

export interface ClaimedRun {
  id: string
  workflowId: string
  userId: string
  /** Where the run's jobs go (recorded when it was created). */
  queue: QueueName
  triggerData: unknown
  rawBody: Buffer | null
  result: Record<string, unknown>
  currentNodeId: string | null
  attempt: number
  previousStatus: RunStatus
  startedAt: Date
  workflow: {
    nodes: WorkflowNode[]
    edges: unknown
    eventName: string | null
  }
}

type ClaimOutcome =
  | { claimed: ClaimedRun }
  /** The run exists but is in a status the job may not take it from. */
  | { status: RunStatus, attempt: number }
  | undefined

export interface FailedRun {
  workflowId: string
  userId: string
  eventName: string | null
}

/**
 * One insert for all the lines of a step, so that their ids (the order the
 * API lists them in) follow the order they were written; `runLine` is the
 * run-level line that closes the step, selected from the step's update.
 */
function logRows (runId: string, lines: LogLine[], runLine?: SQL): SQL {
  const rows = jsonb(lines.map((line) => ({ node_id: line.nodeId, level: line.level, message: line.message, at: line.at.toISOString() })))
  return sql`
    insert into run_logs (run_id, node_id, level, message, created_at)
    select ${runId}, node_id, level, message, at from (
      select 0 as part, line.n, line.node_id, line.level, line.message, line.at
      from rows from (jsonb_to_recordset(${rows}) as (node_id text, level text, message text, at timestamptz))
        with ordinality as line(node_id, level, message, at, n)
      ${runLine === undefined ? sql`` : sql`union all select 1, 1, null, level, message, now() from (${runLine}) as run_line`}
    ) as step
    where exists (select 1 from runs where id = ${runId})
    order by part, n`
}

/** `runs.duration_ms`: milliseconds from `since` to now, the one formula every run statement uses. */
export const durationMsSince = (since: SQL): SQL => sql`(extract(epoch from (now() - ${since})) * 1000)::int`

/** A run that ends here without ever starting (failed while PENDING) counts from its creation. */
const durationMs = durationMsSince(sql`coalesce(started_at, created_at)`)

export function runStore (db: DbOrTx) {
  return {
    /**
     * Takes the run for execution: PENDING or WAITING become RUNNING; a run
     * found RUNNING lost its worker and is taken over (its attempt counted)
     * while fewer than `maxAttempts` takeovers happened. The run-level log
     * line is written by the same statement.
     */
    async claim (runId: string, maxAttempts: number): Promise<ClaimOutcome> {
      const rows = await db.execute<Record<string, unknown>>(sql`
        with previous as (
          select id, status, attempt from runs where id = ${runId} for update
        ), claimed as (
          update runs set
            status = 'RUNNING',
            started_at = coalesce(runs.started_at, now()),
            attempt = runs.attempt + (case when previous.status = 'RUNNING' then 1 else 0 end),
            result = case when runs.result ? 'triggerData' then runs.result
              else jsonb_build_object('triggerData', coalesce(runs.trigger_data, 'null'::jsonb)) || runs.result end
          from previous
          where runs.id = previous.id
            and (previous.status in ('PENDING', 'WAITING') or (previous.status = 'RUNNING' and previous.attempt < ${maxAttempts}))
          returning runs.id, runs.workflow_id, runs.user_id, runs.queue, runs.trigger_data, runs.raw_body, runs.result,
            runs.current_node_id, runs.attempt, runs.started_at, runs.workflow_version, previous.status as previous_status
        ), logged as (
          insert into run_logs (run_id, level, message)
          select id, 'INFO', case previous_status
            when 'PENDING' then 'Run started'
            when 'WAITING' then 'Run resumed'
            else 'Run taken over after its worker stopped (attempt ' || attempt || ')' end
          from claimed
        )
        select previous.status as found_status, previous.attempt as found_attempt, claimed.*,
          case when versions.workflow_id is null then workflows.nodes else versions.nodes end as nodes,
          case when versions.workflow_id is null then workflows.edges else versions.edges end as edges,
          workflows.trigger_config->>'eventName' as event_name
        from previous
        left join claimed on true
        left join workflows on workflows.id = claimed.workflow_id
        -- The definition the run started with, to its end (workflow_versions). Only a workflow written
        -- around the workflow service (tests and benchmarks seed rows) has no version row: its current one.
        left join workflow_versions versions on versions.workflow_id = claimed.workflow_id and versions.version = claimed.workflow_version
      `)
      const row = rows[0]
      if (row === undefined) return undefined
      if (row.id === null) return { status: row.found_status as RunStatus, attempt: row.found_attempt as number }
      return {
        claimed: {
          id: row.id as string,
          workflowId: row.workflow_id as string,
          userId: row.user_id as string,
          queue: row.queue as QueueName,
          triggerData: row.trigger_data,
          rawBody: (row.raw_body as Buffer | null) ?? null,
          result: row.result as Record<string, unknown>,
          currentNodeId: row.current_node_id as string | null,
          attempt: row.attempt as number,
          previousStatus: row.previous_status as RunStatus,
          startedAt: new Date(row.started_at as string | Date),
          workflow: {
            nodes: (row.nodes as WorkflowNode[] | null) ?? [],
            edges: row.edges,
            eventName: row.event_name as string | null
          }
        }
      }
    },

    /** A node finished and the run goes on at `nextNodeId`; false when the run is no longer RUNNING. */
    async advance (runId: string, nodeId: string, output: unknown, nextNodeId: string, lines: LogLine[]): Promise<boolean> {
      const rows = await db.execute<{ advanced: boolean }>(sql`
        with advanced as (
          update runs set result = result || jsonb_build_object(${nodeId}::text, ${jsonb(output)}), current_node_id = ${nextNodeId}
          where id = ${runId} and status = 'RUNNING'
          returning id
        ), logged as (${logRows(runId, lines)})
        select exists (select 1 from advanced) as advanced
      `)
      return rows[0]?.advanced === true
    },

    /** The last node finished: SUCCESS, the run-level line and the workflow's successCount. */
    async succeed (runId: string, last: { nodeId: string, output: unknown } | undefined, lines: LogLine[]): Promise<boolean> {
      const result = last === undefined ? sql`result` : sql`result || jsonb_build_object(${last.nodeId}::text, ${jsonb(last.output)})`
      const rows = await db.execute<{ succeeded: boolean }>(sql`
        with succeeded as (
          update runs set status = 'SUCCESS', result = ${result}, current_node_id = null,
            completed_at = now(), duration_ms = ${durationMs}
          where id = ${runId} and status = 'RUNNING'
          returning id, workflow_id, duration_ms
        ), logged as (
          ${logRows(runId, lines, sql`select 'INFO' as level, 'Run succeeded in ' || duration_ms || 'ms' as message from succeeded`)}
        ), counted as (
          update workflows set success_count = success_count + 1 where id = (select workflow_id from succeeded)
        )
        select exists (select 1 from succeeded) as succeeded
      `)
      return rows[0]?.succeeded === true
    },

    /** A wait node suspends the run at `nodeId`: WAITING until its resume job runs it again. */
    async suspend (runId: string, nodeId: string, output: unknown, lines: LogLine[]): Promise<boolean> {
      const rows = await db.execute<{ suspended: boolean }>(sql`
        with suspended as (
          update runs set status = 'WAITING', result = result || jsonb_build_object(${nodeId}::text, ${jsonb(output)}), current_node_id = ${nodeId}
          where id = ${runId} and status = 'RUNNING'
          returning id
        ), logged as (${logRows(runId, lines)})
        select exists (select 1 from suspended) as suspended
      `)
      return rows[0]?.suspended === true
    },

    /**
     * FAILED with `failure` as the error, the run-level line and the workflow's failureCount,
     * for a run in one of `from`. Returns what the failure event needs, or
     * undefined when the run was not in one of those statuses.
     */
    async fail (runId: string, failure: string, lines: LogLine[], from: readonly RunStatus[] = ['RUNNING']): Promise<FailedRun | undefined> {
      // A node's error may quote what it received.
      const error = storableText(failure)
      const statuses = sql.join(from.map((status) => sql`${status}`), sql`, `)
      const rows = await db.execute<{ workflowId: string, userId: string, eventName: string | null }>(sql`
        with failed as (
          update runs set status = 'FAILED', error = ${error}, completed_at = now(), duration_ms = ${durationMs}
          where id = ${runId} and status in (${statuses})
          returning id, workflow_id, user_id
        ), logged as (
          ${logRows(runId, lines, sql`select 'ERROR' as level, 'Run failed: ' || ${error}::text as message from failed`)}
        ), counted as (
          update workflows set failure_count = failure_count + 1 where id = (select workflow_id from failed)
          returning trigger_config->>'eventName' as event_name
        )
        select failed.workflow_id as "workflowId", failed.user_id as "userId", (select event_name from counted) as "eventName"
        from failed
      `)
      return rows[0]
    },

    async status (runId: string): Promise<RunStatus | undefined> {
      const rows = await db.execute<{ status: RunStatus }>(sql`select status from runs where id = ${runId}`)
      return rows[0]?.status
    }
  }
}
