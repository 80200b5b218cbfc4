import { sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { durationMsSince, jsonb } from '../db/sql.ts'
import { storableText } from '../db/storable.ts'
import type { LogLevel, RunStatus } from '../db/schema/runs.ts'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import type { EdgeRule } from '../db/schema/workflow-versions.ts'
import { RUN_FAILED_EVENT, RUN_SUCCEEDED_EVENT, someoneListens } from '../events/outbox.ts'
import { createId } from '../ids.ts'
import type { QueueName } from '../queues/catalog.ts'
import { lockSlots, slotGate, slotWrites } from './slots.ts'
import { flowGate, flowGated, flowStarted, type FlowHold } from './flow-control.ts'
import type { RunFlowControl } from '../db/schema/runs.ts'
import type { FlowControl } from '../db/schema/workflows.ts'

/**
 * The engine's statements. Each checkpoint of a run is one round trip: the
 * outputs of the nodes that ran since the last one, the run's position, their
 * log lines, a status change and the workflow counters go together, and every
 * status change is guarded by the status it expects, so a cancelled or
 * finished run is never overwritten.
 *
 * Fencing: every claim bumps `runs.claim`, and every step of the execution
 * that claimed the run is written only while the run still carries that
 * claim. A worker that lost its job (stalled, cut off from Redis) while another
 * took the run over has its steps refused and stops; its log lines are still
 * written, because they say what it did (a call it made happened).
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
  /** A test run's last node ("Run to here"): the run ends SUCCESS once it has run. */
  untilNodeId: string | null
  attempt: number
  /** The fencing token of this claim: every step of the execution carries it. */
  claim: number
  /** How the claim came about, and so which line it wrote. */
  kind: ClaimKind
  startedAt: Date
  /** The workflow's maxConcurrentRuns as the claim read it: when set, the run's end wakes the runs waiting for its slot. */
  maxConcurrentRuns: number | null
  /** Its flow control (README, Flow control): with a concurrency key, its end frees the key's slot. */
  flowControl: RunFlowControl | null
  /**
   * The run whose node (run_workflow, foreach, parallel) started this one, the queue of its jobs,
   * and whether this run is one of its parallel branches; null for a run started by a trigger.
   */
  parent: { runId: string, nodeId: string, queue: QueueName, branch: boolean } | null
  /** How many parents above it (SUBWORKFLOW_MAX_DEPTH bounds it). */
  depth: number
  /** The assistant turn this run is a tool call of: its end wakes the turn. */
  assistantTurnId: string | null
  workflow: {
    nodes: WorkflowNode[]
    edges: unknown
    /** How its nodes' several edges are followed (workflow_versions.edge_rule; engine/README.md, "Branches and joins"). */
    edgeRule: EdgeRule
  }
}

/**
 * What an execution did since its last checkpoint: node outputs (merged into
 * `runs.result`) and the node the run goes on at (`runs.current_node_id`).
 */
export interface Progress {
  outputs: Record<string, unknown>
  currentNodeId: string
}

/** A run executed in memory (`peekStarts`) and ended by `startAndSucceed`. */
export interface InMemoryEnd {
  runId: string
  /** The claim `peekStarts` read: the run is written only while it still has it. */
  claim: number
  ownerId: string | undefined
  /** When `peekStarts` read it: the time of its 'Run started' line. */
  startedAt: Date
  /** How long its nodes ran: its duration, and its start counted back from the statement's time. */
  elapsedMs: number
  outputs: Record<string, unknown>
  lines: LogLine[]
}

/**
 * `retry`: the owner that held the run claims it again, its previous attempt
 * having failed (a database or Redis error); `takeover`: the run was RUNNING
 * under another owner, whose worker stopped or lost the job.
 */
export type ClaimKind = 'start' | 'resume' | 'retry' | 'takeover'

/** Who claims a run: one delivery of one job; the same owner claiming again is a retry, not a takeover. */
export interface ClaimOwner {
  /** `<queue>/<jobId>/<added>/<stalls>`: a job that stalled (its worker lost it) comes back as another owner. */
  id: string
  /** The run-level line a retry writes (`Run resumed after a database error: …`). */
  retryLine: string
  /** Whether a run found RUNNING under another owner is taken over; false leaves it unclaimed. */
  takesOver: boolean
}

