import type { Database } from '@switchboard/core/db'
import { costMeter, type Costs } from './costs.ts'
import { load, type LoadResult } from './load.ts'
import type { BenchProcess } from './processes.ts'
import { measureRuns, nowMs, waitForFinished, type RunSource, type RunsMeasure } from './runs.ts'
import type { BenchContext, Stack } from './stack.ts'
import { createWorkflow, seconds } from './workflows.ts'

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

/**
 * `measurePipeline` over a stack's inbound webhooks: a warm-up workflow and a measured one, both of
 * `nodes`, named `bench <label> warm-up` and `bench <label>`, with the api's and worker's CPU counted.
 */
export async function measureWebhookPipeline (
  ctx: BenchContext,
  stack: Stack,
  label: string,
  nodes: unknown[],
  options: Pick<Parameters<typeof measurePipeline>[0], 'headers' | 'phaseSeconds'> = {}
): Promise<Awaited<ReturnType<typeof measurePipeline>>> {
  const warmId = await createWorkflow(stack, `bench ${label} warm-up`, 'WEBHOOK', nodes)
  const measuredId = await createWorkflow(stack, `bench ${label}`, 'WEBHOOK', nodes)
  return await measurePipeline({
    ctx,
    sql: stack.sql,
    baseUrl: stack.baseUrl,
    warmPath: `/api/automation/webhook/${warmId}`,
    measuredPath: `/api/automation/webhook/${measuredId}`,
    warm: { table: 'runs', workflowId: warmId },
    measured: { table: 'runs', workflowId: measuredId },
    ...options,
    processes: [stack.api, stack.worker!]
  })
}
