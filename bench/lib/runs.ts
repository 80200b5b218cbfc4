import type { Database } from '@switchboard/core/db'

type Sql = Database['sql']

/**
 * Where finished runs are read from: rows with `sent` (the load generator's send time, ms since
 * the epoch, carried in the request body), `done` (completion time, same unit) and `ok`.
 */
export type RunSource = { table: 'runs', workflowId: string } | { table: 'bare_runs' }

function rowsOf (source: RunSource): { text: string, params: string[] } {
  if (source.table === 'bare_runs') {
    return { text: "select (payload->>'sentAt')::float8 as sent, (extract(epoch from completed_at) * 1000)::float8 as done, status = 'SUCCESS' as ok from bare_runs", params: [] }
  }
  return {
    text: `select (trigger_data->'body'->>'sentAt')::float8 as sent, (extract(epoch from completed_at) * 1000)::float8 as done, status = 'SUCCESS' as ok
      from runs where workflow_id = $1`,
    params: [source.workflowId]
  }
}

export interface RunsMeasure {
  runs: number
  /** Runs that ended otherwise than SUCCESS. */
  notSuccess: number
  /** Runs not finished when the wait ran out. */
  unfinished: number
  /** Runs finished per second, from the first request sent to the last run finished. */
  runsPerSecond: number
  /** From the request's send time to the run's completion. */
  p50Ms: number
  p99Ms: number
}

/** How long the wait goes on with no run finishing before it gives up (a worker that died, a queue nobody consumes). */
const STALLED_MS = 30_000

/**
 * Waits until at least `expected` runs of `source` exist and every one of them has finished, or
 * `timeoutMs` passed, or none finished for STALLED_MS. Requests still in flight when the load
 * generator stopped may add runs it did not count, hence "every one".
 */
export async function waitForFinished (sql: Sql, source: RunSource, expected: number, timeoutMs: number): Promise<void> {
  const { text, params } = rowsOf(source)
  const deadline = Date.now() + timeoutMs
  let progress = { finished: -1, at: Date.now() }
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 250))
    const [{ runs, finished }] = await sql.unsafe<Array<{ runs: number, finished: number }>>(`select count(*)::int as runs, count(done)::int as finished from (${text}) r`, params)
    if (runs >= expected && finished === runs) return
    if (finished !== progress.finished) progress = { finished, at: Date.now() }
    if (Date.now() > deadline || Date.now() - progress.at > STALLED_MS) return
  }
}

export async function measureRuns (sql: Sql, source: RunSource): Promise<RunsMeasure> {
  const { text, params } = rowsOf(source)
  const [row] = await sql.unsafe<Array<{ runs: number, not_success: number, unfinished: number, span_ms: number | null, p50: number | null, p99: number | null }>>(`
    select count(*)::int as runs,
      count(*) filter (where not ok and done is not null)::int as not_success,
      count(*) filter (where done is null)::int as unfinished,
      max(done) - min(sent) as span_ms,
      percentile_cont(0.5) within group (order by done - sent) as p50,
      percentile_cont(0.99) within group (order by done - sent) as p99
    from (${text}) r`, params)
  const finished = row!.runs - row!.unfinished
  return {
    runs: row!.runs,
    notSuccess: row!.not_success,
    unfinished: row!.unfinished,
    runsPerSecond: row!.span_ms === null || row!.span_ms <= 0 ? 0 : finished / (row!.span_ms / 1000),
    p50Ms: row!.p50 ?? Number.NaN,
    p99Ms: row!.p99 ?? Number.NaN
  }
}

/** Now, in ms since the epoch with sub-millisecond precision, as the send time of a request. */
export const nowMs = (): number => performance.timeOrigin + performance.now()