/** A claim owner's id for a delivery of a job (engine.ts, ownerOf). */
export const claimOwnerId = (job: { queueName: string, id?: string, timestamp: number, stalledCounter: number }): string =>
  `${job.queueName}/${job.id ?? ''}/${job.timestamp}/${job.stalledCounter}`

/** The job whose delivery claimed a run, from its `claim_owner`: the reconciler asks whether it is still live. */
export function claimingJobId (ownerId: string | null): string | undefined {
  const jobId = ownerId === null ? undefined : /^[^/]+\/(.+)\/\d+\/\d+$/.exec(ownerId)?.[1]
  return jobId === '' ? undefined : jobId
}

/** Why a step was refused: `stopped`, the run is no longer RUNNING (cancelled, ended); `superseded`, another claim owns it. */
export type Refusal = 'stopped' | 'superseded'
/** Whether a step was written under its claim. */
export type StepOutcome = 'written' | Refusal

type ClaimOutcome =
  | { claimed: ClaimedRun }
  /** The run exists but is in a status the job may not take it from. */
  | { status: RunStatus, attempt: number }
  /** `claim`: a start or resume of a run whose workflow has a maxConcurrentRuns, or a start its flow control gates, for `claimGated`. */
  | { limited: Limited }
  /** `claimGated`: no slot for the run now, or its flow control holds it (`flow`); it waits (slots.ts, flow-control.ts). */
  | { held: { workflowId: string, flow?: FlowHold } }
  | undefined

/** What `claimGated` checks: the workflow's slots, and the run's flow control against the workflow's current one. */
interface Limited {
  workflowId: string
  slots: boolean
  flow: { run: RunFlowControl, workflow: FlowControl | null } | null
}

export interface FailedRun {
  workflowId: string
  /** The `workflow.run.failed` event written with the failure, to dispatch; null when none was. */
  eventId: string | null
}

/** How `fail` ends a run, beside its error. */
export interface FailStep {
  /** The execution's lines since its last checkpoint. */
  lines?: LogLine[]
  /** Statuses the run may be in, or `claim`: RUNNING under that claim, as a step of its execution. @defaultValue ['RUNNING'] */
  from?: readonly RunStatus[] | { claim: number }
  /** The execution's outputs and position since its last checkpoint. */
  progress?: Progress
  /** `lines` are written even when the run was not in `from` (see `keepLines` of `advance`). */
  keepLines?: boolean
}

/** A log line as `jsonb_to_recordset` reads it in the statements below. */
const logLineRow = (line: LogLine) => ({ node_id: line.nodeId, level: line.level, message: line.message, at: line.at.toISOString() })

/** The line a claim writes first, for the runs claimed by their first write (the claim statement writes its own). */
const startedLine = (at: Date): LogLine => ({ nodeId: null, level: 'INFO', message: 'Run started', at })

/**
 * One insert for all the lines of a step, so that their ids (the order the
 * API lists them in) follow the order they were written; `runLine` is the
 * run-level line that closes the step, selected from the step's update;
 * `when`, a further condition for writing them.
 */
function logRows (runId: string, lines: LogLine[], { runLine, when }: { runLine?: SQL, when?: SQL } = {}): SQL {
  const rows = jsonb(lines.map(logLineRow))
  return sql`
    insert into run_logs (run_id, node_id, level, message, created_at)
    select ${runId}, node_id, level, message, at from (
      select 0 as part, line.n, line.node_id, line.level, line.message, line.at
      from rows from (jsonb_to_recordset(${rows}) as (node_id text, level text, message text, at timestamptz))
        with ordinality as line(node_id, level, message, at, n)
      ${runLine === undefined ? sql`` : sql`union all select 1, 1, null, level, message, now() from (${runLine}) as run_line`}
    ) as ordered
    where exists (select 1 from runs where id = ${runId}) ${when === undefined ? sql`` : sql`and ${when}`}
    order by part, n`
}

