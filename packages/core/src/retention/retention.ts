import { sql, type SQL } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import type { Logger } from '../logger.ts'
import { retentionDeleted } from '../observability/metrics.ts'
import { periodicPass } from '../periodic.ts'

export interface RetentionOptions {
  db: Db
  logger: Logger
  /** RUN_RETENTION_DAYS. */
  runDays: number
  /** RAW_BODY_RETENTION_HOURS. */
  rawBodyHours: number
  /** RUN_RETENTION_MAX_PER_WORKFLOW; absent: no per-workflow limit. */
  maxRunsPerWorkflow?: number
  /** AUDIT_RETENTION_DAYS; absent or 0: the audit log is kept for ever. */
  auditDays?: number
  /**
   * Rows per statement: each batch is one short transaction (a run's log lines go with it
   * by cascade), so no lock is held for long and the engine's writes never wait behind a pass.
   * @defaultValue 500
   */
  batchSize?: number
  /**
   * Batches per kind and pass at most; what is left waits for the next pass.
   * @defaultValue 200
   */
  maxBatches?: number
  /** @defaultValue 60000 */
  intervalMs?: number
}

export interface RetentionReport {
  /** Finished runs cleared of their raw webhook body. */
  rawBodies: number
  /** Finished runs deleted for their age. */
  expiredRuns: number
  /** Finished runs deleted beyond RUN_RETENTION_MAX_PER_WORKFLOW. */
  excessRuns: number
  /** Dispatched events deleted for their age (RUN_RETENTION_DAYS). */
  expiredEvents: number
  /** Audit log rows deleted for their age (AUDIT_RETENTION_DAYS). */
  expiredAudit: number
  /** Finished subscription deliveries, with their attempts, deleted for their age (RUN_RETENTION_DAYS). */
  expiredDeliveries: number
  /** ai_agent memories no run used for RUN_RETENTION_DAYS. */
  expiredAgentMemories: number
}

/** Only finished runs are touched: an unfinished run (a long wait) still needs its row and its body. */
const FINISHED = sql.raw('(\'SUCCESS\', \'FAILED\', \'CANCELLED\')')

/**
 * Deletes what is due, in batches, from any number of workers at once. Every batch locks the
 * rows it takes with SKIP LOCKED, so two workers never wait for each other nor take the same
 * run, and a row another worker already deleted is simply not found. Workflow counters
 * (runCount, successCount, failureCount) count runs ever made and are left as they are; chat
 * messages and conversations have no link to runs and are never touched.
 */
