import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import type { Logger } from '../logger.ts'
import { periodicPass } from '../periodic.ts'

/** Runs indexed by one statement, and statements by one pass at most (the rest wait for the next pass). */
const INDEX_BATCH = 2000
const INDEX_MAX_BATCHES = 50
const INDEX_INTERVAL_MS = 1000

/**
 * Indexes into run_search the runs started since the last call (README, Finding runs), in the order of
 * `runs_created_idx`, at most INDEX_BATCH, and moves run_search_progress past them; returns how many.
 * Only runs created more than `lagMs` ago: a run's `created_at` is its inserting transaction's start, so a
 * run committed later than that could be passed over; twice REQUEST_DEADLINE_MS covers every start's
 * transaction (a start answers within the deadline or is rolled back). One worker at a time: the others
 * find the lock taken and do nothing.
 */
export async function indexNewRuns (db: DbOrTx, lagMs: number): Promise<number> {
  return await db.transaction(async (tx) => {
    const [lock] = await tx.execute<{ locked: boolean }>(sql`select pg_try_advisory_xact_lock(hashtextextended('run-search-index', 0)) as locked`)
    if (lock?.locked !== true) return 0
    const [row] = await tx.execute<{ count: number }>(sql`
      with next as (
        select r.id, r.user_id, r.workflow_id, r.created_at, r.tags, r.trigger_data, r.error
        from runs r, run_search_progress p
        where p.id = 1 and (r.created_at, r.id) > (p.indexed_until, p.last_run_id)
          and r.created_at < now() - make_interval(secs => ${lagMs / 1000})
        order by r.created_at, r.id
        limit ${INDEX_BATCH}
      ), indexed as (
        insert into run_search (run_id, user_id, workflow_id, created_at, tags, terms)
        select id, user_id, workflow_id, created_at, tags, run_search_terms(id, trigger_data, error) from next
        on conflict (run_id) do nothing
      ), last as (
        select created_at, id from next order by created_at desc, id desc limit 1
      ), moved as (
        update run_search_progress p set indexed_until = last.created_at, last_run_id = last.id from last where p.id = 1
      )
      select count(*)::int as count from next`)
    return row?.count ?? 0
  })
}

/** The worker's indexing of new runs, every second, as many batches as there are behind (at most INDEX_MAX_BATCHES a pass). */
export function createRunIndexing ({ db, logger, lagMs }: { db: DbOrTx, logger: Logger, lagMs: number }) {
  async function index (): Promise<number> {
    let total = 0
    for (let batch = 0; batch < INDEX_MAX_BATCHES; batch++) {
      const indexed = await indexNewRuns(db, lagMs)
      total += indexed
      if (indexed < INDEX_BATCH) break
    }
    return total
  }
  const loop = periodicPass(index, { intervalMs: INDEX_INTERVAL_MS, firstDelayMs: INDEX_INTERVAL_MS, logger, failureMessage: 'run search indexing failed' })
  return { start: loop.start, stop: loop.stop }
}