/** A run that ends here without ever starting (failed while PENDING) counts from its creation. */
const durationMs = durationMsSince(sql`coalesce(started_at, created_at)`)

type StepRow = { written: boolean, status: RunStatus | null, claim: number | null }

/** The condition on a step's lines: written with the step, or (`keepLines`) whatever it finds. */
const whenWritten = (keepLines: boolean): SQL | undefined => keepLines ? undefined : sql`exists (select 1 from step)`

/** The guard of a step: the run is RUNNING under `claim`. */
const heldBy = (claim: number): SQL => sql`status = 'RUNNING' and claim = ${claim}`

/**
 * Reads a step's answer: `written`, or why not from the run as the statement
 * found it (a run RUNNING under another claim was superseded).
 */
function stepOutcome (row: StepRow | undefined, claim: number): StepOutcome {
  if (row?.written === true) return 'written'
  return row?.status === 'RUNNING' && row.claim !== claim ? 'superseded' : 'stopped'
}

/** Selects a step's answer from its CTE `step` and the run row as the statement began (with `columns` more). */
const stepAnswer = (runId: string, columns: SQL = sql``): SQL => sql`
  select exists (select 1 from step) as written, found.status, found.claim ${columns}
  from (select 1) as one left join (select status, claim from runs where id = ${runId}) as found on true`

/**
 * The `workflow.run.succeeded` events (the outbox, events/outbox.ts: `{runId, workflowId, durationMs}`) of the
 * runs `ended` (a CTE returning id, workflow_id, user_id, duration_ms) someone listens to; each
 * event's id is `succeeded:<runId>`, a run succeeds once.
 */
const succeeded = (ended: SQL): SQL => sql`
  insert into events (id, name, user_id, payload)
  select 'succeeded:' || ended.id, ${RUN_SUCCEEDED_EVENT}, ended.user_id,
    jsonb_build_object('runId', ended.id, 'workflowId', ended.workflow_id, 'durationMs', ended.duration_ms)
  from ${ended} as ended
  where ${someoneListens(RUN_SUCCEEDED_EVENT, sql`ended.user_id`, { except: sql`ended.workflow_id` })}
  returning id`

/**
 * A child run's parent (engine/README.md, "Child runs"): the queue of the jobs its end wakes, and
 * whether the child is a branch of it (a run of the same workflow version, started by its parallel node).
 * A run started by a trigger, nearly every one, skips the lookup.
 */
const parentOf = sql`case when runs.parent_run_id is not null then (select json_build_object('queue', parent.queue,
  'branch', parent.workflow_id = runs.workflow_id and parent.workflow_version = runs.workflow_version)
  from runs as parent where parent.id = runs.parent_run_id) end`

/**
 * The claim (see `runStore().claim`), in one statement. A start or resume of a run whose
 * workflow has a maxConcurrentRuns is claimed only with `slot`, when the run is admitted
 * (slots.ts); without it, the statement only reports the limit, read from the workflow row
 * by primary key, so runs of workflows without one cost nothing more.
 */