export function createRetention (options: RetentionOptions) {
  const { db, logger } = options
  const batchSize = options.batchSize ?? 500
  const maxBatches = options.maxBatches ?? 200
  const intervalMs = options.intervalMs ?? 60_000

  /** Runs `statement` (which answers `count`) until a batch comes back short or the pass's share is spent. */
  /**
   * Runs `statement` until a batch comes back short (nothing more is due), or, with `untilEmpty`,
   * empty: a statement that picks its rows before locking them comes back short when another
   * worker holds some of them, with more still due behind them.
   */
  async function inBatches (statement: SQL, { untilEmpty = false } = {}): Promise<number> {
    let total = 0
    for (let batch = 0; batch < maxBatches; batch++) {
      const [row] = await db.execute<{ count: number }>(statement)
      const count = row?.count ?? 0
      total += count
      if (untilEmpty ? count === 0 : count < batchSize) break
    }
    return total
  }

  /** verify_signature reads the raw body while the run is unfinished only; the partial index runs_raw_body_created_idx finds the rest. */
  const clearRawBodies = async (): Promise<number> => await inBatches(sql`
    with due as (
      select id from runs
      where raw_body is not null and created_at < now() - make_interval(hours => ${options.rawBodyHours}) and status in ${FINISHED}
      order by created_at
      limit ${batchSize}
      for update skip locked
    ), cleared as (
      update runs set raw_body = null from due where runs.id = due.id returning 1
    )
    select count(*)::int as count from cleared
  `)

  /** Oldest first along runs_created_idx; log lines and idempotency keys go by cascade (both indexed by run). */
  const deleteExpiredRuns = async (): Promise<number> => await inBatches(sql`
    with due as (
      select id from runs
      where created_at < now() - make_interval(days => ${options.runDays}) and status in ${FINISHED}
      order by created_at
      limit ${batchSize}
      for update skip locked
    ), deleted as (
      delete from runs using due where runs.id = due.id returning 1
    )
    select count(*)::int as count from deleted
  `)

  /**
   * The finished runs of each workflow past its newest `max`, along runs_workflow_created_idx.
   * Only workflows that ever made more than `max` runs (their runCount) are looked at.
   */
  const deleteExcessRuns = async (max: number): Promise<number> => await inBatches(sql`
    with candidates as (
      select beyond.id from workflows
      cross join lateral (
        select id from runs
        where runs.workflow_id = workflows.id and runs.status in ${FINISHED}
        order by created_at desc, id desc
        offset ${max}
        limit ${batchSize}
      ) as beyond
      where workflows.run_count > ${max}
      limit ${batchSize}
    ), due as (
      select id from runs where id in (select id from candidates) for update skip locked
    ), deleted as (
      delete from runs using due where runs.id = due.id returning 1
    )
    select count(*)::int as count from deleted
  `, { untilEmpty: true })

  /** Dispatched events of the outbox (events/outbox.ts) are kept as long as runs, along events_created_idx. */
  const deleteExpiredEvents = async (): Promise<number> => await inBatches(sql`
    with due as (
      select id from events
      where created_at < now() - make_interval(days => ${options.runDays}) and dispatched_at is not null
      order by created_at
      limit ${batchSize}
      for update skip locked
    ), deleted as (
      delete from events using due where events.id = due.id returning 1
    )
    select count(*)::int as count from deleted
  `)

  /** Audit rows (audit/log.ts) past AUDIT_RETENTION_DAYS, oldest first along audit_log_at_idx. */
  const deleteExpiredAudit = async (days: number): Promise<number> => await inBatches(sql`
    with due as (
      select id from audit_log
      where created_at < now() - make_interval(days => ${days})
      order by created_at
      limit ${batchSize}
      for update skip locked
    ), deleted as (
      delete from audit_log using due where audit_log.id = due.id returning 1
    )
    select count(*)::int as count from deleted
  `)

  /**
   * Finished deliveries of event subscriptions (README, Event subscriptions) are kept as long as
   * runs, their attempts going by cascade: each subscription's oldest along
   * event_deliveries_subscription_idx (a user has at most EVENT_SUBSCRIPTIONS_MAX_PER_USER).
   */
  const deleteExpiredDeliveries = async (): Promise<number> => await inBatches(sql`
    with candidates as (
      select old.id from event_subscriptions s
      cross join lateral (
        select id from event_deliveries
        where subscription_id = s.id and created_at < now() - make_interval(days => ${options.runDays}) and status <> 'pending'
        order by created_at
        limit ${batchSize}
      ) as old
      limit ${batchSize}
    ), due as (
      select id from event_deliveries where id in (select id from candidates) for update skip locked
    ), deleted as (
      delete from event_deliveries using due where event_deliveries.id = due.id returning 1
    )
    select count(*)::int as count from deleted
  `)

  /** ai_agent memories (engine/agents.ts) no run used for as long as runs are kept, oldest first along agent_memories_updated_idx. */
  const deleteExpiredAgentMemories = async (): Promise<number> => await inBatches(sql`
    with due as (
      select workflow_id, node_id, key from agent_memories
      where updated_at < now() - make_interval(days => ${options.runDays})
      order by updated_at
      limit ${batchSize}
      for update skip locked
    ), deleted as (
      delete from agent_memories memory using due
      where (memory.workflow_id, memory.node_id, memory.key) = (due.workflow_id, due.node_id, due.key)
      returning 1
    )
    select count(*)::int as count from deleted
  `)

  async function purge (): Promise<RetentionReport> {
    // Deletions first: a body is not cleared from a run about to go.
    const expiredRuns = await deleteExpiredRuns()
    const excessRuns = options.maxRunsPerWorkflow === undefined ? 0 : await deleteExcessRuns(options.maxRunsPerWorkflow)
    const rawBodies = await clearRawBodies()
    const expiredEvents = await deleteExpiredEvents()
    const expiredAudit = options.auditDays === undefined || options.auditDays === 0 ? 0 : await deleteExpiredAudit(options.auditDays)
    const expiredDeliveries = await deleteExpiredDeliveries()
    const expiredAgentMemories = await deleteExpiredAgentMemories()
    const report = { rawBodies, expiredRuns, excessRuns, expiredEvents, expiredAudit, expiredDeliveries, expiredAgentMemories }
    retentionDeleted.inc({ kind: 'expired_runs' }, expiredRuns)
    retentionDeleted.inc({ kind: 'excess_runs' }, excessRuns)
    retentionDeleted.inc({ kind: 'raw_bodies' }, rawBodies)
    retentionDeleted.inc({ kind: 'expired_events' }, expiredEvents)
    retentionDeleted.inc({ kind: 'expired_audit' }, expiredAudit)
    retentionDeleted.inc({ kind: 'expired_deliveries' }, expiredDeliveries)
    retentionDeleted.inc({ kind: 'expired_agent_memories' }, expiredAgentMemories)
    if (rawBodies + expiredRuns + excessRuns + expiredEvents + expiredAudit + expiredDeliveries + expiredAgentMemories > 0) logger.info(report, 'retention pass')
    return report
  }

  // A first pass soon after start, then every `intervalMs`.
  const loop = periodicPass(purge, { intervalMs, firstDelayMs: Math.min(intervalMs, 5000), logger, failureMessage: 'retention pass failed' })
  return { purge, start: loop.start, stop: loop.stop }
}
