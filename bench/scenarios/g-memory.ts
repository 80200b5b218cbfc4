import { load } from '../lib/load.ts'
import { stampedBody } from '../lib/pipeline.ts'
import { failureNote, metric, type ScenarioResult } from '../lib/report.ts'
import { measureRuns, waitForFinished } from '../lib/runs.ts'
import { startStack, type BenchContext } from '../lib/stack.ts'
import { createWorkflow, pureChain } from '../lib/workflows.ts'

const SAMPLE_EVERY_MS = 1000
/** Growth over the second half of the runs that still counts as flat: 10 MB per 100,000 runs is 100 bytes a run. */
const FLAT_MB_PER_100K = 10

interface Sample { finished: number, rssMb: number }

/** Least-squares slope of RSS against runs finished. */
function slope (samples: Sample[]): number {
  const n = samples.length
  if (n < 2) return Number.NaN
  const meanX = samples.reduce((sum, s) => sum + s.finished, 0) / n
  const meanY = samples.reduce((sum, s) => sum + s.rssMb, 0) / n
  let numerator = 0
  let denominator = 0
  for (const s of samples) {
    numerator += (s.finished - meanX) * (s.rssMb - meanY)
    denominator += (s.finished - meanX) ** 2
  }
  return denominator === 0 ? Number.NaN : numerator / denominator
}

/**
 * 100,000 webhook runs of a three-node workflow through one worker, its RSS read from /proc
 * every second against the runs finished: the RSS at the end, and the slope over the second
 * half (after start-up and warm-up) says whether it keeps growing.
 */
export async function workerMemory (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const total = ctx.quick ? 5000 : 100_000
  const capSeconds = ctx.quick ? 90 : 360
  const stack = await startStack(ctx, 'G')
  const worker = stack.worker!
  const workflowId = await createWorkflow(stack, 'bench G', 'WEBHOOK', pureChain(3))
  const source = { table: 'runs', workflowId } as const
  const startRssMb = worker.rssMb()
  const samples: Sample[] = []
  const sampling = new AbortController()
  const sampler = (async () => {
    while (!sampling.signal.aborted) {
      const [{ finished }] = await stack.sql<Array<{ finished: number }>>`
        select count(*)::int as finished from runs where workflow_id = ${workflowId} and status in ('SUCCESS', 'FAILED')`
      samples.push({ finished, rssMb: worker.rssMb() })
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_EVERY_MS))
    }
  })()
  // Awaited below; handled now so that a failed query does not end the process before then.
  sampler.catch(() => {})
  const started = Date.now()
  const fired = await load({
    baseUrl: stack.baseUrl,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections: ctx.connections,
    amount: total,
    maxSeconds: capSeconds,
    request: () => ({ path: `/api/automation/webhook/${workflowId}`, body: stampedBody() })
  })
  await waitForFinished(stack.sql, source, fired.requests, Math.max(0, capSeconds * 1000 - (Date.now() - started)))
  sampling.abort()
  await sampler
  const endRssMb = worker.rssMb()
  const runs = await measureRuns(stack.sql, source)
  const finished = runs.runs - runs.unfinished
  const secondHalf = samples.filter((s) => s.finished >= finished / 2)
  const growth = slope(secondHalf) * 100_000
  const peakRssMb = Math.max(endRssMb, ...samples.map((s) => s.rssMb))
  // Over fewer runs, start-up, warm-up and the collector's swings outweigh any growth per run.
  const judged = !ctx.quick && finished >= total / 2
  return {
    id: 'G',
    title: `worker memory (${total.toLocaleString('en-US')} runs)`,
    metrics: [
      metric('RSS at the end', endRssMb, 'MB', { op: '<', value: 300 }),
      metric('growth over the second half', growth, 'MB per 100k runs', judged ? { op: '<', value: FLAT_MB_PER_100K } : undefined),
      metric('RSS at start', startRssMb, 'MB'),
      metric('RSS peak', peakRssMb, 'MB'),
      metric('runs finished', finished, 'runs', { op: '>=', value: total }),
      metric('completed runs/s', runs.runsPerSecond, 'runs/s')
    ],
    notes: [
      `${samples.length} RSS samples, one a second; fired for at most ${capSeconds}s with the drain`,
      ...(judged ? [] : [`growth not judged: ${finished.toLocaleString('en-US')} runs finished, too few for the slope to say whether memory keeps growing`]),
      ...failureNote('webhook load', fired)
    ]
  }
}