function claimStatement (runId: string, maxAttempts: number, owner: ClaimOwner | undefined, slot: boolean, flowPassed: boolean): SQL {
  const ownerId = owner?.id ?? null
  return sql`
    with previous as (
      select id, runs.workflow_id, created_at, status, attempt, claim, runs.flow_control, limits.max_runs, limits.workflow_flow,
        case status when 'PENDING' then 'start' when 'WAITING' then 'resume'
          when 'RUNNING' then case when claim_owner = ${ownerId}::text then 'retry' else 'takeover' end end as kind
      from runs
      -- The workflow's limits, one probe by primary key: runs of workflows without any cost nothing more.
      left join lateral (
        select max_concurrent_runs as max_runs, flow_control as workflow_flow from workflows where workflows.id = runs.workflow_id
      ) as limits on true
      where runs.id = ${runId} for update of runs
    ), ${slot ? sql`${slotGate},` : sql``} claimed as (
      update runs set
        status = 'RUNNING',
        started_at = coalesce(runs.started_at, now()),
        attempt = runs.attempt + (case when previous.kind = 'takeover' then 1 else 0 end),
        claim = runs.claim + 1,
        claim_owner = ${ownerId}::text,
        result = ${startedResult},
        flow_control = ${flowStarted}
      from previous
      where runs.id = previous.id
        and (previous.kind in ('start', 'resume', 'retry') or (previous.kind = 'takeover' and previous.attempt < ${maxAttempts} and ${owner?.takesOver === false ? sql`false` : sql`true`}))
        and (previous.kind in ('retry', 'takeover') or (
          (previous.max_runs is null or ${slot ? sql`(select admitted from gate)` : sql`false`})
          and (${flowPassed ? sql`true` : sql`not ${flowGated}`})))
      returning runs.id, runs.workflow_id, runs.user_id, runs.queue, runs.trigger_data, runs.raw_body, runs.result, runs.flow_control,
        runs.current_node_id, runs.until_node_id, runs.attempt, runs.claim, runs.started_at, runs.workflow_version, previous.kind,
        runs.parent_run_id, runs.parent_node_id, runs.depth, ${parentOf} as parent, runs.assistant_turn_id
    ), logged as (
      insert into run_logs (run_id, level, message)
      select id, case kind when 'retry' then 'WARN' else 'INFO' end, case kind
        when 'start' then 'Run started'
        when 'resume' then 'Run resumed'
        when 'retry' then ${owner?.retryLine ?? ''}::text
        else 'Run taken over after its worker stopped (attempt ' || attempt || ')' end
      from claimed
    ) ${slot ? sql`, ${slotWrites}` : sql``}
    select previous.status as found_status, previous.attempt as found_attempt, previous.workflow_id as found_workflow_id,
      previous.max_runs, previous.flow_control as found_flow, previous.workflow_flow, ${flowGated} as flow_gated, claimed.*, ${definitionColumns}
    from previous
    left join claimed on true
    left join workflows on workflows.id = claimed.workflow_id
    -- The definition the run started with, to its end (workflow_versions). Only a workflow written
    -- around the workflow service (tests and benchmarks seed rows) has no version row: its current one.
    left join workflow_versions versions on versions.workflow_id = claimed.workflow_id and versions.version = claimed.workflow_version
  `
}

/** What a claim statement answered; `gated`: it was `claimGated`'s. */
function claimOutcome (rows: Array<Record<string, unknown>>, gated: boolean): ClaimOutcome {
  const row = rows[0]
  if (row === undefined) return undefined
  const maxRuns = row.max_runs as number | null
  if (row.id === null) {
    const status = row.found_status as RunStatus
    const flowGatedRun = row.flow_gated === true
    if ((maxRuns !== null || flowGatedRun) && (status === 'PENDING' || status === 'WAITING')) {
      const workflowId = row.found_workflow_id as string
      if (gated) return { held: { workflowId } }
      const flow = flowGatedRun ? { run: row.found_flow as RunFlowControl, workflow: row.workflow_flow as FlowControl | null } : null
      return { limited: { workflowId, slots: maxRuns !== null, flow } }
    }
    return { status, attempt: row.found_attempt as number }
  }
  return { claimed: runOf(row) }
}

/** A child run's parent as `parentOf` selected it. */
function parentOfRow (row: Record<string, unknown>): ClaimedRun['parent'] {
  const parent = row.parent as { queue: QueueName, branch: boolean } | null | undefined
  if (parent === null || parent === undefined || typeof row.parent_run_id !== 'string') return null
  return { runId: row.parent_run_id, nodeId: row.parent_node_id as string, queue: parent.queue, branch: parent.branch }
}

