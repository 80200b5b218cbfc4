import { createHash } from 'node:crypto'
import type { Span } from '@opentelemetry/api'
import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { storableJson } from '../db/storable.ts'
import { textArray } from '../db/sql.ts'
import type { FlowControl, Workflow } from '../db/schema/index.ts'
import { createIds } from '../ids.ts'
import { noteOwners } from '../queues/fair-share.ts'
import type { Logger } from '../logger.ts'
import { runsCreated, runsLeftForReconciler } from '../observability/metrics.ts'
import { endSpan, startJobSpan, tracingOn } from '../observability/tracing.ts'
import { withTimeout } from '../timeout.ts'
import { renderRunTags } from './search.ts'
import { renderCancelOn, type RunCancelRule } from './cancel-on.ts'
import { FAIR_STEP, fairPlaceOf, HELD_RECHECK_MS, isGated, isoNow, renderFlowControl } from './flow-control.ts'
import { wakeKeyLine } from '../engine/flow-control.ts'
import type { RunFlowControl } from '../db/schema/runs.ts'
import { AGENT_EXECUTION, RUN_JOB, runJobId, WORKFLOW_RUNS, type QueueName, type Queues, type RunJobData } from '../queues/catalog.ts'

export interface RunServiceDeps {
  db: DbOrTx
  queues: Queues
  /** Where runs stored but not queued (Redis away) are reported; the reconciler queues them. */
  logger?: Pick<Logger, 'warn'>
}

/**
 * What starting a run needs to know about its workflow: never its nodes, so the cost does not grow with its size.
 * `runTags`: the template of its runs' tags (README, Finding runs); a start that leaves it out tags nothing.
 * `flowControl`: its per-key limits (README, Flow control); the triggers' lookups read it, other starts (tests, replays,
 * child runs, tool calls) leave it out and are not held by it. `cancelOn`: the events that cancel its runs (README, Events
 * and waits), read by the same lookups.
 */
export type RunTarget = Pick<Workflow, 'id' | 'userId' | 'triggerType'> & Partial<Pick<Workflow, 'runTags' | 'flowControl' | 'cancelOn'>>

export interface StartRunInput {
  workflow: RunTarget
  triggerData: unknown
  /** The exact bytes of an inbound webhook, for verify_signature. */
  rawBody?: Buffer
  /** Same key for the same workflow within 24 hours: the first run is returned and nothing is created. */
  idempotencyKey?: string
  /** The request that starts the run (X-Request-Id), carried in its job. */
  requestId?: string
}

export interface StartedRun {
  runId: string
  /** False when an idempotency key matched an earlier run. */
  created: boolean
}

/** A run an insert created, with what its job needs. */
export interface CreatedRun {
  runId: string
  /** Its owner, carried in its job for the worker's fair share and in-flight quota. */
  userId: string
  queue: QueueName
  requestId?: string
  traceparent?: string
  /** How long its job waits before it may run (a child run beyond its owner's runsPerMinute: start-pace.ts). */
  delayMs?: number
  /** Its start is gated by its flow control: its worker skips the first-write path (RunJobData.gated). */
  gated?: boolean
  /** It was created behind a full line of this concurrency key: its job waits until a slot wakes it (`lineAhead`). */
  behindInLine?: { workflowId: string, key: string }
}

/** AGENT runs have a queue of their own so that they never wait behind bulk automation (README, Queues). */
const runQueueFor = (triggerType: Workflow['triggerType']): QueueName => triggerType === 'AGENT' ? AGENT_EXECUTION : WORKFLOW_RUNS

/** How long an idempotency key holds (README, Runs: 24 hours); older keys are taken over, and purged by the worker's reconciler. */
export const IDEMPOTENCY_WINDOW = sql.raw('interval \'24 hours\'')

/**
 * BullMQ waits for a Redis connection that may never come back: an enqueue gives up after
 * this, and its runs, stored already, are queued by the reconciler.
 */
const ENQUEUE_TIMEOUT_MS = 3000

/** Keys are client-chosen: a long one is stored as its digest so that any header value works. */
const MAX_STORED_KEY_LENGTH = 255

