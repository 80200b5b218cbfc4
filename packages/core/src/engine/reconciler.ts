import type { Queue } from 'bullmq'
import { sql } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import type { Logger } from '../logger.ts'
import { reconcilerActions } from '../observability/metrics.ts'
import { resumeJobId, RUN_JOB, runJobId, takeoverJobId, type QueueName, type Queues, type RunJobData } from '../queues/catalog.ts'
import { ensureJob, ensureJobs, LIVE_JOB_STATES } from '../queues/ensure-job.ts'
import { wakeRun } from './children.ts'
import { closeEndedListens } from './event-waits.ts'
import { claimingJobId } from './run-store.ts'
import { IDEMPOTENCY_WINDOW } from '../runs/start.ts'
import { waitsForSlot, wakeWaitingRuns, workflowsWithWaitingRuns } from './slots.ts'
import { keysWithWaitingRuns, waitsForKey, wakeKeyLine } from './flow-control.ts'
import { periodicPass } from '../periodic.ts'

/** After the grace has passed, so that the youngest lost run is surely old enough (the clocks of worker and Postgres differ a little). */
const FOLLOW_UP_MARGIN_MS = 250

interface ReconcilerOptions {
  db: Db
  queues: Queues
  logger: Logger
  /** The engine's failRun: fails runs that cannot be taken over any more (and emits workflow.run.failed). */
  engine: { failRun: (runId: string, error: string) => Promise<boolean> }
  /** RECONCILER_INTERVAL_MS. @defaultValue 10000 */
  intervalMs?: number
  /**
   * RECONCILER_GRACE_MS: a PENDING run this old without a job is re-enqueued (its own enqueue,
   * right after its commit, had that long); a WAITING run whose resume time passed this long
   * ago without a job gets its resume job back.
   * @defaultValue 2000
   */
  graceMs?: number
  /**
   * What else may be left undone, put right on each pass: the cron job schedulers (schedules'
   * `restoreLost`: every one of them after Redis came back), the jobs of stored chat deliveries,
   * and the events of the outbox nobody dispatched (triggers' `lostEventsDispatch`).
   */
  restore?: {
    schedulers: (always: boolean) => Promise<number>
    chatDeliveries: () => Promise<number>
    events: () => Promise<number>
    /** Conversations with assistant turns but no job (the assistant's `requeueStalled`). */
    assistantTurns: () => Promise<number>
    /** Broadcasts still to send without a job (chat's `broadcastRequeue`). */
    broadcasts: () => Promise<number>
    /** Pending subscription deliveries without a job (subscriptions' `deliveryRequeue`). */
    eventDeliveries: () => Promise<number>
    /** Knowledge sources still indexing whose job may be lost (knowledge's `indexingRequeue`). */
    knowledgeSources: () => Promise<number>
  }
  /**
   * RECONCILER_RUNNING_AFTER_MS: RUNNING runs that started this long ago are checked for a live job.
   * @defaultValue 60000
   */
  runningAfterMs?: number
  /**
   * Takeovers of a RUNNING run before it is failed; the engine's limit.
   * @defaultValue 3
   */
  maxAttempts?: number
  /** Runs (and workflows) looked at per statement. @defaultValue 500 */
  batchSize?: number
  /**
   * Pages of PENDING runs a pass sweeps at most (all of them after Redis came back).
   * @defaultValue 20
   */
  pendingPagesPerPass?: number
  /**
   * Expired idempotency keys deleted per statement.
   * @defaultValue 10000
   */
  keyBatchSize?: number
}

interface ReconcileReport {
  requeued: number
  resumed: number
  /** Runs waiting for a slot of their workflow that were woken because one was free. */
  woken: number
  takenOver: number
  failed: number
  /** Workflows whose schedule was reconciled because Redis had lost schedulers (or had just come back). */
  schedulersRestored: number
  chatDeliveriesRequeued: number
  eventsDispatched: number
  assistantTurnsRequeued: number
  broadcastsRequeued: number
  eventDeliveriesRequeued: number
  knowledgeSourcesRequeued: number
  purgedKeys: number
  /** Event waits and cancelOn rules of runs that ended, closed (event-waits.ts). */
  closedListens: number
}

/**
 * Nothing accepted is lost (README, Guarantees): Postgres is the record, and this
 * puts Redis right when the two disagree. Every action is idempotent (job ids
 * derive from the run, status changes are guarded), so each worker process
 * runs one without coordination.
 */