/** A run and its definition as the claim (or the peek) selected them. */
function runOf (row: Record<string, unknown>): ClaimedRun {
  return {
    id: row.id as string,
    workflowId: row.workflow_id as string,
    userId: row.user_id as string,
    queue: row.queue as QueueName,
    triggerData: row.trigger_data,
    rawBody: (row.raw_body as Buffer | null) ?? null,
    result: row.result as Record<string, unknown>,
    currentNodeId: row.current_node_id as string | null,
    untilNodeId: (row.until_node_id as string | null | undefined) ?? null,
    attempt: row.attempt as number,
    claim: row.claim as number,
    kind: row.kind as ClaimKind,
    startedAt: new Date(row.started_at as string | Date),
    maxConcurrentRuns: row.max_runs as number | null,
    flowControl: (row.flow_control as RunFlowControl | null | undefined) ?? null,
    parent: parentOfRow(row),
    depth: (row.depth as number | undefined) ?? 0,
    assistantTurnId: (row.assistant_turn_id as string | null | undefined) ?? null,
    workflow: {
      nodes: (row.nodes as WorkflowNode[] | null) ?? [],
      edges: row.edges,
      edgeRule: row.edge_rule as EdgeRule
    }
  }
}

/** The run's result as a claim starts it: `triggerData` first, unless it is there already. */
const startedResult = sql`case when runs.result ? 'triggerData' then runs.result
  else jsonb_build_object('triggerData', coalesce(runs.trigger_data, 'null'::jsonb)) || runs.result end`

/**
 * The definition a run executes: the version it started with (workflow_versions), else the
 * workflow's own, under the rule new versions get.
 */
const definitionColumns = sql`
  case when versions.workflow_id is null then workflows.nodes else versions.nodes end as nodes,
  case when versions.workflow_id is null then workflows.edges else versions.edges end as edges,
  coalesce(versions.edge_rule, 'all') as edge_rule`

