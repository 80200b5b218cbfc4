import { testEnv } from '@switchboard/testing/config'
import { freePort } from '@switchboard/testing/processes'
import { createBareTable } from '../bare/table.ts'
import type { LoadResult } from '../lib/load.ts'
import { measurePipeline, measureWebhookPipeline } from '../lib/pipeline.ts'
import { launch } from '../lib/processes.ts'
import type { Costs } from '../lib/costs.ts'
import { failureNote, metric, type ScenarioResult } from '../lib/report.ts'
import type { RunSource, RunsMeasure } from '../lib/runs.ts'
import { isolatedStores, startStack, type BenchContext } from '../lib/stack.ts'
import { oneSetNode } from '../lib/workflows.ts'

/** The bare durable pipeline (bench/bare): its api and worker processes on stores of their own, measured like Switchboard. */
async function barePipeline (ctx: BenchContext): Promise<{ load: LoadResult, runs: RunsMeasure, costs: Costs }> {
  const { databaseUrl, queuePrefix, sql } = await isolatedStores(ctx)
  await createBareTable(sql)
  const [port, workerPort] = [await freePort(), await freePort()]
  const env = { ...testEnv(databaseUrl, queuePrefix), PORT: String(port), WORKER_HTTP_PORT: String(workerPort), HOST: '127.0.0.1' }
  const baseUrl = `http://127.0.0.1:${port}`
  const api = await launch({ name: 'A-bare-api', entry: 'bench/bare/api.ts', env, readyUrl: baseUrl, logDir: ctx.logDir, mode: 'sources' })
  ctx.teardown(api.stop)
  const worker = await launch({ name: 'A-bare-worker', entry: 'bench/bare/worker.ts', env, readyUrl: `http://127.0.0.1:${workerPort}`, logDir: ctx.logDir, mode: 'sources' })
  ctx.teardown(worker.stop)
  const source: RunSource = { table: 'bare_runs' }
  const result = await measurePipeline({
    ctx,
    sql,
    baseUrl,
    warmPath: '/runs',
    measuredPath: '/runs',
    warm: source,
    measured: source,
    betweenPhases: async () => { await sql`truncate bare_runs` },
    processes: [api, worker]
  })
  await Promise.all([api.stop(), worker.stop()])
  return result
}

export async function webhookToSuccess (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const stack = await startStack(ctx, 'A')
  const ours = await measureWebhookPipeline(ctx, stack, 'A', oneSetNode())
  // Out of the way of the bare pipeline, which is measured next on the same machine.
  await Promise.all([stack.api.stop(), stack.worker?.stop()])
  const bare = await barePipeline(ctx)
  return {
    id: 'A',
    title: 'inbound webhook → set → SUCCESS',
    metrics: [
      metric('completed runs/s', ours.runs.runsPerSecond, 'runs/s'),
      metric('request → SUCCESS p50', ours.runs.p50Ms, 'ms'),
      metric('request → SUCCESS p99', ours.runs.p99Ms, 'ms'),
      metric('webhook answers/s', ours.load.requestsPerSecond, 'req/s'),
      metric('bare durable pipeline', bare.runs.runsPerSecond, 'runs/s'),
      metric('bare request → done p50', bare.runs.p50Ms, 'ms'),
      metric('bare request → done p99', bare.runs.p99Ms, 'ms'),
      metric('ratio to the bare pipeline', ours.runs.runsPerSecond / bare.runs.runsPerSecond, '×', { op: '>=', value: 1 }),
      ...ours.costs.metrics,
      ...bare.costs.metrics.map((cost) => ({ ...cost, name: `bare: ${cost.name.replace('A-bare-', '')}` }))
    ],
    notes: [
      `WAL records per run: ${ours.costs.walKinds}; the bare pipeline's: ${bare.costs.walKinds}`,
      ...failureNote('webhook load', ours.load),
      ...failureNote('bare pipeline load', bare.load),
      ...(ours.runs.unfinished + ours.runs.notSuccess > 0 ? [`${ours.runs.unfinished} runs unfinished, ${ours.runs.notSuccess} not SUCCESS`] : []),
      ...(bare.runs.unfinished > 0 ? [`bare pipeline: ${bare.runs.unfinished} runs unfinished`] : [])
    ]
  }
}
