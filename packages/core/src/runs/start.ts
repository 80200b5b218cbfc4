import { createHash, randomFillSync } from 'node:crypto'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { init } from '@paralleldrive/cuid2'
import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { storableJson } from '../db/storable.ts'
import { textArray } from '../db/sql.ts'
import type { Workflow } from '../db/schema/index.ts'
import { isStoreUnavailable, serviceUnavailable } from '../errors.ts'
import type { Logger } from '../logger.ts'
import { runsCreated } from '../observability/metrics.ts'
import { TimeoutError, withTimeout, type Deadline } from '../timeout.ts'
import { AGENT_EXECUTION, RUN_JOB, runJobId, WORKFLOW_RUNS, type QueueName, type Queues, type RunJobData } from '../queues/catalog.ts'

export interface RunServiceDeps {
  db: DbOrTx
  queues: Queues
  /** Where a run that could not be taken back after an error answer is reported. */
  logger?: Pick<Logger, 'error'>
}

/**
 * The time limits of a request that starts runs (fire, inbound webhook): no run may outlive
 * an error answer, nor be created after the answer was given.
 */
export interface StartDeadline {
  /** The answer is due by then: the runs are stored and queued before it, or the start fails SERVICE_UNAVAILABLE. */
  deadline: Deadline
  /**
   * Until then (ms since the epoch) a run this start stored but could not confirm is taken back
   * after the answer, while Postgres lets it: the reconciler leaves PENDING runs alone that long
   * (RECONCILER_GRACE_MS after they were created) before it queues them itself.
   */
  settleBy: number
}

/** What starting a run needs to know about its workflow: never its nodes, so the cost does not grow with its size. */
export type RunTarget = Pick<Workflow, 'id' | 'userId' | 'triggerType'>

export interface StartRunInput {
  workflow: RunTarget
  triggerData: unknown
  /** The exact bytes of an inbound webhook, for verify_signature. */
  rawBody?: Buffer
  /** Same key for the same workflow within 24 hours: the first run is returned and nothing is created. */
  idempotencyKey?: string
  /** The request that starts the run (X-Request-Id), carried in its job. */
  requestId?: string
  /** The request's time limits; without them (cron ticks, chat deliveries) the start waits for the stores. */
  limits?: StartDeadline
}

export interface StartedRun {
  runId: string
  /** False when an idempotency key matched an earlier run. */
  created: boolean
}

/** AGENT runs have a queue of their own so that they never wait behind bulk automation (contract, Queues). */
const runQueueFor = (triggerType: Workflow['triggerType']): QueueName => triggerType === 'AGENT' ? AGENT_EXECUTION : WORKFLOW_RUNS

/** How long an idempotency key holds (contract: 24 hours); older keys are taken over, and purged by the worker's reconciler. */
export const IDEMPOTENCY_WINDOW = sql.raw('interval \'24 hours\'')

/**
 * BullMQ waits for a Redis connection that may never come back; the caller gets its
 * error (webhook: 500, so the sender retries) instead of hanging.
 */
const ENQUEUE_TIMEOUT_MS = 3000

/**
 * Of a request's deadline, the part after the run's commit is kept for its enqueue and, if that
 * fails, its take-back: a transaction sends its COMMIT only with this much time left.
 */
export const QUEUE_RESERVE_MS = 1000
/** Of that part, the last is kept for the take-back after a failed or late enqueue. */
const TAKE_BACK_RESERVE_MS = 500
/** Between two attempts to take back a run after the answer, while Postgres does not answer. */
const TAKE_BACK_RETRY_MS = 250

/** Keys are client-chosen: a long one is stored as its digest so that any header value works. */
const MAX_STORED_KEY_LENGTH = 255

