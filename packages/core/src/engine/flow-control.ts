import { sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import type { RunFlowControl } from '../db/schema/runs.ts'
import type { FlowControl } from '../db/schema/workflows.ts'
import { runJobId, type QueueName, type Queues } from '../queues/catalog.ts'
import { isoNow } from '../runs/flow-control.ts'
import { wakeJob } from './slots.ts'

/**
 * Per-key flow control of a run's start (README, Flow control), checked when a job first claims a
 * PENDING run, in the claim's transaction, in this order:
 * - debounce: the run starts once its `run_debounces` row is due (each start of its key moved it
 *   on, runs/start.ts); the row is deleted by the start, so a later start of the key makes a new run.
 * - rate limit: the run reserves its start in its key's schedule (`flow_rates`, GCRA: a burst of
 *   `limit`, then one every periodSeconds/limit); the reservation is kept on the run (`startAt`). Its
 *   start, after the other checks, is counted in a second schedule, of the starts made, which holds
 *   it a little longer when a start before it came late (its job was taken after its time).
 * - concurrency: under a transaction-scoped advisory lock of the key, the run takes a slot when the
 *   runs holding one (RUNNING or WAITING: a run at a wait keeps its slot) plus the runs waiting
 *   ahead of it (by place: creation time and priority) are fewer than the limit. Every run of the
 *   key has its row from its start (`run_keys`), so runs whose jobs reach the workers out of order
 *   still start in order.
 * A run held waits PENDING, its job delayed (the engine's `hold`) until its time or a wake, and
 * shows what holds it (`runs.flow_control.waitingFor`). The settings read are the workflow's current
 * ones: a limit removed or raised lets its waiting runs go at their next claim.
 */

/** Runs woken per call at most. */
const WAKE_BATCH = 1000

export type FlowHold = { until?: number, waitingFor: NonNullable<RunFlowControl['waitingFor']>, workflowId: string, key: string }

/**
 * In a claim statement: a start whose flow control the gate must check first (`previous`: the run's
 * `flow_control` and its workflow's `workflow_flow`); false, never null, when either is null.
 */
export const flowGated = sql`coalesce(previous.kind = 'start' and (
  previous.flow_control ? 'debounceKey'
  or (previous.flow_control ? 'rateKey' and previous.workflow_flow ? 'rateLimit')
  or (previous.flow_control ? 'concurrencyKey' and previous.workflow_flow ? 'concurrency')), false)`

/** The flow control a claim sets when it starts the run: nothing waits any more. */
export const flowStarted = sql`case when runs.flow_control is null then null
  else runs.flow_control || '{"waitingFor": null, "since": null}'::jsonb end`

/** Records on the run what holds it, keeping `since` while it is the same thing. */
async function markWaiting (tx: DbOrTx, runId: string, waitingFor: FlowHold['waitingFor'], extra = sql`'{}'::jsonb`): Promise<void> {
  await tx.execute(sql`
    update runs set flow_control = flow_control || ${extra} || jsonb_build_object('waitingFor', ${waitingFor}::text,
      'since', case when flow_control->>'waitingFor' = ${waitingFor}::text then flow_control->'since' else ${isoNow} end)
    where id = ${runId}
  `)
}

const lockKey = async (tx: DbOrTx, workflowId: string, key: string): Promise<void> => {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`run-keys:${workflowId}:${key}`}, 0))`)
}

/** A holding row counts while its run is RUNNING or WAITING; a waiting row while its run is PENDING. */
const holdingRun = sql`r.id = k.run_id and k.state = 'holding' and r.status in ('RUNNING', 'WAITING')`
const waitingRun = sql`r.id = k.run_id and k.state = 'waiting' and r.status = 'PENDING'`

/** The run's debounce: undefined once it is due (its row deleted here), else the hold until it is. */
async function debounceGate (tx: DbOrTx, runId: string, workflowId: string, key: string): Promise<FlowHold | undefined> {
  // Waits for a start of the key that is moving the time on, and reads what it wrote.
  const [due] = await tx.execute<{ deleted: boolean }>(sql`
    with deleted as (delete from run_debounces where run_id = ${runId} and due_at <= now() returning 1)
    select exists (select 1 from deleted) as deleted
  `)
  if (due?.deleted === true) return undefined
  const [row] = await tx.execute<{ dueAt: string }>(sql`select due_at::text as "dueAt" from run_debounces where run_id = ${runId}`)
  if (row === undefined) return undefined
  return { until: new Date(row.dueAt).getTime(), waitingFor: 'debounce', workflowId, key }
}

/** The run's start in its rate limit's schedule: reserved once, kept on the run; a hold while it is ahead. */
async function rateGate (tx: DbOrTx, runId: string, workflowId: string, key: string, flow: RunFlowControl, limit: NonNullable<FlowControl['rateLimit']>): Promise<FlowHold | undefined> {
  let startAt = flow.startAt === undefined ? undefined : new Date(flow.startAt).getTime()
  if (startAt === undefined) {
    const periodMs = limit.periodSeconds * 1000
    const [reserved] = await tx.execute<{ startAt: string, now: string }>(sql`
      with scheduled as (
        insert into flow_rates (workflow_id, key, next_at)
        values (${workflowId}, ${key}, now() + ${periodMs / limit.limit} * interval '1 ms')
        on conflict (workflow_id, key) do update
          set next_at = greatest(flow_rates.next_at, now()) + ${periodMs / limit.limit} * interval '1 ms'
        returning next_at
      )
      select greatest(now(), next_at - ${periodMs} * interval '1 ms')::text as "startAt", now()::text as now from scheduled
    `)
    startAt = new Date(reserved!.startAt).getTime()
    if (startAt <= new Date(reserved!.now).getTime()) return undefined
    await markWaiting(tx, runId, 'rateLimit', sql`jsonb_build_object('startAt', ${new Date(startAt).toISOString()}::text)`)
    return { until: startAt, waitingFor: 'rateLimit', workflowId, key }
  }
  if (startAt <= Date.now()) return undefined
  return { until: startAt, waitingFor: 'rateLimit', workflowId, key }
}

/**
 * The start itself, once its reservation came and its other checks passed: counted in the key's
 * schedule of starts made (GCRA again, on `started_next_at`), or, when the starts made are ahead (a
 * start before it came late), held until the schedule allows it.
 */
async function rateStart (tx: DbOrTx, runId: string, workflowId: string, key: string, limit: NonNullable<FlowControl['rateLimit']>): Promise<FlowHold | undefined> {
  const periodMs = limit.periodSeconds * 1000
  const emission = sql`${periodMs / limit.limit} * interval '1 ms'`
  const tolerance = sql`${periodMs - periodMs / limit.limit} * interval '1 ms'`
  const [row] = await tx.execute<{ started: boolean, next: string | null }>(sql`
    with started as (
      update flow_rates set started_next_at = greatest(coalesce(started_next_at, now()), now()) + ${emission}
      where workflow_id = ${workflowId} and key = ${key} and coalesce(started_next_at - ${tolerance} <= now(), true)
      returning 1
    )
    select exists (select 1 from started) as started,
      (select (started_next_at - ${tolerance})::text from flow_rates where workflow_id = ${workflowId} and key = ${key}) as next
  `)
  if (row?.started === true || row?.next === null || row?.next === undefined) return undefined
  await markWaiting(tx, runId, 'rateLimit')
  return { until: new Date(row.next).getTime(), waitingFor: 'rateLimit', workflowId, key }
}

/**
 * The CTE `gate` (after `mine`, the run's place): whether the runs holding a slot of the key plus
 * the runs waiting ahead of the run are fewer than `limit`; at most `limit` of either are counted.
 */
const keyGate = (runId: string, workflowId: string, key: string, limit: number): SQL => sql`gate as (
  select (
    (select count(*) from (
      select 1 from run_keys k join runs r on ${holdingRun} where k.workflow_id = ${workflowId} and k.key = ${key} and k.run_id <> ${runId} limit ${limit}
    ) as holding)
    + (select count(*) from (
      select 1 from run_keys k join runs r on ${waitingRun}
      where k.workflow_id = ${workflowId} and k.key = ${key} and (k.place, k.run_id) < ((select place from mine), ${runId})
      limit ${limit}
    ) as ahead)
  ) < ${limit} as admitted
)`

/**
 * Whether the run takes a slot of its key now (its row says `holding`), or waits (`waiting`). The
 * gate is read first without the key's lock: a run it refuses waits at once, so the runs of a burst
 * are checked side by side, and only one it admits takes the lock and is checked again under it. A
 * refusal read a moment before a slot freed is put right by the hold's wake (holds.ts).
 */
async function concurrencyGate (tx: DbOrTx, runId: string, workflowId: string, key: string, limit: number, flow: RunFlowControl): Promise<FlowHold | undefined> {
  const mine = sql`mine as (select place from run_keys where run_id = ${runId})`
  const gate = keyGate(runId, workflowId, key, limit)
  const [read] = await tx.execute<{ admitted: boolean }>(sql`with ${mine}, ${gate} select admitted from gate`)
  if (read?.admitted === true) {
    await lockKey(tx, workflowId, key)
    const [row] = await tx.execute<{ admitted: boolean }>(sql`
      with cleaned as (
        delete from run_keys k using runs r
        where k.workflow_id = ${workflowId} and k.key = ${key} and k.state = 'holding' and k.run_id <> ${runId}
          and r.id = k.run_id and r.status not in ('RUNNING', 'WAITING')
      ), ${mine}, ${gate}, taken as (
        update run_keys set state = case when (select admitted from gate) then 'holding' else 'waiting' end where run_id = ${runId}
      )
      select admitted from gate
    `)
    if (row?.admitted === true) return undefined
  }
  if (flow.waitingFor !== 'concurrency') await markWaiting(tx, runId, 'concurrency')
  return { waitingFor: 'concurrency', workflowId, key }
}

/**
 * The gate of a start (see above), in the claim's transaction `tx`: undefined when the run may start
 * now, else what holds it. `workflowFlow`: the workflow's current flowControl.
 */
export async function flowGate (tx: DbOrTx, run: { id: string, workflowId: string, flow: RunFlowControl }, workflowFlow: FlowControl | null): Promise<FlowHold | undefined> {
  const { id, workflowId, flow } = run
  if (flow.debounceKey !== undefined) {
    const held = await debounceGate(tx, id, workflowId, flow.debounceKey)
    if (held !== undefined) return held
  }
  const rateLimit = flow.rateKey === undefined ? undefined : workflowFlow?.rateLimit
  if (flow.rateKey !== undefined && rateLimit !== undefined) {
    const held = await rateGate(tx, id, workflowId, flow.rateKey, flow, rateLimit)
    if (held !== undefined) return held
  }
  const keyed = flow.concurrencyKey !== undefined && workflowFlow?.concurrency !== undefined
  if (keyed) {
    const held = await concurrencyGate(tx, id, workflowId, flow.concurrencyKey!, workflowFlow.concurrency!.limit, flow)
    if (held !== undefined) return held
  }
  if (flow.rateKey === undefined || rateLimit === undefined) return undefined
  const held = await rateStart(tx, id, workflowId, flow.rateKey, rateLimit)
  // Not started after all: the slot its key gave it goes back, and it waits in the line where it was.
  if (held !== undefined && keyed) await tx.execute(sql`update run_keys set state = 'waiting' where run_id = ${id}`)
  return held
}

type WaitingRun = { runId: string, queue: QueueName }

/** Makes the start jobs of `runs` run now (slots.ts, `wakeJob`); how many it woke. */
async function wakeStarts (queues: Queues, runs: readonly WaitingRun[]): Promise<number> {
  let woken = 0
  for (const run of runs) {
    if (await wakeJob(queues[run.queue], runJobId(run.runId), run.runId)) woken++
  }
  return woken
}

/**
 * Wakes the first runs waiting for a slot of the key, as many as slots are free (up to WAKE_BATCH
 * when the workflow has no concurrency limit any more). Called when a run holding a slot ends, right
 * after a run is held (a slot that freed meanwhile is not lost), and by the reconciler. How many it woke.
 */
export async function wakeKeyLine (deps: { db: DbOrTx, queues: Queues }, workflowId: string, key: string): Promise<number> {
  const waiting = await deps.db.execute<WaitingRun>(firstInLine(sql`${workflowId}::text`, sql`${key}::text`))
  return await wakeStarts(deps.queues, waiting)
}

/**
 * The runs `wakeKeyLine` wakes: the first waiting in the key's line, as many as its slots free
 * (a limit is at most WAKE_BATCH), WAKE_BATCH when the workflow has no concurrency limit or is gone.
 */
const firstInLine = (workflowId: SQL, key: SQL): SQL => sql`
  select k.run_id as "runId", r.queue from run_keys k join runs r on ${waitingRun}
  where k.workflow_id = ${workflowId} and k.key = ${key}
  order by k.place, k.run_id
  limit coalesce((
    select greatest(0, coalesce((w.flow_control->'concurrency'->>'limit')::int - (
      select count(*) from run_keys k join runs r on ${holdingRun} where k.workflow_id = w.id and k.key = ${key}
    ), ${WAKE_BATCH}))
    from workflows w where w.id = ${workflowId}
  ), ${WAKE_BATCH})`

/**
 * A run that held a slot of its key ended (its end committed, so its own row no longer counts as
 * holding): its row goes, and the next runs of the key are woken, read in the same statement.
 */
export async function releaseKey (deps: { db: DbOrTx, queues: Queues }, runId: string): Promise<void> {
  const waiting = await deps.db.execute<WaitingRun>(sql`
    with released as (delete from run_keys where run_id = ${runId} returning workflow_id, key)
    ${firstInLine(sql`(select workflow_id from released)`, sql`(select key from released)`)}
  `)
  await wakeStarts(deps.queues, waiting)
}

/**
 * After a change of the workflow's flowControl: its runs held by it are woken to be gated again
 * under the new settings (a limit removed lets them go), at most WAKE_BATCH of them; the reconciler
 * wakes the lines' next runs as slots free. How many it woke.
 */
export async function wakeFlowHeldRuns (deps: { db: DbOrTx, queues: Queues }, workflowId: string): Promise<number> {
  const held = await deps.db.execute<WaitingRun>(sql`
    select id as "runId", queue from runs
    where workflow_id = ${workflowId} and status = 'PENDING' and flow_control->>'waitingFor' in ('concurrency', 'rateLimit')
    order by created_at, id limit ${WAKE_BATCH}
  `)
  return await wakeStarts(deps.queues, held)
}

/** Keys with runs waiting, in (workflow, key) order after `after`, for the reconciler's pass (at most `limit`). */
export async function keysWithWaitingRuns (db: DbOrTx, limit: number, after?: { workflowId: string, key: string }): Promise<Array<{ workflowId: string, key: string }>> {
  return await db.execute<{ workflowId: string, key: string }>(sql`
    select distinct k.workflow_id as "workflowId", k.key from run_keys k join runs r on ${waitingRun}
    ${after === undefined ? sql`` : sql`where (k.workflow_id, k.key) > (${after.workflowId}, ${after.key})`}
    order by 1, 2 limit ${limit}
  `)
}

/** In a query on `runs`: the run waits in a key's line, so the reconciler's pass for lost jobs leaves it to `wakeKeyLine`. */
export const waitsForKey = sql`exists (select 1 from run_keys k where k.run_id = runs.id and k.state = 'waiting')`
