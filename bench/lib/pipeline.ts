import type { Database } from '@switchboard/core/db'
import { costMeter, type Costs } from './costs.ts'
import { load, type LoadResult } from './load.ts'
import type { BenchProcess } from './processes.ts'
import { measureRuns, nowMs, waitForFinished, type RunSource, type RunsMeasure } from './runs.ts'
import type { BenchContext } from './stack.ts'
import { seconds } from './workflows.ts'

const DRAIN_TIMEOUT_MS = 180_000

let sequence = 0
/** A webhook body stamped with its send time, read back from the run to time it end to end. */
export const stampedBody = (): string => JSON.stringify({ event: 'order.created', sentAt: nowMs(), data: { id: ++sequence, phone: '16505551234' } })

/**
 * Drives `path` for the warm-up, waits for its runs, then for the measured time, and reads
 * the measured runs back: the warm-up runs are left out by `measured` (a workflow of their own,
 * or a table emptied in between). `costs`: what the measured phase cost per run (costs.ts),
 * from its first request until its last run finished.
 */
export async function measurePipeline (options: {
  ctx: BenchContext
  sql: Database['sql']
  baseUrl: string
  warmPath: string
  measuredPath: string
  warm: RunSource
  measured: RunSource
  headers?: (body: string) => Record<string, string>
  betweenPhases?: () => Promise<void>
  /** Lengths of the warm-up and of the measured phase; default 3 s and 15 s (1 s and 3 s with `--quick`). */
  phaseSeconds?: { warm: number, measured: number }
  /** The processes of the pipeline, whose CPU is counted. */
  processes: BenchProcess[]
}): Promise<{ load: LoadResult, runs: RunsMeasure, costs: Costs }> {
  const { ctx } = options
  const drive = async (path: string, durationSeconds: number): Promise<LoadResult> => load({
    baseUrl: options.baseUrl,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections: ctx.connections,
    durationSeconds,
    request: () => {
      const body = stampedBody()
      return { path, body, ...(options.headers !== undefined && { headers: options.headers(body) }) }
    }
  })
  const phases = options.phaseSeconds ?? { warm: seconds(ctx.quick, 3, 1), measured: seconds(ctx.quick, 15, 3) }
  const warm = await drive(options.warmPath, phases.warm)
  await waitForFinished(options.sql, options.warm, warm.requests, DRAIN_TIMEOUT_MS)
  await options.betweenPhases?.()
  const meter = await costMeter(options.sql, options.processes)
  const measured = await drive(options.measuredPath, phases.measured)
  await waitForFinished(options.sql, options.measured, measured.requests, DRAIN_TIMEOUT_MS)
  const runs = await measureRuns(options.sql, options.measured)
  return { load: measured, runs, costs: await meter.stop(runs.runs - runs.unfinished) }
}
