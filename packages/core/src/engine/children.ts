import { sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { jsonb } from '../db/sql.ts'
import { storableJson } from '../db/storable.ts'
import type { RunStatus } from '../db/schema/runs.ts'
import { createIds } from '../ids.ts'
import type { Logger } from '../logger.ts'
import { RUN_JOB, WORKFLOW_RUNS, type QueueName, type Queues, type RunJobData } from '../queues/catalog.ts'
import { effectiveQuotas, type Quotas } from '../users/quotas.ts'
import { paceStarts } from '../runs/start-pace.ts'
import { cancelDescendants } from '../runs/cancel.ts'
import { succeededOutput } from '../runs/repository.ts'
import { enqueueRuns, type CreatedRun } from '../runs/start.ts'

/**
 * Child runs (engine/README.md, "Child runs"): the runs a run_workflow or foreach node starts, one
 * per item, each a row of `runs` carrying its parent, the node and its item. A node that runs
 * again (after a crash, or each time it is woken) finds the children it started: the insert
 * skips the items that have one (`runs_parent_item_idx`). A child's end touches only its own
 * row and wakes its parent with a deduplicated job, so children ending together never queue on
 * the parent's row.
 */

/** The parent of the children a node starts. */
export interface ChildParent {
  runId: string
  /** The parent's owner: the called workflow must be theirs, unless they are an admin (README, Flow). */
  userId: string
  nodeId: string
  /** The parent's depth: its children are one deeper. */
  depth: number
}

/** Why no child could be started. */
export type ChildStartRefusal = 'missing' | 'cron'

export interface ChildRun {
  runId: string
  index: number
  status: RunStatus
  error: string | null
  /** The child's node outputs by node id (its result without triggerData); only for ended children that were asked for. */
  output?: Record<string, unknown>
}

/** How far a node's children are: started (rows), ended SUCCESS, ended otherwise (FAILED, CANCELLED), the first of those. */
export interface ChildrenProgress {
  started: number
  succeeded: number
  failed: number
  firstFailure: ChildRun | null
}

/**
 * The wake of a run (a parent, a wait that took its event): one job per run at a time (BullMQ
 * deduplication; one more is kept while it is active), so that a thousand children ending in one
 * second wake it a few times.
 */
const wakeJob = (runId: string) => ({
  name: RUN_JOB,
  data: { runId, wake: true } satisfies RunJobData,
  opts: { deduplication: { id: `wake:${runId}`, keepLastIfActive: true } }
})

export async function wakeRun (queues: Queues, queue: QueueName, runId: string): Promise<void> {
  const { name, data, opts } = wakeJob(runId)
  await queues[queue].add(name, data, opts)
}

/** Wakes at most this many runs per call to Redis. */
const WAKE_BATCH = 500

/** Wakes many runs (the waits an event reached), `WAKE_BATCH` per call to Redis. */
export async function wakeRuns (queues: Queues, runs: ReadonlyArray<{ runId: string, queue: QueueName }>): Promise<void> {
  for (let start = 0; start < runs.length; start += WAKE_BATCH) {
    const batch = runs.slice(start, start + WAKE_BATCH)
    for (const name of new Set(batch.map(({ queue }) => queue))) {
      await queues[name].addBulk(batch.filter(({ queue }) => queue === name).map(({ runId }) => wakeJob(runId)))
    }
  }
}

export interface ChildRunsOptions {
  db: DbOrTx
  queues: Queues
  logger: Pick<Logger, 'warn'>
  /** Every owner's quotas unless an admin set others: children are paced by their parent owner's `runsPerMinute`. @defaultValue not paced */
  quotas?: Quotas
}

/** The parent owner's quotas as set by an admin, read by the statement that starts the children. */
const ownerQuotas = (parent: ChildParent): SQL => sql`(select quotas from users where id = ${parent.userId})`

export function childRuns ({ db, queues, logger, quotas }: ChildRunsOptions) {
  /** Queues the children just inserted, those beyond the parent owner's runsPerMinute delayed (start-pace.ts). */
  async function enqueuePaced (parent: ChildParent, created: CreatedRun[], setQuotas: unknown): Promise<void> {
    if (quotas !== undefined && created.length > 0) {
      const delays = await paceStarts(queues[WORKFLOW_RUNS], logger, parent.userId, created.length, effectiveQuotas(quotas, setQuotas).runsPerMinute)
      created = created.map((run, i) => ({ ...run, delayMs: delays[i] }))
    }
    await enqueueRuns({ db, queues, logger }, created)
  }

  return {
    /**
     * Starts the children of `items` (their index and triggerData) of `parent`'s node on
     * `workflowId`, those not started before, and queues them. The workflow must be the parent
     * owner's (or the owner an admin) and not CRON, whatever its isActive.
     */
    async start (parent: ChildParent, workflowId: string, items: ReadonlyArray<{ index: number, triggerData: unknown }>): Promise<ChildStartRefusal | undefined> {
      const ids = await createIds(items.length)
      const rows = items.map(({ index, triggerData }, n) => ({ run_id: ids[n], item_index: index, trigger_data: storableJson(triggerData) }))
      const [answer] = await db.execute<{ triggerType: string | null, created: Array<{ runId: string, userId: string, queue: QueueName }> | null, quotas: unknown }>(sql`
        with target as (
          select id, user_id, trigger_type, version from workflows
          where id = ${workflowId} and (user_id = ${parent.userId} or exists (select 1 from users where id = ${parent.userId} and role = 'admin'))
        ), planned as (
          select * from jsonb_to_recordset(${jsonb(rows)}) as row (run_id text, item_index int, trigger_data text)
        ), created as (
          insert into runs (id, workflow_id, user_id, queue, trigger_data, workflow_version, parent_run_id, parent_node_id, item_index, depth)
          select planned.run_id, target.id, target.user_id,
            case when target.trigger_type = 'AGENT' then 'agent-execution' else 'workflow-runs' end,
            planned.trigger_data::jsonb, target.version, ${parent.runId}, ${parent.nodeId}, planned.item_index, ${parent.depth + 1}
          from planned cross join target
          where target.trigger_type <> 'CRON'
          on conflict (parent_run_id, parent_node_id, item_index) where parent_run_id is not null do nothing
          returning id, workflow_id, user_id, queue, created_at
        ), counted as (
          insert into workflow_counter_deltas (workflow_id, run_id, runs, last_run_at)
          select workflow_id, min(id), count(*), max(created_at) from created group by workflow_id
        )
        select (select trigger_type from target) as "triggerType",
          (select json_agg(json_build_object('runId', id, 'userId', user_id, 'queue', queue)) from created) as created,
          ${ownerQuotas(parent)} as quotas
      `)
      if (answer?.triggerType === null || answer?.triggerType === undefined) return 'missing'
      if (answer.triggerType === 'CRON') return 'cron'
      await enqueuePaced(parent, answer.created ?? [], answer.quotas)
      return undefined
    },

    /**
     * Starts a parallel node's branches (engine/README.md, "Branches and joins"): child runs of the
     * parent's own workflow version, each at its first node with the parent's result so far, those
     * not started before; and queues them.
     */
    async startBranches (parent: ChildParent, branches: ReadonlyArray<{ index: number, startNodeId: string }>, result: Readonly<Record<string, unknown>>): Promise<void> {
      const ids = await createIds(branches.length)
      const rows = branches.map(({ index, startNodeId }, n) => ({ run_id: ids[n], item_index: index, start_node_id: startNodeId }))
      const created = await db.execute<CreatedRun & { quotas: unknown } & Record<string, unknown>>(sql`
        with planned as (
          select * from jsonb_to_recordset(${jsonb(rows)}) as row (run_id text, item_index int, start_node_id text)
        ), created as (
          insert into runs (id, workflow_id, user_id, queue, trigger_data, raw_body, workflow_version, parent_run_id, parent_node_id, item_index, depth, current_node_id, result)
          select planned.run_id, parent.workflow_id, parent.user_id, parent.queue, parent.trigger_data, parent.raw_body, parent.workflow_version,
            parent.id, ${parent.nodeId}, planned.item_index, ${parent.depth + 1}, planned.start_node_id, ${storableJson(result)}::jsonb
          from planned cross join runs as parent where parent.id = ${parent.runId}
          on conflict (parent_run_id, parent_node_id, item_index) where parent_run_id is not null do nothing
          returning id, workflow_id, user_id, queue, created_at
        ), counted as (
          insert into workflow_counter_deltas (workflow_id, run_id, runs, last_run_at)
          select workflow_id, min(id), count(*), max(created_at) from created group by workflow_id
        )
        select id as "runId", user_id as "userId", queue, ${ownerQuotas(parent)} as quotas from created
      `)
      await enqueuePaced(parent, created.map(({ quotas: _quotas, ...run }) => run), created[0]?.quotas)
    },

    /** The child of `parentRunId`'s node for item `index`. */
    async child (parentRunId: string, nodeId: string, index: number): Promise<ChildRun | undefined> {
      const [row] = await db.execute<ChildRun & Record<string, unknown>>(sql`
        select id as "runId", item_index as index, status, error, ${succeededOutput} as output
        from runs where parent_run_id = ${parentRunId} and parent_node_id = ${nodeId} and item_index = ${index}
      `)
      return row === undefined ? undefined : { ...row, output: row.output ?? undefined }
    },

    /** How many of the node's children were started and how many ended; one read of the parent index. */
    async progress (parentRunId: string, nodeId: string): Promise<ChildrenProgress> {
      const [row] = await db.execute<ChildrenProgress & Record<string, unknown>>(sql`
        select count(*)::int as started,
          count(*) filter (where status = 'SUCCESS')::int as succeeded,
          count(*) filter (where status in ('FAILED', 'CANCELLED'))::int as failed,
          (select json_build_object('runId', id, 'index', item_index, 'status', status, 'error', error) from runs
            where parent_run_id = ${parentRunId} and parent_node_id = ${nodeId} and status in ('FAILED', 'CANCELLED')
            order by item_index limit 1) as "firstFailure"
        from runs where parent_run_id = ${parentRunId} and parent_node_id = ${nodeId}
      `)
      return row ?? { started: 0, succeeded: 0, failed: 0, firstFailure: null }
    },

    /**
     * Every child of the node in item order, with the node outputs of those that succeeded while
     * they add up to at most `outputsMaxBytes` (as JSON text; undefined: none), so that what is
     * read stays bounded however large the children's results are. `cut`: some were left out.
     */
    async results (parentRunId: string, nodeId: string, outputsMaxBytes: number | undefined): Promise<{ children: ChildRun[], cut: boolean }> {
      const rows = await db.execute<ChildRun & { within: boolean } & Record<string, unknown>>(sql`
        select id as "runId", index, status, error, case when within then output end as output, within from (
          select id, item_index as index, status, error, output,
            coalesce(sum(octet_length(output::text)) over (order by item_index), 0) <= ${outputsMaxBytes ?? 0} as within
          from (
            select id, item_index, status, error, ${outputsMaxBytes === undefined ? sql`null::jsonb` : succeededOutput} as output
            from runs where parent_run_id = ${parentRunId} and parent_node_id = ${nodeId}
          ) as child
        ) as measured
        order by index
      `)
      return {
        children: rows.map(({ within: _within, ...row }) => ({ ...row, output: row.output ?? undefined })),
        cut: rows.some((row) => !row.within)
      }
    },

    /** Cancels the node's unfinished children and theirs (a loop that failed fast); how many were cancelled. */
    async cancel (parentRunId: string, nodeId: string): Promise<number> {
      const rows = await db.execute(cancelDescendants(sql`select id from runs where parent_run_id = ${parentRunId} and parent_node_id = ${nodeId}`))
      return rows.length
    },

    /** Wakes the parent of a child that ended: its node runs again and sees it. A failure is logged: the parent's recheck sees it later. */
    async wakeParent (parent: { runId: string, queue: QueueName }): Promise<void> {
      try {
        await wakeRun(queues, parent.queue, parent.runId)
      } catch (err) {
        logger.warn({ err, runId: parent.runId }, 'parent run not woken: its recheck will see its children')
      }
    }
  }
}

export type ChildRuns = ReturnType<typeof childRuns>
