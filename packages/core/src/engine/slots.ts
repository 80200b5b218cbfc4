import type { Queue } from 'bullmq'
import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { ensureJob, LIVE_JOB_STATES } from '../queues/ensure-job.ts'
import { fairPlaceOf, placeOf } from '../runs/flow-control.ts'
import { resumeJobId, RUN_JOB, runJobId, type QueueName, type Queues, type RunJobData } from '../queues/catalog.ts'

/**
 * Slots of workflows with a `maxConcurrentRuns` (README, Limits per workflow). A run of such a
 * workflow is claimed (started, or resumed after a wait) only through `claimGated` (run-store.ts):
 * under a transaction-scoped advisory lock of the workflow, it is admitted when the runs
 * RUNNING with a slot plus the runs ahead of it (waiting, or PENDING and created in the last
 * ARRIVING_WITHIN, with an earlier place: their creation time, earlier by their priority,
 * runs/flow-control.ts) are fewer than the limit.
 * Admitted, its `run_slots` row says `holding`; refused, `waiting`, and its job is delayed
 * (the engine's `hold`) until a slot frees: the end, wait or stop of a run with a slot wakes
 * the first waiting runs (`wakeWaitingRuns`), and so does the reconciler on every pass for
 * wakes that were lost. A WAITING run (at a wait node) gives its slot back, as in Trigger.dev.
 * Nothing here runs for workflows without a limit.
 */

/** The most runs waiting ahead of one that the gate counts: more than any limit allows. */
const MAX_COUNTED_AHEAD = 1000

/**
 * An older PENDING run whose job has not reached a worker yet (its request is still enqueuing
 * it, or another worker took it a little later) is waited for if it was created this recently:
 * runs fired one after the other start in that order even when their jobs reach the workers out
 * of order. Older ones are not: a job Redis
 * lost is the reconciler's to restore (RECONCILER_GRACE_MS), and the newer runs go on meanwhile.
 */
const ARRIVING_WITHIN = sql.raw('interval \'10 seconds\'')

/** Runs woken per call at most (a workflow whose limit was removed has every waiting run to wake). */
const WAKE_BATCH = 1000