function storedKey (key: string | undefined): string | undefined {
  if (key === undefined || key === '') return undefined
  return key.length <= MAX_STORED_KEY_LENGTH ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`
}

/**
 * Runs per statement and jobs per addBulk, whatever the fan-out: a statement stays
 * small, holds few row locks, and binds far fewer than Postgres's 65,535 parameters.
 */
const CHUNK_SIZE = 1000

function chunksOf<T> (items: readonly T[]): T[][] {
  const chunks: T[][] = []
  for (let i = 0; i < items.length; i += CHUNK_SIZE) chunks.push(items.slice(i, i + CHUNK_SIZE))
  return chunks
}

export interface StartRunsInput {
  runs: ReadonlyArray<{
    workflow: RunTarget
    /** Absent: the shared `triggerData` below. */
    triggerData?: unknown
    /** `triggerData` already turned into storable JSON text (storableJson), by a caller that needed its size. */
    triggerJson?: string
    /** The exact bytes of an inbound webhook, for verify_signature. */
    rawBody?: Buffer
    /** This run's own key (a request's, in a group of requests); absent: the shared key below. */
    idempotencyKey?: string
    /** This run's own request; absent: the shared one below. */
    requestId?: string
    /** The W3C traceparent of the span that started the run (a request's `run.start`), carried in its job. */
    traceparent?: string
    /** The workflow version to execute; absent: the workflow's current one. */
    workflowVersion?: number
    /**
     * The run this one replays (`runs.retried_from`): its triggerData and raw body are copied
     * by the insert itself, never through the caller, unless given here.
     */
    retriedFrom?: string
    /** A test run (POST /workflows/:id/test): `runs.test`, and the node it ends after ("Run to here"). */
    test?: boolean
    untilNodeId?: string
    /** A retry from a node: the run starts at `nodeId` with `result` (the outputs of the nodes before it). */
    startAt?: RunStartPoint
    /** A tool call of this assistant turn (`runs.assistant_turn_id`): the run's end wakes the turn. */
    assistantTurnId?: string
    /** The run's tags, given by its caller (`POST …/fire?tags=`): its workflow's runTags are not rendered then. */
    tags?: string[]
    /**
     * A run of an error workflow (README, Error workflows): the failed run it is started for. A failed
     * run has one at most (runs_error_of_run_idx): a second start for it creates nothing.
     */
    errorOfRunId?: string
  }>
  /** The triggerData of every run that brings none, sent once per statement however many runs share it (an event's payload). */
  triggerData?: unknown
  /** One key for every run, per workflow: a workflow that used it within 24 hours gets that run back and nothing is created for it. */
  idempotencyKey?: string
  /** The request that starts the runs (X-Request-Id), carried in their jobs. */
  requestId?: string
}

/** Where a retry from a node starts (POST /runs/:id/retry {fromNodeId}). */
export interface RunStartPoint {
  nodeId: string
  result: Record<string, unknown>
}

/**
 * A new run's tags from its workflow's runTags (README, Finding runs), or none: a replay's are its
 * first run's, copied by the insert. Only a workflow with runTags reads its trigger data here.
 */
function tagsOf (workflow: RunTarget, triggerJson: string | undefined, triggerData: unknown): string[] | undefined {
  if (workflow.runTags === undefined || workflow.runTags === null) return undefined
  return renderRunTags(workflow.runTags, triggerJson === undefined ? triggerData : JSON.parse(triggerJson))
}

/** A debounced run's period and longest wait (README, Flow control), in ms, as the insert's row carries them. */
function debounceMs ({ periodSeconds, maxWaitSeconds }: NonNullable<FlowControl['debounce']>): { debounce_ms: number, debounce_max_ms?: number } {
  return { debounce_ms: periodSeconds * 1000, ...(maxWaitSeconds !== undefined && { debounce_max_ms: maxWaitSeconds * 1000 }) }
}

/**
 * The CTE `ahead` (after `planned`): whether each planned run with a concurrency key is created
 * behind a full line, with at least `limit` live runs of its key before it (those in the line, then
 * the ones planned before it here). Such a run's job waits from the start (HELD_RECHECK_MS) instead
 * of being taken by a worker only to be held, and a run's end wakes it as it wakes a held one. Only
 * a hint: the key's gate decides when the run starts, and a line that emptied while the run was
 * written is woken once its job is queued (`enqueueRuns`).
 */
const lineAhead = sql`ahead as (
  select p.run_id, (select count(*) from (
      select 1 from run_keys k join runs r on r.id = k.run_id and r.status in ('PENDING', 'RUNNING', 'WAITING')
      where k.workflow_id = p.workflow_id and k.key = p.flow_control->>'concurrencyKey' limit p.concurrency_limit
    ) as line)
    + row_number() over (partition by p.workflow_id, p.flow_control->>'concurrencyKey' order by p.run_id) - 1 >= p.concurrency_limit as behind
  from planned p where p.concurrency_limit is not null
)`

/**
 * In the debounce's upsert: the burst's run still waits, so a start of its key joins it. A run this
 * statement cannot see was made by a start that committed while it waited for the row: it waits.
 */
const burstGoesOn = sql`coalesce((select status from runs where runs.id = run_debounces.run_id), 'PENDING') = 'PENDING'`

/** A run to insert: `key` is its stored idempotency key, if any. */
interface PlannedRun {
  runId: string
  workflow: RunTarget
  queue: QueueName
  triggerData?: unknown
  triggerJson?: string
  rawBody?: Buffer
  key?: string
  requestId?: string
  traceparent?: string
  workflowVersion?: number
  retriedFrom?: string
  test?: boolean
  untilNodeId?: string
  startAt?: RunStartPoint
  assistantTurnId?: string
  tags?: string[]
  flowControl?: RunFlowControl
  cancelRules?: RunCancelRule[]
  errorOfRunId?: string
}

interface InsertedRun extends StartedRun {
  /** The workflow's domain, for the runs-created metric (null when the workflow is gone). */
  domain: string | null
  /** Created behind a full line of its concurrency key: it waits from the start (`lineAhead`). */
  behind: boolean
}

/**
 * One statement per chunk, its text the same whatever the chunk holds (one prepared plan):
 * the PENDING rows (each pinned to its workflow's current version), their counter deltas
 * (runCount and lastRunAt; the workflow rows are only read, never locked) and the claims of
 * the runs that carry a key. The rows travel as one JSON parameter. A key is claimed before
 * its run is inserted so that concurrent requests with one key create one run: the loser's
 * ON CONFLICT waits for the winner's commit and returns the winner's run id. An expired key
 * is taken over. The foreign key from the key to its run is checked at the end of the
 * statement. A chunk holds each (workflow, key) pair once (ON CONFLICT may touch a row once
 * per statement).
 */
async function insertChunk (db: DbOrTx, chunk: PlannedRun[], shared: unknown): Promise<InsertedRun[]> {
  // Only a chunk of error workflows' runs names the index a start for the same failed run conflicts on: other starts keep their plan.
  const errorRuns = chunk.some(({ errorOfRunId }) => errorOfRunId !== undefined)
  const rows = JSON.stringify(chunk.map(({ runId, workflow, queue, triggerData, triggerJson, rawBody, key, workflowVersion, retriedFrom, test, untilNodeId, startAt, assistantTurnId, tags, flowControl, cancelRules, errorOfRunId }) => ({
    run_id: runId,
    workflow_id: workflow.id,
    user_id: workflow.userId,
    queue,
    trigger_data: triggerJson ?? (triggerData === undefined ? undefined : storableJson(triggerData)),
    raw_body: rawBody?.toString('base64'),
    key,
    workflow_version: workflowVersion,
    retried_from: retriedFrom,
    test,
    until_node_id: untilNodeId,
    current_node_id: startAt?.nodeId,
    result: startAt?.result,
    assistant_turn_id: assistantTurnId,
    tags: tags ?? (retriedFrom === undefined ? tagsOf(workflow, triggerJson, triggerData ?? shared) : undefined),
    flow_control: flowControl,
    cancel_rules: cancelRules,
    error_of_run_id: errorOfRunId,
    concurrency_limit: flowControl?.concurrencyKey === undefined ? undefined : workflow.flowControl?.concurrency?.limit,
    ...(flowControl?.debounceKey !== undefined && workflow.flowControl?.debounce !== undefined && debounceMs(workflow.flowControl.debounce))
  })))
  const inserted = await db.execute<{ plannedId: string, runId: string, domain: string | null, behind: boolean, inserted?: boolean }>(sql`
    with planned as (
      select * from jsonb_to_recordset(${rows}::jsonb)
        as row (run_id text, workflow_id text, user_id text, queue text, trigger_data text, raw_body text, key text, workflow_version integer, retried_from text,
          test boolean, until_node_id text, current_node_id text, result jsonb, assistant_turn_id text, tags text[],
          flow_control jsonb, cancel_rules jsonb, error_of_run_id text, concurrency_limit integer, debounce_ms integer, debounce_max_ms integer)
    ), ${lineAhead}, claim as (
      insert into idempotency_keys (workflow_id, key, run_id)
      select workflow_id, key, run_id from planned where key is not null
      on conflict (workflow_id, key) do update set
        run_id = case when idempotency_keys.created_at > now() - ${IDEMPOTENCY_WINDOW}
          then idempotency_keys.run_id else excluded.run_id end,
        created_at = case when idempotency_keys.created_at > now() - ${IDEMPOTENCY_WINDOW}
          then idempotency_keys.created_at else excluded.created_at end
      returning workflow_id, key, run_id
    ), debounced as (
      insert into run_debounces (workflow_id, key, run_id, due_at, latest_at, period_ms)
      select workflow_id, flow_control->>'debounceKey', run_id, now() + debounce_ms * interval '1 ms',
        now() + debounce_max_ms * interval '1 ms', debounce_ms
      from planned
      where debounce_ms is not null and (planned.key is null or planned.run_id in (select run_id from claim))
      -- A burst's run cancelled while it waited ends its burst: this start begins the next.
      on conflict (workflow_id, key) do update set
        run_id = case when ${burstGoesOn} then run_debounces.run_id else excluded.run_id end,
        due_at = case when ${burstGoesOn}
          then least(now() + run_debounces.period_ms * interval '1 ms', coalesce(run_debounces.latest_at, 'infinity')) else excluded.due_at end,
        latest_at = case when ${burstGoesOn} then run_debounces.latest_at else excluded.latest_at end,
        period_ms = case when ${burstGoesOn} then run_debounces.period_ms else excluded.period_ms end
      returning workflow_id, key, run_id
    ), redebounced as (
      update runs set
        trigger_data = coalesce(planned.trigger_data::jsonb, ${storableJson(shared)}::jsonb),
        raw_body = decode(planned.raw_body, 'base64')
      from planned join debounced on debounced.workflow_id = planned.workflow_id and debounced.key = planned.flow_control->>'debounceKey'
      where debounced.run_id <> planned.run_id and runs.id = debounced.run_id and runs.status = 'PENDING'
        and (planned.key is null or planned.run_id in (select run_id from claim))
    ), new_runs as (
      insert into runs (id, workflow_id, user_id, queue, trigger_data, raw_body, workflow_version, retried_from, test, until_node_id, current_node_id, result, assistant_turn_id, tags, flow_control, error_of_run_id)
      select planned.run_id, planned.workflow_id, planned.user_id, planned.queue,
        coalesce(planned.trigger_data::jsonb, (select trigger_data from runs source where source.id = planned.retried_from), ${storableJson(shared)}::jsonb),
        coalesce(decode(planned.raw_body, 'base64'), (select raw_body from runs source where source.id = planned.retried_from)),
        coalesce(planned.workflow_version, (select version from workflows where workflows.id = planned.workflow_id)),
        planned.retried_from, coalesce(planned.test, false), planned.until_node_id, planned.current_node_id, coalesce(planned.result, '{}'::jsonb),
        planned.assistant_turn_id,
        coalesce(planned.tags, (select tags from runs source where source.id = planned.retried_from), '{}'::text[]),
        case when ahead.behind then planned.flow_control || jsonb_build_object('waitingFor', 'concurrency', 'since', ${isoNow})
          else planned.flow_control end,
        planned.error_of_run_id
      -- The replayed run is read by subqueries, an index probe per replay and none for other runs,
      -- whatever plan the prepared statement keeps: a join let a generic plan, made while runs was
      -- small, scan the whole table on every start (docs/decisions.md, "Fewer writes per run").
      from planned left join ahead on ahead.run_id = planned.run_id
      where (planned.key is null or planned.run_id in (select run_id from claim))
        and (planned.debounce_ms is null or planned.run_id in (select run_id from debounced))
      ${errorRuns ? sql`on conflict (error_of_run_id) where error_of_run_id is not null do nothing` : sql``}
      returning id, workflow_id, user_id, created_at, flow_control
    ), listening as (
      insert into event_listens (run_id, listener, kind, user_id, event_name, match, since)
      select n.id, rule.listener, 'cancel', n.user_id, rule.event, rule.match, n.created_at
      from new_runs n join planned on planned.run_id = n.id
      cross join lateral jsonb_to_recordset(planned.cancel_rules) as rule (listener text, event text, match jsonb)
      where planned.cancel_rules is not null
    ), lined as (
      -- The runs of one priority key in this statement are a step apart after the key's last one in the line.
      insert into run_keys (run_id, workflow_id, key, place, state, fair_key)
      select n.id, n.workflow_id, n.flow_control->>'concurrencyKey', ${fairPlaceOf(sql`n`, sql`
          select max(k.place) from run_keys k where k.workflow_id = n.workflow_id and k.key = n.flow_control->>'concurrencyKey'
            and k.state = 'waiting' and k.fair_key = n.flow_control->>'priorityKey'`)}
          + (row_number() over (partition by n.workflow_id, n.flow_control->>'concurrencyKey', n.flow_control->>'priorityKey' order by n.id) - 1)
            * (case when n.flow_control ? 'priorityKey' then ${FAIR_STEP} else interval '0' end),
        'waiting', n.flow_control->>'priorityKey'
      from new_runs n where n.flow_control ? 'concurrencyKey'
    ), counted as (
      insert into workflow_counter_deltas (workflow_id, run_id, runs, last_run_at)
      select workflow_id, min(id), count(*), max(created_at) from new_runs group by workflow_id
    )
    select planned.run_id as "plannedId", coalesce(claim.run_id, debounced.run_id, planned.run_id) as "runId", workflows.domain,
      coalesce(ahead.behind, false) as behind
      ${errorRuns ? sql`, planned.run_id in (select id from new_runs) as inserted` : sql``}
    from planned left join ahead on ahead.run_id = planned.run_id left join claim on claim.workflow_id = planned.workflow_id and claim.key = planned.key
    left join debounced on debounced.workflow_id = planned.workflow_id and debounced.key = planned.flow_control->>'debounceKey'
    left join workflows on workflows.id = planned.workflow_id
  `)
  const byPlannedId = new Map(inserted.map((row) => [row.plannedId, row]))
  return chunk.map(({ runId }) => {
    const row = byPlannedId.get(runId)
    if (row === undefined) throw new Error('run insert returned no row')
    return { runId: row.runId, created: row.runId === runId && row.inserted !== false, domain: row.domain, behind: row.behind }
  })
}

/**
 * Inserts runs (with counters and keys) in `db`: one statement per 1,000 runs, in one
 * transaction when there are several (a savepoint when `db` is a transaction already).
 * Returns each input run's answer, in order, and the runs created, for `enqueueRuns` once
 * they are committed. Nothing touches Redis here: a run is accepted once it is committed.
 */
export async function insertRuns (db: DbOrTx, input: StartRunsInput): Promise<{ started: StartedRun[], created: CreatedRun[] }> {
  if (input.runs.length === 0) return { started: [], created: [] }
  const sharedKey = storedKey(input.idempotencyKey)
  // A (workflow, key) pair listed twice is one run: the later ones get the first one's answer.
  const firstOfPair = new Map<string, number>()
  const distinct: PlannedRun[] = []
  // A debounce key listed twice is one run, with the later one's trigger data (README, Flow control).
  const firstOfBurst = new Map<string, number>()
  const now = new Date()
  const plannedIndex = input.runs.map(({ workflow, triggerData, triggerJson, rawBody, idempotencyKey, requestId, traceparent, workflowVersion, retriedFrom, test, untilNodeId, startAt, assistantTurnId, tags, errorOfRunId }) => {
    const key = idempotencyKey === undefined ? sharedKey : storedKey(idempotencyKey)
    if (key !== undefined) {
      const pair = JSON.stringify([workflow.id, key])
      const first = firstOfPair.get(pair)
      if (first !== undefined) return first
      firstOfPair.set(pair, distinct.length)
    }
    const data = (): unknown => triggerJson === undefined ? triggerData ?? input.triggerData : JSON.parse(triggerJson)
    const flowControl = workflow.flowControl === undefined || workflow.flowControl === null || retriedFrom !== undefined
      ? undefined
      : renderFlowControl(workflow.flowControl, data(), now)
    const cancelRules = workflow.cancelOn === undefined || workflow.cancelOn === null || workflow.cancelOn.length === 0 || retriedFrom !== undefined
      ? undefined
      : renderCancelOn(workflow.cancelOn, data())
    if (flowControl?.debounceKey !== undefined) {
      const burst = JSON.stringify([workflow.id, flowControl.debounceKey])
      const first = firstOfBurst.get(burst)
      if (first !== undefined) {
        Object.assign(distinct[first]!, { triggerData, triggerJson, rawBody })
        return first
      }
      firstOfBurst.set(burst, distinct.length)
    }
    distinct.push({ runId: '', workflow, queue: runQueueFor(workflow.triggerType), triggerData, triggerJson, rawBody, key, requestId: requestId ?? input.requestId, traceparent, workflowVersion, retriedFrom, test, untilNodeId, startAt, assistantTurnId, tags, flowControl, cancelRules, errorOfRunId })
    return distinct.length - 1
  })
  const chunks = chunksOf(distinct)
  const insertAll = async (db: DbOrTx): Promise<InsertedRun[]> => {
    const inserted: InsertedRun[] = []
    for (const chunk of chunks) {
      const runIds = await createIds(chunk.length)
      inserted.push(...await insertChunk(db, chunk.map((run, i) => ({ ...run, runId: runIds[i]! })), input.triggerData))
    }
    return inserted
  }
  const inserted = chunks.length === 1 ? await insertAll(db) : await db.transaction(insertAll)
  const created: CreatedRun[] = []
  for (const [i, run] of inserted.entries()) {
    if (!run.created) continue
    const { queue, requestId, traceparent, workflow, flowControl } = distinct[i]!
    // A debounced run's job waits for its period; the claim holds it again while starts move its time on.
    const debounce = flowControl?.debounceKey === undefined ? undefined : workflow.flowControl?.debounce ?? undefined
    const behindInLine = run.behind && flowControl?.concurrencyKey !== undefined ? { workflowId: workflow.id, key: flowControl.concurrencyKey } : undefined
    const delayMs = debounce !== undefined ? debounceMs(debounce).debounce_ms : behindInLine !== undefined ? HELD_RECHECK_MS : undefined
    created.push({ runId: run.runId, userId: workflow.userId, queue, requestId, traceparent, delayMs, gated: isGated(flowControl ?? null), behindInLine })
    runsCreated.inc({ trigger_type: workflow.triggerType, domain: run.domain ?? 'unknown' })
  }
  const answered = new Set<number>()
  const started = plannedIndex.map((index) => {
    const { runId, created } = inserted[index]!
    const first = !answered.has(index)
    answered.add(index)
    return { runId, created: created && first }
  })
  return { started, created }
}

/**
 * Takes runs `insertRuns` created back out of the transaction that inserted them, before its
 * COMMIT (a request of a group whose time ran out): rows, keys and counter deltas. Nobody
 * else has seen them; a concurrent start waiting on one of their keys then claims it.
 * `inserted`: every run the transaction still holds, the withdrawn ones among them. A statement
 * counts its starts in one delta per workflow, keyed by the first of its runs, so those deltas
 * are replaced by the counts of the runs kept.
 */
export async function withdrawRuns (tx: DbOrTx, withdrawnIds: readonly string[], inserted: readonly string[]): Promise<void> {
  await tx.execute(sql`
    with withdrawn as (
      delete from runs where id = any(${textArray(withdrawnIds)}) returning id
    ), inserted as (
      select id, workflow_id, created_at from runs where id = any(${textArray(inserted)})
    ), uncounted as (
      delete from workflow_counter_deltas d using inserted where d.workflow_id = inserted.workflow_id and d.run_id = inserted.id
    )
    insert into workflow_counter_deltas (workflow_id, run_id, runs, last_run_at)
    select workflow_id, min(id), count(*), max(created_at) from inserted
    where id not in (select id from withdrawn)
    group by workflow_id
  `)
}

/**
 * Queues the jobs of committed runs: one addBulk per queue and 1,000 runs, each within 3 s.
 * Never throws: a run is accepted once committed, and runs Redis did not take stay PENDING for
 * the reconciler, which queues them as soon as Redis answers (README, Guarantees).
 */
export async function enqueueRuns (deps: Pick<RunServiceDeps, 'db' | 'queues' | 'logger'>, created: readonly CreatedRun[]): Promise<void> {
  const byQueue = new Map<QueueName, CreatedRun[]>()
  for (const run of created) byQueue.set(run.queue, [...(byQueue.get(run.queue) ?? []), run])
  for (const [name, runs] of byQueue) {
    for (const [n, chunk] of chunksOf(runs).entries()) {
      let spans: Span[] | undefined
      const jobs = chunk.map(({ runId, userId, requestId, traceparent, delayMs, gated }) => {
        const data: RunJobData = { runId, userId, ...(requestId !== undefined && { requestId }), ...(traceparent !== undefined && { traceparent }), ...(gated && { gated }) }
        const opts = { jobId: runJobId(runId), ...(delayMs !== undefined && delayMs > 0 && { delay: delayMs }) }
        if (!tracingOn || traceparent === undefined) return { name: RUN_JOB, data, opts }
        const { span, telemetry } = startJobSpan(name, { 'switchboard.run.id': runId }, traceparent)
        ;(spans ??= []).push(span)
        return { name: RUN_JOB, data, opts: { ...opts, telemetry } }
      })
      try {
        await withTimeout(deps.queues[name].addBulk(jobs), ENQUEUE_TIMEOUT_MS, `enqueue on ${name}`)
        spans?.forEach((span) => { span.end() })
        await noteOwners(deps.queues[name], chunk.map(({ userId }) => userId))
      } catch (err) {
        // Those the add ended already (noteOwners failed after it) record nothing more.
        spans?.forEach((span) => { if (span.isRecording()) endSpan(span, err) })
        const left = runs.length - n * CHUNK_SIZE
        runsLeftForReconciler.inc(left)
        deps.logger?.warn({ err, queue: name, runs: left, firstRunId: chunk[0]!.runId }, 'runs stored but not queued: the reconciler will queue them')
        break
      }
    }
  }
  // A line found full when these runs were written may have emptied before they were committed: its first runs go now (`lineAhead`).
  const lines = new Map<string, { workflowId: string, key: string }>()
  for (const { behindInLine } of created) if (behindInLine !== undefined) lines.set(JSON.stringify(behindInLine), behindInLine)
  for (const { workflowId, key } of lines.values()) {
    await wakeKeyLine(deps, workflowId, key).catch((err: unknown) => {
      deps.logger?.warn({ err, workflowId, key }, 'runs waiting for a slot of a key not woken: the reconciler will')
    })
  }
}

/**
 * Starts runs: inserted and committed (`insertRuns`), then queued (`enqueueRuns`). Resolves
 * once the runs are committed and their enqueue was tried; fails only when they could not be
 * stored. Call it outside a transaction: the jobs would be queued before the caller's commit.
 */
export async function startRuns (deps: RunServiceDeps, input: StartRunsInput): Promise<StartedRun[]> {
  const { started, created } = await insertRuns(deps.db, input)
  await enqueueRuns(deps, created)
  return started
}

/** Starts one run (cron tick, tests); with an idempotency key, possibly the one it already started. */
export async function startRun (deps: RunServiceDeps, input: StartRunInput): Promise<StartedRun> {
  const { workflow, triggerData, rawBody, idempotencyKey, requestId } = input
  const [started] = await startRuns(deps, { runs: [{ workflow, triggerData: triggerData ?? null, rawBody }], idempotencyKey, requestId })
  return started!
}