function storedKey (key: string | undefined): string | undefined {
  if (key === undefined || key === '') return undefined
  return key.length <= MAX_STORED_KEY_LENGTH ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`
}

/**
 * Runs per statement and jobs per addBulk, whatever the fan-out: a statement stays
 * small, holds few row locks, and binds far fewer than Postgres's 65,535 parameters
 * (an insert binds one JSON parameter, a take-back three per run).
 */
const CHUNK_SIZE = 1000

function chunksOf<T> (items: readonly T[]): T[][] {
  const chunks: T[][] = []
  for (let i = 0; i < items.length; i += CHUNK_SIZE) chunks.push(items.slice(i, i + CHUNK_SIZE))
  return chunks
}

/**
 * cuid2 asks the CSPRNG once per character of an id, a system call each time; drawing
 * from a pooled buffer instead makes ids about a third cheaper. Still about 20 µs of
 * CPU each (a 512-bit hash turned into base 36; cuid2 2.x does it with BigInt, 3.x with
 * bignumber.js at about 250 µs, which is why we stay on 2.x), so a fan-out makes them
 * in slices and lets the event loop serve other requests in between.
 */
const randomPool = new Uint32Array(4096)
let randomPoolNext = randomPool.length
const createRunId = init({
  random: () => {
    if (randomPoolNext === randomPool.length) {
      randomFillSync(randomPool)
      randomPoolNext = 0
    }
    return randomPool[randomPoolNext++]! / 0x1_0000_0000
  }
})
const IDS_PER_TURN = 100

async function createRunIds (count: number): Promise<string[]> {
  const ids: string[] = []
  while (ids.length < count) {
    if (ids.length > 0) await nextTurn()
    for (let i = 0; i < IDS_PER_TURN && ids.length < count; i++) ids.push(createRunId())
  }
  return ids
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
    /** The workflow version to execute; absent: the workflow's current one. */
    workflowVersion?: number
    /**
     * The run this one replays (`runs.retried_from`): its triggerData and raw body are copied
     * by the insert itself, never through the caller, unless given here.
     */
    retriedFrom?: string
  }>
  /** The triggerData of every run that brings none, sent once per statement however many runs share it (an event's payload). */
  triggerData?: unknown
  /** One key for every run, per workflow: a workflow that used it within 24 hours gets that run back and nothing is created for it. */
  idempotencyKey?: string
  /** The request that starts the runs (X-Request-Id), carried in their jobs. */
  requestId?: string
  /** The request's time limits; without them the start waits for the stores. */
  limits?: StartDeadline
}

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
  workflowVersion?: number
  retriedFrom?: string
}

/** A run as its insert left it: `claimVersion` is the key row's version (xmin) when this start claimed its idempotency key. */
interface InsertedRun extends StartedRun {
  workflowId: string
  /** The workflow's domain, for the runs-created metric (null when the workflow is gone). */
  domain: string | null
  queue: QueueName
  key?: string
  claimVersion: string | null
  requestId?: string
}

/**
 * One statement per chunk, its text the same whatever the chunk holds (one prepared plan):
 * the PENDING rows (each pinned to its workflow's current version), their counter deltas
 * (runCount and lastRunAt; the workflow rows are only read, never locked) and the claims of
 * the runs that carry a key. The rows travel as one JSON parameter. A key is claimed before
 * its run is inserted so that concurrent requests with one key create one run: the loser's
 * ON CONFLICT waits for the winner and returns the winner's run id. An expired key is taken
 * over. The foreign key from the key to its run is checked at the end of the statement.
 * A chunk holds each (workflow, key) pair once (ON CONFLICT may touch a row once per statement).
 */
async function insertChunk (db: DbOrTx, chunk: PlannedRun[], shared: unknown): Promise<InsertedRun[]> {
  const rows = JSON.stringify(chunk.map(({ runId, workflow, queue, triggerData, triggerJson, rawBody, key, workflowVersion, retriedFrom }) => ({
    run_id: runId,
    workflow_id: workflow.id,
    user_id: workflow.userId,
    queue,
    trigger_data: triggerJson ?? (triggerData === undefined ? undefined : storableJson(triggerData)),
    raw_body: rawBody?.toString('base64'),
    key,
    workflow_version: workflowVersion,
    retried_from: retriedFrom
  })))
  const inserted = await db.execute<{ plannedId: string, runId: string, claimVersion: string | null, domain: string | null }>(sql`
    with planned as (
      select * from jsonb_to_recordset(${rows}::jsonb)
        as row (run_id text, workflow_id text, user_id text, queue text, trigger_data text, raw_body text, key text, workflow_version integer, retried_from text)
    ), claim as (
      insert into idempotency_keys (workflow_id, key, run_id)
      select workflow_id, key, run_id from planned where key is not null
      on conflict (workflow_id, key) do update set
        run_id = case when idempotency_keys.created_at > now() - ${IDEMPOTENCY_WINDOW}
          then idempotency_keys.run_id else excluded.run_id end,
        created_at = case when idempotency_keys.created_at > now() - ${IDEMPOTENCY_WINDOW}
          then idempotency_keys.created_at else excluded.created_at end
      returning workflow_id, key, run_id, xmin::text as version
    ), new_runs as (
      insert into runs (id, workflow_id, user_id, queue, trigger_data, raw_body, workflow_version, retried_from)
      select planned.run_id, planned.workflow_id, planned.user_id, planned.queue,
        coalesce(planned.trigger_data::jsonb, source.trigger_data, ${storableJson(shared)}::jsonb),
        coalesce(decode(planned.raw_body, 'base64'), source.raw_body),
        coalesce(planned.workflow_version, (select version from workflows where workflows.id = planned.workflow_id)),
        planned.retried_from
      from planned left join runs source on source.id = planned.retried_from
      where planned.key is null or planned.run_id in (select run_id from claim)
      returning id, workflow_id, created_at
    ), counted as (
      insert into workflow_counter_deltas (workflow_id, run_id, runs, last_run_at)
      select workflow_id, id, 1, created_at from new_runs
    )
    select planned.run_id as "plannedId", coalesce(claim.run_id, planned.run_id) as "runId", claim.version as "claimVersion",
      workflows.domain
    from planned left join claim on claim.workflow_id = planned.workflow_id and claim.key = planned.key
    left join workflows on workflows.id = planned.workflow_id
  `)
  const byPlannedId = new Map(inserted.map((row) => [row.plannedId, row]))
  return chunk.map(({ runId, workflow, queue, key, requestId }) => {
    const row = byPlannedId.get(runId)
    if (row === undefined) throw new Error('run insert returned no row')
    const created = row.runId === runId
    return { runId: row.runId, created, workflowId: workflow.id, domain: row.domain, queue, key, claimVersion: created ? row.claimVersion : null, requestId }
  })
}

/**
 * Starts runs: rows (with counters and keys) first, in chunks inside one transaction
 * when there are several, then the jobs, `addBulk` per queue and chunk. A single run
 * costs one statement and one Redis call (three round trips to Postgres with `limits`:
 * begin, insert, commit). Call it outside a transaction: the jobs are enqueued before
 * the caller's commit otherwise.
 */
export async function startRuns (deps: RunServiceDeps, input: StartRunsInput): Promise<StartedRun[]> {
  if (input.runs.length === 0) return []
  const sharedKey = storedKey(input.idempotencyKey)
  // A (workflow, key) pair listed twice is one run: the later ones get the first one's answer.
  const firstOfPair = new Map<string, number>()
  const distinct: PlannedRun[] = []
  const plannedIndex = input.runs.map(({ workflow, triggerData, triggerJson, rawBody, idempotencyKey, requestId, workflowVersion, retriedFrom }) => {
    const key = idempotencyKey === undefined ? sharedKey : storedKey(idempotencyKey)
    if (key !== undefined) {
      const pair = JSON.stringify([workflow.id, key])
      const first = firstOfPair.get(pair)
      if (first !== undefined) return first
      firstOfPair.set(pair, distinct.length)
    }
    distinct.push({ runId: '', workflow, queue: runQueueFor(workflow.triggerType), triggerData, triggerJson, rawBody, key, requestId: requestId ?? input.requestId, workflowVersion, retriedFrom })
    return distinct.length - 1
  })
  const chunks = chunksOf(distinct)
  const insertAll = async (db: DbOrTx): Promise<InsertedRun[]> => {
    const inserted: InsertedRun[] = []
    for (const chunk of chunks) {
      const runIds = await createRunIds(chunk.length)
      inserted.push(...await insertChunk(db, chunk.map((run, i) => ({ ...run, runId: runIds[i]! })), input.triggerData))
    }
    return inserted
  }
  const { limits } = input
  const inserted = limits !== undefined
    ? await insertInTime(deps, insertAll, limits)
    : chunks.length === 1 ? await insertAll(deps.db) : await deps.db.transaction(insertAll)
  const created = inserted.filter((run) => run.created)
  await enqueueOrTakeBack(deps, created, limits)
  const triggerTypes = new Map(distinct.map(({ workflow }) => [workflow.id, workflow.triggerType]))
  for (const run of created) runsCreated.inc({ trigger_type: triggerTypes.get(run.workflowId), domain: run.domain ?? 'unknown' })
  const answered = new Set<number>()
  return plannedIndex.map((index) => {
    const { runId, created } = inserted[index]!
    const first = !answered.has(index)
    answered.add(index)
    return { runId, created: created && first }
  })
}

/**
 * Stores the runs in one transaction that commits before the deadline or not at all, so no run
 * appears after its request was answered: the transaction writes nothing if it only got its
 * connection once the answer was given; the server ends it (statement_timeout,
 * idle_in_transaction_session_timeout, set to what is left) if the client stops answering; and
 * the COMMIT is sent only while time is left for the enqueue. A COMMIT whose answer arrives too
 * late has stored runs the request was answered an error for: they are taken back.
 */
async function insertInTime (deps: RunServiceDeps, insertAll: (db: DbOrTx) => Promise<InsertedRun[]>, limits: StartDeadline): Promise<InsertedRun[]> {
  const { deadline } = limits
  let answered = false
  const checkTime = (what: string): void => {
    if (answered) throw new TimeoutError(`${what}: the request was answered already`)
    deadline.check(what, QUEUE_RESERVE_MS)
  }
  try {
    checkTime('store the run')
  } catch (err) {
    throw serviceUnavailable(err)
  }
  const transaction = deps.db.transaction(async (tx) => {
    checkTime('store the run')
    const serverLimit = String(Math.ceil(deadline.remainingMs(QUEUE_RESERVE_MS)))
    // Sent together with the insert (one round trip): both limits apply to it and to the wait for COMMIT.
    const [, inserted] = await Promise.all([
      tx.execute(sql`select set_config('statement_timeout', ${serverLimit}, true), set_config('idle_in_transaction_session_timeout', ${serverLimit}, true)`),
      insertAll(tx)
    ])
    checkTime('commit the run')
    return inserted
  })
  try {
    return await deadline.race(transaction, 'store the run', TAKE_BACK_RESERVE_MS)
  } catch (err) {
    answered = true
    transaction.then(async (late) => { await takeBackAfterAnswer(deps, late.filter((run) => run.created), limits.settleBy) }, () => {})
    throw isStoreUnavailable(err) ? serviceUnavailable(err) : err
  }
}

/** Starts one run (fire, inbound webhook, cron tick); with an idempotency key, possibly the one it already started. */
export async function startRun (deps: RunServiceDeps, input: StartRunInput): Promise<StartedRun> {
  const { workflow, triggerData, rawBody, idempotencyKey, requestId, limits } = input
  const [started] = await startRuns(deps, { runs: [{ workflow, triggerData: triggerData ?? null, rawBody }], idempotencyKey, requestId, limits })
  return started!
}

/**
 * Enqueues the created runs' jobs. When Redis does not take them, each run is taken
 * back (row, key and counters) so that the caller's error, and the sender's retry,
 * leave no duplicate behind; a job that reaches Redis after its run was taken back
 * finds no run and does nothing. A run whose id may already have been handed out is
 * kept PENDING instead, for the worker's reconciler to enqueue: a concurrent request
 * with the same key was answered with it, and every answered run id must exist. Such
 * a run is durable, so when every run was kept the start succeeds; otherwise the
 * enqueue error is thrown (the kept runs are found again by their keys on a retry).
 * With `limits`, the enqueue stops in time for the take-back, and a take-back Postgres
 * does not answer in time goes on after the answer.
 */
async function enqueueOrTakeBack (deps: RunServiceDeps, created: InsertedRun[], limits: StartDeadline | undefined): Promise<void> {
  const byQueue = new Map<QueueName, InsertedRun[]>()
  for (const run of created) byQueue.set(run.queue, [...(byQueue.get(run.queue) ?? []), run])
  try {
    for (const [name, runs] of byQueue) {
      for (const chunk of chunksOf(runs)) {
        const data = ({ runId, requestId }: InsertedRun): RunJobData => requestId === undefined ? { runId } : { runId, requestId }
        const jobs = chunk.map((run) => ({ name: RUN_JOB, data: data(run), opts: { jobId: runJobId(run.runId) } }))
        const budget = limits === undefined ? ENQUEUE_TIMEOUT_MS : Math.min(ENQUEUE_TIMEOUT_MS, limits.deadline.remainingMs(TAKE_BACK_RESERVE_MS))
        await withTimeout(deps.queues[name].addBulk(jobs), budget, `enqueue on ${name}`)
      }
    }
  } catch (err) {
    if (limits === undefined) {
      // A take-back that fails leaves the runs PENDING and the reconciler enqueues them: better than losing one.
      if (await discardAll(deps.db, created).catch(() => 0) < created.length) throw err
      return
    }
    const takingBack = discardAll(deps.db, created)
    try {
      if (await limits.deadline.race(takingBack, 'take the run back') === created.length) return
    } catch {
      takingBack.catch(async () => { await takeBackAfterAnswer(deps, created, limits.settleBy) })
    }
    throw isStoreUnavailable(err) ? serviceUnavailable(err) : err
  }
}

/** How many of `runs` were kept (their ids handed out), taking back the others. */
async function discardAll (db: DbOrTx, runs: InsertedRun[]): Promise<number> {
  let kept = 0
  for (const chunk of chunksOf(runs)) kept += await discardUnclaimedRuns(db, chunk)
  return kept
}

/**
 * Takes back runs whose request was answered with an error, retrying while Postgres does not
 * answer, until `settleBy`; past it the reconciler may queue them, so the run would still run
 * once (both Postgres and Redis failed that request): that is logged.
 */
async function takeBackAfterAnswer (deps: RunServiceDeps, runs: InsertedRun[], settleBy: number): Promise<void> {
  if (runs.length === 0) return
  for (;;) {
    try {
      await withTimeout(discardAll(deps.db, runs), Math.max(TAKE_BACK_RETRY_MS, settleBy - Date.now()), 'take the runs back')
      return
    } catch (err) {
      if (Date.now() + TAKE_BACK_RETRY_MS >= settleBy) {
        deps.logger?.error({ err, runIds: runs.map(({ runId }) => runId) }, 'runs answered with an error could not be taken back: the reconciler will run them')
        return
      }
      await new Promise((resolve) => setTimeout(resolve, TAKE_BACK_RETRY_MS))
    }
  }
}

/**
 * Deletes PENDING runs nobody else has seen, with their keys and counter increments, and
 * returns how many runs were kept. A run's start delta goes with it; one the worker
 * folded into its workflow's row already is taken off that row (an error path, so the
 * row lock it takes is rare). A fold in progress holds the delta's row lock: the delete
 * waits for it, finds the delta gone and takes the run off the folded row instead. A key row another request has read since this one
 * claimed it has a new version: that request's ON CONFLICT DO UPDATE rewrote it (Postgres
 * writes a new row version even when no value changes; xmin is its optimistic-locking
 * token). Such a key, and its run, stay. The delete waits for a concurrent claimer's
 * commit and then sees the new version, so no claim slips between check and delete.
 */
async function discardUnclaimedRuns (db: DbOrTx, runs: InsertedRun[]): Promise<number> {
  const [row] = await db.execute<{ discarded: number }>(sql`
    with claimed (workflow_id, run_id, key, version) as (
      select * from unnest(${textArray(runs.map(({ workflowId }) => workflowId))}, ${textArray(runs.map(({ runId }) => runId))},
        ${textArray(runs.map(({ key }) => key ?? ''))}, ${textArray(runs.map(({ claimVersion }) => claimVersion ?? ''))})
    ), released as (
      delete from idempotency_keys using claimed
      where idempotency_keys.workflow_id = claimed.workflow_id and idempotency_keys.key = claimed.key
        and idempotency_keys.run_id = claimed.run_id and idempotency_keys.xmin::text = claimed.version
      returning idempotency_keys.run_id
    ), discarded as (
      delete from runs
      where (id in (select run_id from released) or id in (select run_id from claimed where key = '')) and status = 'PENDING'
      returning id, workflow_id
    ), unfolded as (
      delete from workflow_counter_deltas using discarded
      where workflow_counter_deltas.workflow_id = discarded.workflow_id and workflow_counter_deltas.run_id = discarded.id
        and workflow_counter_deltas.runs = 1
      returning workflow_counter_deltas.run_id
    ), per_workflow as (
      select workflow_id, count(*)::int as discarded from discarded
      where id not in (select run_id from unfolded)
      group by workflow_id
    ), counted as (
      update workflows set
        run_count = run_count - per_workflow.discarded,
        last_run_at = (select max(created_at) from runs where runs.workflow_id = workflows.id and runs.id not in (select id from discarded))
      from per_workflow where workflows.id = per_workflow.workflow_id
    )
    select count(*)::int as discarded from discarded
  `)
  return runs.length - (row?.discarded ?? 0)
}