/** Serialises the admissions of one workflow's runs for the transaction that takes it. */
export async function lockSlots (tx: DbOrTx, workflowId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`run-slots:${workflowId}`}, 0))`)
}

/** A holding row counts while its run is RUNNING; a waiting row while its run is PENDING or WAITING under the claim it had. */
const holdingRun = sql`r.id = s.run_id and s.state = 'holding' and r.status = 'RUNNING'`
const waitingRun = sql`r.id = s.run_id and s.state = 'waiting' and r.claim = s.claim and r.status in ('PENDING', 'WAITING')`

/**
 * The CTE `gate` of a claim statement (after its CTE `previous`): `admitted` when the run may take
 * a slot now. Read after `lockSlots`, so no other admission to the workflow is in progress.
 */
export const slotGate = sql`placed as (
  -- Its place: the one it has in the line, else its own (after its priority key's last waiting run).
  select coalesce((select s.run_created_at from run_slots s where s.run_id = previous.id), ${fairPlaceOf(sql`previous`, sql`
    select max(s.run_created_at) from run_slots s
    where s.workflow_id = previous.workflow_id and s.state = 'waiting' and s.fair_key = previous.flow_control->>'priorityKey'`)}) as place
  from previous
), gate as (
  select previous.max_runs is null or (
    (select count(*) from run_slots s join runs r on ${holdingRun} where s.workflow_id = previous.workflow_id)
    + (select count(*) from (
      select 1 from run_slots s join runs r on ${waitingRun}
      where s.workflow_id = previous.workflow_id and (s.run_created_at, s.run_id) < ((select place from placed), previous.id)
      limit ${MAX_COUNTED_AHEAD}
    ) as ahead)
    + (select count(*) from (
      select 1 from runs o
      where o.workflow_id = previous.workflow_id and o.status = 'PENDING'
        and o.created_at > now() - ${ARRIVING_WITHIN} and (${placeOf(sql`o`)}, o.id) < ((select place from placed), previous.id)
        and not exists (select 1 from run_slots s where s.run_id = o.id and s.state = 'waiting' and s.claim = o.claim)
      limit ${MAX_COUNTED_AHEAD}
    ) as arriving)
    < previous.max_runs) as admitted
  from previous
)`

/**
 * The CTEs of a claim statement (after `previous` and `claimed`) that record the run holding
 * or waiting for a slot, and delete the workflow's rows no longer valid.
 */
export const slotWrites = sql`cleaned as (
  delete from run_slots s using runs r, previous
  where s.workflow_id = previous.workflow_id and s.run_id <> previous.id and r.id = s.run_id
    and not ((${holdingRun}) or (${waitingRun}))
), slotted as (
  insert into run_slots (run_id, workflow_id, run_created_at, state, claim, fair_key)
  select previous.id, previous.workflow_id, (select place from placed),
    case when exists (select 1 from claimed) then 'holding' else 'waiting' end, previous.claim, previous.flow_control->>'priorityKey'
  from previous
  where previous.kind in ('start', 'resume') and previous.max_runs is not null
  on conflict (run_id) do update set state = excluded.state, claim = excluded.claim
)`

type WaitingRun = {
  runId: string
  status: 'PENDING' | 'WAITING'
  nodeId: string | null
  queue: QueueName
}

/**
 * Makes job `jobId` of a waiting run run now: a held (delayed) job is promoted, a lost one
 * added again; one already waiting or running is left alone. Whether it did anything. The
 * promotion is tried first, without reading the job's state: a held job is the usual case, and
 * this is on the path from one run's end to the next run's start.
 */
export async function wakeJob (queue: Queue, jobId: string, runId: string): Promise<boolean> {
  const job = await queue.getJob(jobId)
  if (job !== undefined) {
    try {
      await job.promote()
      return true
    } catch (err) {
      // Not delayed: taken or promoted meanwhile, or finished.
      const state = await queue.getJobState(jobId)
      if (state === 'delayed') throw err
      if (LIVE_JOB_STATES.has(state)) return false
    }
  }
  const data: RunJobData = { runId }
  return await ensureJob(queue, RUN_JOB, data, jobId)
}

/**
 * Wakes the oldest runs of the workflow waiting for a slot, as many as slots are free (up to
 * WAKE_BATCH when it has no limit any more). Called when a run with a slot ends or waits, right
 * after a run is held (a slot that freed meanwhile is not lost), after a PATCH of the limit, and
 * by the reconciler. Returns how many jobs it woke.
 */
export async function wakeWaitingRuns (deps: { db: DbOrTx, queues: Queues }, workflowId: string): Promise<number> {
  const waiting = await deps.db.execute<WaitingRun>(sql`
    select s.run_id as "runId", r.status, r.current_node_id as "nodeId", r.queue
    from run_slots s join runs r on ${waitingRun}
    where s.workflow_id = ${workflowId}
    order by s.run_created_at, s.run_id
    limit (
      select greatest(0, coalesce(w.max_concurrent_runs - (
        select count(*) from run_slots s join runs r on ${holdingRun} where s.workflow_id = w.id
      ), ${WAKE_BATCH}))
      from workflows w where w.id = ${workflowId}
    )
  `)
  let woken = 0
  for (const run of waiting.slice(0, WAKE_BATCH)) {
    const jobId = run.status === 'WAITING' ? resumeJobId(run.runId, run.nodeId ?? '') : runJobId(run.runId)
    if (await wakeJob(deps.queues[run.queue], jobId, run.runId)) woken++
  }
  return woken
}

/** Workflows with runs waiting for a slot, in id order after `after`, for the reconciler's pass (at most `limit`). */
export async function workflowsWithWaitingRuns (db: DbOrTx, limit: number, after?: string): Promise<string[]> {
  const rows = await db.execute<{ workflowId: string }>(sql`
    select distinct s.workflow_id as "workflowId" from run_slots s join runs r on ${waitingRun}
    ${after === undefined ? sql`` : sql`where s.workflow_id > ${after}`}
    order by 1 limit ${limit}
  `)
  return rows.map((row) => row.workflowId)
}

/** In a query on `runs`: the run waits for a slot, so the reconciler's passes for lost jobs leave it to `wakeWaitingRuns`. */
export const waitsForSlot = sql`exists (select 1 from run_slots s where s.run_id = runs.id and s.state = 'waiting' and s.claim = runs.claim)`