export function createReconciler (options: ReconcilerOptions) {
  const { db, queues, logger } = options
  const intervalMs = options.intervalMs ?? 10_000
  const graceMs = options.graceMs ?? 2000
  const grace = sql`${`${graceMs} milliseconds`}::interval`
  const runningAfter = sql`${`${options.runningAfterMs ?? 60_000} milliseconds`}::interval`
  const maxAttempts = options.maxAttempts ?? 3
  const batchSize = options.batchSize ?? 500
  const pendingPagesPerPass = options.pendingPagesPerPass ?? 20
  const keyBatchSize = options.keyBatchSize ?? 10_000

  /** Makes sure the run job `jobId` will run (added, retried or replaced). */
  async function ensureRunJob (queue: Queue, jobId: string, runId: string): Promise<boolean> {
    const data: RunJobData = { runId }
    return await ensureJob(queue, RUN_JOB, data, jobId)
  }

  /** Where the sweep of PENDING runs goes on at its next pass (created_at, id of the last run looked at). */
  let pendingCursor: { createdAt: string, id: string } | undefined
  /** Set when Redis came back: the next pass sweeps every PENDING run, not `pendingPagesPerPass` pages. */
  let sweepAllPending = false

  /**
   * PENDING runs older than the grace without a job get one: runs stored while Redis did not
   * take their jobs (a run is accepted once committed) and jobs Redis lost. The sweep goes
   * through them oldest first, `batchSize` a page, and goes on where it stopped at the next
   * pass (then starts over), so that a backlog of queued runs cannot hide a lost one; after
   * Redis came back, one pass sweeps them all.
   */
  async function requeuePending (): Promise<number> {
    const pages = sweepAllPending ? Infinity : pendingPagesPerPass
    sweepAllPending = false
    let count = 0
    for (let page = 0; page < pages; page++) {
      const after = pendingCursor === undefined ? sql`` : sql`and (runs.created_at, runs.id) > (${pendingCursor.createdAt}::timestamptz, ${pendingCursor.id})`
      const rows = await db.execute<{ id: string, queue: QueueName, createdAt: string }>(sql`
        select runs.id, runs.queue, runs.created_at::text as "createdAt" from runs
        where runs.status = 'PENDING' and runs.created_at < now() - ${grace} ${after} and not ${waitsForSlot} and not ${waitsForKey}
        order by runs.created_at, runs.id limit ${batchSize}
      `)
      const last = rows.at(-1)
      pendingCursor = last === undefined || rows.length < batchSize ? undefined : { createdAt: last.createdAt, id: last.id }
      for (const name of new Set(rows.map((run) => run.queue))) {
        const jobs = rows.filter((run) => run.queue === name).map(({ id }) => ({ jobId: runJobId(id), data: { runId: id } satisfies RunJobData }))
        const requeued = await ensureJobs(queues[name], RUN_JOB, jobs)
        if (requeued > 0) logger.warn({ queue: name, requeued, looked: jobs.length }, 'PENDING runs without a job: queued')
        count += requeued
      }
      if (pendingCursor === undefined) break
    }
    return count
  }

  async function resumeWaiting (): Promise<number> {
    const rows = await db.execute<{ id: string, nodeId: string | null, queue: QueueName, decided: boolean }>(sql`
      select runs.id, runs.current_node_id as "nodeId", runs.queue, decided.decided is not null as decided
      from runs
      cross join lateral (select runs.result->runs.current_node_id->>'until' as until) as wait
      -- An approval decided, an ask answered, ended or taken over, or an event wait that took its event, whose wake was lost (Redis away,
      -- a worker killed right after): resumed now, not at its timeout.
      left join lateral (
        select true as decided from run_waits
        where run_waits.run_id = runs.id and run_waits.node_id = runs.current_node_id and run_waits.decided_at < now() - ${grace}
        union all
        select true from chat_asks
        where chat_asks.run_id = runs.id and chat_asks.node_id = runs.current_node_id
          and chat_asks.status in ('answered', 'exited', 'superseded') and chat_asks.updated_at < now() - ${grace}
        union all
        select true from event_listens
        where event_listens.run_id = runs.id and event_listens.listener = runs.current_node_id
          and event_listens.event is not null and (event_listens.event->>'receivedAt')::timestamptz < now() - ${grace}
        limit 1
      ) as decided on true
      where runs.status = 'WAITING' and not ${waitsForSlot}
        and (decided.decided or case when wait.until ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' then wait.until::timestamptz < now() - ${grace}
          else runs.created_at < now() - ${grace} end)
      order by runs.created_at limit ${batchSize}
    `)
    let count = 0
    for (const run of rows) {
      if (run.decided) {
        await wakeRun(queues, run.queue, run.id)
        logger.warn({ runId: run.id }, 'WAITING run decided long ago: woken')
        count++
        continue
      }
      if (await ensureRunJob(queues[run.queue], resumeJobId(run.id, run.nodeId ?? ''), run.id)) {
        logger.warn({ runId: run.id }, 'WAITING run past its time had no resume job: re-enqueued')
        count++
      }
    }
    return count
  }

  /** The workflow, and the concurrency key (flow-control.ts), the wake pass goes on after at its next pass. */
  let wakeCursor: string | undefined
  let keyCursor: { workflowId: string, key: string } | undefined

  /**
   * Runs waiting for a slot of their workflow (slots.ts) or of their concurrency key (flow-control.ts) whose wake was lost (a Redis error, a
   * worker that died right after a run ended, a run failed here, a cancel) get it now when a slot
   * is free; their jobs, if Redis lost them, are added again when their turn comes. The
   * workflows are taken in id order, `batchSize` a pass, each pass going on after the last.
   */
  async function wakeWaiting (): Promise<number> {
    let woken = 0
    const workflowIds = await workflowsWithWaitingRuns(db, batchSize, wakeCursor)
    wakeCursor = workflowIds.length < batchSize ? undefined : workflowIds.at(-1)
    for (const workflowId of workflowIds) woken += await wakeWaitingRuns({ db, queues }, workflowId)
    const keys = await keysWithWaitingRuns(db, batchSize, keyCursor)
    keyCursor = keys.length < batchSize ? undefined : keys.at(-1)
    for (const { workflowId, key } of keys) woken += await wakeKeyLine({ db, queues }, workflowId, key)
    if (woken > 0) logger.warn({ woken }, 'runs waiting for a slot that was free: woken')
    return woken
  }

  /**
   * A RUNNING run is alive while one of the jobs that can drive it is live:
   * the job that claimed it (a wake after an answer, an approval or a child's
   * end has an id of BullMQ's own), its first job, the resume job of one of its
   * wait nodes, or a takeover job. BullMQ itself returns a job whose worker died
   * (stalled) to the queue; this catches runs whose job is gone for good or
   * failed after too many stalls.
   */
  async function takeOverRunning (): Promise<{ takenOver: number, failed: number }> {
    const rows = await db.execute<{ id: string, attempt: number, queue: QueueName, claimOwner: string | null, waitNodeIds: string[] | null }>(sql`
      select runs.id, runs.attempt, runs.queue, runs.claim_owner as "claimOwner",
        (select array_agg(node->>'id') from jsonb_array_elements(coalesce(versions.nodes, workflows.nodes)) as node where node->>'type' = 'wait') as "waitNodeIds"
      from runs join workflows on workflows.id = runs.workflow_id
      -- The wait nodes of the definition the run executes (run-store.ts, claim).
      left join workflow_versions versions on versions.workflow_id = runs.workflow_id and versions.version = runs.workflow_version
      where runs.status = 'RUNNING' and coalesce(runs.started_at, runs.created_at) < now() - ${runningAfter}
      order by runs.created_at limit ${batchSize}
    `)
    let takenOver = 0
    let failed = 0
    for (const run of rows) {
      const queue = queues[run.queue]
      const claiming = claimingJobId(run.claimOwner)
      const candidates = [
        ...(claiming === undefined ? [] : [claiming]),
        runJobId(run.id),
        ...(run.waitNodeIds ?? []).map((nodeId) => resumeJobId(run.id, nodeId)),
        ...Array.from({ length: run.attempt + 1 }, (_, attempt) => takeoverJobId(run.id, attempt))
      ]
      const states = await Promise.all(candidates.map(async (jobId) => await queue.getJobState(jobId)))
      if (states.some((state) => LIVE_JOB_STATES.has(state))) continue
      if (run.attempt >= maxAttempts) {
        if (await options.engine.failRun(run.id, `Run interrupted: its worker stopped ${run.attempt + 1} times`)) failed++
        continue
      }
      if (await ensureRunJob(queue, takeoverJobId(run.id, run.attempt), run.id)) {
        logger.warn({ runId: run.id, attempt: run.attempt }, 'RUNNING run had no live job: taken over')
        takenOver++
      }
    }
    return { takenOver, failed }
  }

  /**
   * Every run adds an idempotency key (a cron tick each time), and nothing reads one
   * past its window. They are deleted in batches so that no statement holds many row
   * locks for long; a batch that comes back short means nothing expired is left.
   */
  async function purgeIdempotencyKeys (): Promise<number> {
    let purged = 0
    for (;;) {
      const [batch] = await db.execute<{ deleted: number }>(sql`
        with expired as (
          delete from idempotency_keys where ctid in (
            select ctid from idempotency_keys where created_at < now() - ${IDEMPOTENCY_WINDOW} limit ${keyBatchSize}
          ) returning 1
        )
        select count(*)::int as deleted from expired
      `)
      const deleted = batch?.deleted ?? 0
      purged += deleted
      if (deleted < keyBatchSize) return purged
    }
  }

  /** Set when Redis came back: the next pass rebuilds every scheduler, whatever the counts say. */
  let schedulersInDoubt = false

  async function restoreSchedulers (): Promise<number> {
    if (options.restore === undefined) return 0
    const always = schedulersInDoubt
    schedulersInDoubt = false
    try {
      return await options.restore.schedulers(always)
    } catch (err) {
      schedulersInDoubt ||= always
      throw err
    }
  }

  async function reconcile (): Promise<ReconcileReport> {
    const requeued = await requeuePending()
    const resumed = await resumeWaiting()
    const { takenOver, failed } = await takeOverRunning()
    const woken = await wakeWaiting()
    const schedulersRestored = await restoreSchedulers()
    const chatDeliveriesRequeued = await options.restore?.chatDeliveries() ?? 0
    const eventsDispatched = await options.restore?.events() ?? 0
    const assistantTurnsRequeued = await options.restore?.assistantTurns() ?? 0
    const broadcastsRequeued = await options.restore?.broadcasts() ?? 0
    // After the events: the deliveries their dispatch just wrote are queued already.
    const eventDeliveriesRequeued = await options.restore?.eventDeliveries() ?? 0
    const knowledgeSourcesRequeued = await options.restore?.knowledgeSources() ?? 0
    const purgedKeys = await purgeIdempotencyKeys()
    const closedListens = await closeEndedListens(db, keyBatchSize)
    reconcilerActions.inc({ action: 'requeued' }, requeued)
    reconcilerActions.inc({ action: 'resumed' }, resumed)
    reconcilerActions.inc({ action: 'taken_over' }, takenOver)
    reconcilerActions.inc({ action: 'failed' }, failed)
    reconcilerActions.inc({ action: 'woken' }, woken)
    reconcilerActions.inc({ action: 'schedulers_restored' }, schedulersRestored)
    reconcilerActions.inc({ action: 'chat_deliveries_requeued' }, chatDeliveriesRequeued)
    reconcilerActions.inc({ action: 'events_dispatched' }, eventsDispatched)
    reconcilerActions.inc({ action: 'assistant_turns_requeued' }, assistantTurnsRequeued)
    reconcilerActions.inc({ action: 'broadcasts_requeued' }, broadcastsRequeued)
    reconcilerActions.inc({ action: 'event_deliveries_requeued' }, eventDeliveriesRequeued)
    reconcilerActions.inc({ action: 'knowledge_sources_requeued' }, knowledgeSourcesRequeued)
    if (schedulersRestored > 0) logger.info({ schedulersRestored }, 'cron schedulers checked against the database after Redis lost them')
    return { requeued, resumed, woken, takenOver, failed, schedulersRestored, chatDeliveriesRequeued, eventsDispatched, assistantTurnsRequeued, broadcastsRequeued, eventDeliveriesRequeued, knowledgeSourcesRequeued, purgedKeys, closedListens }
  }

  // A pass soon after start (a restarted worker puts things right at once), then every `intervalMs`.
  const loop = periodicPass(reconcile, { intervalMs, firstDelayMs: Math.min(intervalMs, 1000), logger, failureMessage: 'reconciler pass failed' })
  let followUp: NodeJS.Timeout | undefined
  return {
    reconcile,
    start: loop.start,
    async stop (): Promise<void> {
      clearTimeout(followUp)
      await loop.stop()
    },
    /**
     * Redis is available again and may have come back empty: a pass now (schedulers rebuilt,
     * every PENDING run older than the grace swept), and one as soon as the runs accepted in the
     * last moments of the outage are older than the grace too: runs are accepted while Redis is
     * away (README, Guarantees), so nothing they lost waits for the next interval.
     */
    redisReturned (): void {
      schedulersInDoubt = true
      sweepAllPending = true
      loop.runSoon()
      clearTimeout(followUp)
      followUp = setTimeout(() => {
        sweepAllPending = true
        loop.runSoon()
      }, graceMs + FOLLOW_UP_MARGIN_MS)
      followUp.unref()
    }
  }
}