export function runStore (db: DbOrTx) {
  return {
    /**
     * Takes the run for execution under a new claim: PENDING or WAITING become
     * RUNNING. A run found RUNNING is retried when `owner` held it (its job's
     * previous attempt failed and ended; not counted), else taken over (its
     * worker stopped; counted in `attempt`) while fewer than `maxAttempts`
     * takeovers happened. A claim without an owner always takes over. The
     * run-level log line is written by the same statement. A start or resume of
     * a run whose workflow has a maxConcurrentRuns, and a start its flow control gates, are not
     * claimed here: `limited`, for `claimGated`.
     */
    async claim (runId: string, maxAttempts: number, owner?: ClaimOwner): Promise<ClaimOutcome> {
      return claimOutcome(await db.execute<Record<string, unknown>>(claimStatement(runId, maxAttempts, owner, false, false)), false)
    },

    /**
     * The claim of a start or resume that `claim` left to this (`limited`), in one transaction: the
     * run's flow control first (flow-control.ts: held, it waits for what `flow` says), then, when
     * the workflow has a maxConcurrentRuns, under the workflow's slot lock, the run is claimed when
     * fewer than the limit are RUNNING with a slot or waiting ahead of it (slots.ts), else it waits (`held`).
     */
    async claimGated (runId: string, limited: Limited, maxAttempts: number, owner?: ClaimOwner): Promise<ClaimOutcome> {
      const { workflowId, slots, flow } = limited
      return await db.transaction(async (tx) => {
        if (flow !== null) {
          const held = await flowGate(tx, { id: runId, workflowId, flow: flow.run }, flow.workflow)
          if (held !== undefined) return { held: { workflowId, flow: held } }
        }
        // Its own statement: the claim's snapshot, taken after the lock, sees every admission before it.
        if (slots) await lockSlots(tx, workflowId)
        return claimOutcome(await tx.execute<Record<string, unknown>>(claimStatement(runId, maxAttempts, owner, slots, true)), true)
      })
    },

    /**
     * The PENDING runs among `runIds` with their definitions, read in one statement without a
     * lock or a write: for executions that claim their run with their first write (engine/README.md, "The first-write path").
     * A run that is not PENDING is not in the map.
     */
    async peekStarts (runIds: readonly string[]): Promise<Map<string, ClaimedRun>> {
      const rows = await db.execute<Record<string, unknown>>(sql`
        select runs.id, runs.workflow_id, runs.user_id, runs.queue, runs.trigger_data, runs.raw_body,
          ${startedResult} as result, runs.current_node_id, runs.until_node_id, runs.attempt, runs.claim, now() as started_at,
          'start' as kind, workflows.max_concurrent_runs as max_runs, runs.flow_control, runs.parent_run_id, runs.parent_node_id, runs.depth, ${parentOf} as parent,
          runs.assistant_turn_id, ${definitionColumns}
        from runs
        join workflows on workflows.id = runs.workflow_id
        left join workflow_versions versions on versions.workflow_id = runs.workflow_id and versions.version = runs.workflow_version
        where runs.id = any(array(select jsonb_array_elements_text(${jsonb(runIds)}))) and runs.status = 'PENDING'
      `)
      return new Map(rows.map((row) => [row.id as string, runOf(row)]))
    },

    /**
     * Claims PENDING runs and ends them SUCCESS, all in one statement, after their nodes ran in
     * memory: each is written only while it is still PENDING with the claim `peekStarts` read
     * (undefined: nothing of it written), with its `workflow.run.succeeded` event when someone
     * listens (its id, else null). Each run's lines follow its claim line ('Run started').
     */
    async startAndSucceed (ends: readonly InMemoryEnd[]): Promise<Array<{ eventId: string | null } | undefined>> {
      const rows = ends.map((end, n) => ({
        n,
        run_id: end.runId,
        claim: end.claim,
        owner: end.ownerId ?? null,
        elapsed_ms: end.elapsedMs,
        outputs: end.outputs,
        lines: [startedLine(end.startedAt), ...end.lines].map(logLineRow)
      }))
      const written = await db.execute<{ n: number, eventId: string | null }>(sql`
        with ended as (
          select * from jsonb_to_recordset(${jsonb(rows)})
            as ended(n int, run_id text, claim int, owner text, elapsed_ms int, outputs jsonb, lines jsonb)
        ), step as (
          update runs set status = 'SUCCESS', claim = runs.claim + 1, claim_owner = ended.owner,
            result = ${startedResult} || ended.outputs, current_node_id = null,
            started_at = now() - make_interval(secs => ended.elapsed_ms / 1000.0), completed_at = now(), duration_ms = ended.elapsed_ms
          from ended
          where runs.id = ended.run_id and runs.status = 'PENDING' and runs.claim = ended.claim
          returning runs.id, runs.workflow_id, runs.user_id, runs.duration_ms, ended.n, ended.lines
        ), logged as (
          insert into run_logs (run_id, node_id, level, message, created_at)
          select id, node_id, level, message, at from (
            select step.n, 0 as part, line.n as line, step.id, line.node_id, line.level, line.message, line.at
            from step, rows from (jsonb_to_recordset(step.lines) as (node_id text, level text, message text, at timestamptz))
              with ordinality as line(node_id, level, message, at, n)
            union all
            select step.n, 1, 1, step.id, null, 'INFO', 'Run succeeded in ' || step.duration_ms || 'ms', now() from step
          ) as ordered
          order by n, part, line
        ), counted as (
          insert into workflow_counter_deltas (workflow_id, run_id, successes) select workflow_id, min(id), count(*) from step group by workflow_id
        ), emitted as (${succeeded(sql`step`)})
        select n, emitted.id as "eventId" from step left join emitted on emitted.id = 'succeeded:' || step.id
      `)
      const done = new Map(written.map((row) => [row.n, { eventId: row.eventId }]))
      return ends.map((_end, n) => done.get(n))
    },

    /**
     * Claims a PENDING run at the checkpoint before its first outside effect, after the pure
     * nodes before it ran in memory since `startedAt` (when `peekStarts` read it): RUNNING under a
     * new claim, the outputs and position of `progress`, and `lines` after the claim's line.
     * Returns the new claim, or undefined (nothing written) unless the run is still PENDING with
     * the claim `peekStarts` read.
     */
    async startAndRecord (runId: string, claim: number, ownerId: string | undefined, startedAt: Date, lines: LogLine[], progress: Progress): Promise<number | undefined> {
      const rows = await db.execute<{ claim: number | null }>(sql`
        with step as (
          update runs set status = 'RUNNING', claim = runs.claim + 1, claim_owner = ${ownerId ?? null}::text, started_at = ${startedAt.toISOString()}::timestamptz,
            result = ${startedResult} || ${jsonb(progress.outputs)}, current_node_id = ${progress.currentNodeId}
          where id = ${runId} and status = 'PENDING' and claim = ${claim}
          returning claim
        ), logged as (
          ${logRows(runId, [startedLine(startedAt), ...lines], { when: sql`exists (select 1 from step)` })}
        )
        select (select claim from step) as claim
      `)
      return rows[0]?.claim ?? undefined
    },

    /**
     * Writes `lines` now, before the node acts on the outside world, so that
     * every attempt of an outside effect shows in the run's log even when its
     * worker dies during it; refused (nothing written, the node must not act)
     * unless the run is RUNNING under `claim`. The row is share-locked, so a
     * claim in progress is waited for and seen.
     */
    async record (runId: string, claim: number, lines: LogLine[], progress?: Progress): Promise<StepOutcome> {
      // With progress the row is updated (and so locked) like any step; without, share-locked only.
      const step = progress === undefined
        ? sql`select 1 from found where ${heldBy(claim)}`
        : sql`update runs set result = result || ${jsonb(progress.outputs)}, current_node_id = ${progress.currentNodeId}
          where id = ${runId} and ${heldBy(claim)} returning id`
      const rows = await db.execute<StepRow>(sql`
        with found as (
          select status, claim from runs where id = ${runId} for share
        ), step as (
          ${step}
        ), logged as (
          ${logRows(runId, lines, { when: sql`exists (select 1 from step)` })}
        )
        select exists (select 1 from step) as written, (select status from found) as status, (select claim from found) as claim
      `)
      return stepOutcome(rows[0], claim)
    },

    /**
     * A checkpoint: nodes finished and the run goes on at `progress.currentNodeId`. A refused step
     * (the run was cancelled, or taken over) writes its `lines` only with `keepLines`: they tell of
     * a node that acted on the outside world, which happened; the lines of pure nodes that ran
     * after a cancel are dropped (README, Runs: no later node runs).
     */
    async advance (runId: string, claim: number, progress: Progress, lines: LogLine[], keepLines = false): Promise<StepOutcome> {
      const rows = await db.execute<StepRow>(sql`
        with step as (
          update runs set result = result || ${jsonb(progress.outputs)}, current_node_id = ${progress.currentNodeId}
          where id = ${runId} and ${heldBy(claim)}
          returning id
        ), logged as (${logRows(runId, lines, { when: whenWritten(keepLines) })})
        ${stepAnswer(runId)}
      `)
      return stepOutcome(rows[0], claim)
    },

    /**
     * The last node finished: SUCCESS, the run-level line, the workflow's successCount and, when
     * someone listens, its `workflow.run.succeeded` event (`succeeded`; `keepLines`: as `advance`).
     * Returns the outcome and the event's id (null: none written).
     */
    async succeed (runId: string, claim: number, outputs: Record<string, unknown>, lines: LogLine[], keepLines = false): Promise<{ outcome: StepOutcome, eventId: string | null }> {
      const result = Object.keys(outputs).length === 0 ? sql`result` : sql`result || ${jsonb(outputs)}`
      const rows = await db.execute<StepRow & { eventId: string | null }>(sql`
        with step as (
          update runs set status = 'SUCCESS', result = ${result}, current_node_id = null,
            completed_at = now(), duration_ms = ${durationMs}
          where id = ${runId} and ${heldBy(claim)}
          returning id, workflow_id, user_id, duration_ms
        ), logged as (
          ${logRows(runId, lines, { runLine: sql`select 'INFO' as level, 'Run succeeded in ' || duration_ms || 'ms' as message from step`, when: whenWritten(keepLines) })}
        ), counted as (
          insert into workflow_counter_deltas (workflow_id, run_id, successes) select workflow_id, id, 1 from step
        ), emitted as (${succeeded(sql`step`)})
        ${stepAnswer(runId, sql`, (select id from emitted) as "eventId"`)}
      `)
      return { outcome: stepOutcome(rows[0], claim), eventId: rows[0]?.eventId ?? null }
    },

    /** A wait node suspends the run at `progress.currentNodeId` (itself): WAITING until its resume job runs it again (`keepLines`: as `advance`). */
    async suspend (runId: string, claim: number, progress: Progress, lines: LogLine[], keepLines = false): Promise<StepOutcome> {
      const rows = await db.execute<StepRow>(sql`
        with step as (
          update runs set status = 'WAITING', result = result || ${jsonb(progress.outputs)}, current_node_id = ${progress.currentNodeId}
          where id = ${runId} and ${heldBy(claim)}
          returning id
        ), logged as (${logRows(runId, lines, { when: whenWritten(keepLines) })})
        ${stepAnswer(runId)}
      `)
      return stepOutcome(rows[0], claim)
    },

    /**
     * FAILED with `failure` as the error, the run-level line, the workflow's failureCount and the
     * `workflow.run.failed` event (the outbox, events/outbox.ts, whose dispatch also starts the
     * workflow's error workflow: triggers/error-workflows.ts; none when the workflow itself
     * listens to it, so failures cannot loop), for a run in one of `step.from`. Returns the
     * event's id (null: none written), or undefined when the run was not in one of those statuses.
     */
    async fail (runId: string, failure: string, { lines = [], from = ['RUNNING'], progress, keepLines = false }: FailStep = {}): Promise<FailedRun | undefined> {
      // A node's error may quote what it received.
      const error = storableText(failure)
      const guard = 'claim' in from ? heldBy(from.claim) : sql`status in (${sql.join(from.map((status) => sql`${status}`), sql`, `)})`
      const rows = await db.execute<FailedRun & Record<string, unknown>>(sql`
        with failed as (
          update runs set status = 'FAILED', error = ${error}, completed_at = now(), duration_ms = ${durationMs}
            ${progress === undefined ? sql`` : sql`, result = result || ${jsonb(progress.outputs)}, current_node_id = ${progress.currentNodeId}`}
          where id = ${runId} and ${guard}
          returning id, workflow_id, user_id
        ), logged as (
          ${logRows(runId, lines, { runLine: sql`select 'ERROR' as level, 'Run failed: ' || ${error}::text as message from failed`, when: keepLines ? undefined : sql`exists (select 1 from failed)` })}
        ), counted as (
          insert into workflow_counter_deltas (workflow_id, run_id, failures) select workflow_id, id, 1 from failed
        ), emitted as (
          insert into events (id, name, user_id, payload)
          select ${createId()}, ${RUN_FAILED_EVENT}, failed.user_id, jsonb_build_object('runId', failed.id, 'workflowId', failed.workflow_id, 'error', ${error}::text)
          from failed join workflows on workflows.id = failed.workflow_id
          where (workflows.trigger_config->>'eventName') is distinct from ${RUN_FAILED_EVENT}
          returning id
        )
        select failed.workflow_id as "workflowId", (select id from emitted) as "eventId" from failed
      `)
      return rows[0]
    },

    /** How many runs of `userId` are WAITING, and the quotas an admin set for them (users/quotas.ts). */
    async waitingRuns (userId: string): Promise<{ waiting: number, quotas: unknown }> {
      const [row] = await db.execute<{ waiting: number, quotas: unknown }>(sql`
        select (select count(*)::int from runs where user_id = ${userId} and status = 'WAITING') as waiting,
          (select quotas from users where id = ${userId}) as quotas
      `)
      return row ?? { waiting: 0, quotas: null }
    },

    /** Why the run is no longer RUNNING under `claim`, or undefined while it is: the check a long node repeats. */
    async lost (runId: string, claim: number): Promise<Refusal | undefined> {
      const rows = await db.execute<StepRow>(sql`
        select status = 'RUNNING' and claim = ${claim} as written, status, claim from runs where id = ${runId}
      `)
      const outcome = stepOutcome(rows[0], claim)
      return outcome === 'written' ? undefined : outcome
    }
  }
}
