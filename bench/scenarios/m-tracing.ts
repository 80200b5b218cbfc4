import { startOtlpReceiver } from '@switchboard/testing/otlp-receiver'
import { measureWebhookPipeline } from '../lib/pipeline.ts'
import { failureNote, metric, type ScenarioResult } from '../lib/report.ts'
import type { RunsMeasure } from '../lib/runs.ts'
import { startStack, type BenchContext, type Stack } from '../lib/stack.ts'
import { oneSetNode, seconds } from '../lib/workflows.ts'

/** Rounds of each, off and on in turn, so that a drift of the machine over the scenario favours neither. */
const ROUNDS = 2
/** The span processor sends what it holds every OTEL_BSP_SCHEDULE_DELAY, 5 s by default (README, Configuration): the last spans come within it. */
const LAST_EXPORT_MS = 6000

/** The middle value, or the mean of the two middle ones. */
function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/**
 * Scenario A's pipeline (inbound webhook → one `set` node) on two stacks started side by side, one
 * without tracing and one exporting every span (the default sampler) to an OTLP receiver on loopback
 * in this process, measured off, on, off, on with short phases: the medians of each, and their ratio.
 */
export async function tracingCost (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const receiver = await startOtlpReceiver(ctx)
  const stacks: Record<'off' | 'on', Stack> = {
    off: await startStack(ctx, 'M-off'),
    on: await startStack(ctx, 'M-on', { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } })
  }
  const measures: Record<'off' | 'on', RunsMeasure[]> = { off: [], on: [] }
  const notes: string[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    for (const tracing of ['off', 'on'] as const) {
      const stack = stacks[tracing]
      const { load, runs } = await measureWebhookPipeline(ctx, stack, `M ${tracing} ${round}`, oneSetNode(), {
        phaseSeconds: { warm: seconds(ctx.quick, 2, 1), measured: seconds(ctx.quick, 5, 2) }
      })
      measures[tracing].push(runs)
      notes.push(
        ...failureNote(`tracing ${tracing}, round ${round}`, load),
        ...(runs.unfinished + runs.notSuccess > 0 ? [`tracing ${tracing}, round ${round}: ${runs.unfinished} runs unfinished, ${runs.notSuccess} not SUCCESS`] : [])
      )
    }
  }
  await new Promise((resolve) => setTimeout(resolve, LAST_EXPORT_MS))
  const [{ traced }] = await stacks.on.sql<Array<{ traced: number }>>`select count(*)::int as traced from runs`
  const rate = (tracing: 'off' | 'on'): number => median(measures[tracing].map((m) => m.runsPerSecond))
  const p50 = (tracing: 'off' | 'on'): number => median(measures[tracing].map((m) => m.p50Ms))
  const rounds = (tracing: 'off' | 'on'): string => measures[tracing].map((m) => Math.round(m.runsPerSecond)).join(', ')
  return {
    id: 'M',
    title: 'what tracing adds (A\'s workflow, tracing off and on)',
    metrics: [
      metric(`completed runs/s, tracing off (median of ${ROUNDS})`, rate('off'), 'runs/s'),
      metric(`completed runs/s, tracing on (median of ${ROUNDS})`, rate('on'), 'runs/s'),
      metric('on ÷ off', rate('on') / rate('off'), '×'),
      metric('request → SUCCESS p50, tracing off', p50('off'), 'ms'),
      metric('request → SUCCESS p50, tracing on', p50('on'), 'ms'),
      metric('spans received', receiver.spans.length, 'spans'),
      metric('spans per traced run', receiver.spans.length / traced, 'spans')
    ],
    notes: [
      `rounds in the order off, on, off, on, each a warm-up and a measured phase on a workflow of its own (off ${rounds('off')}; on ${rounds('on')} runs/s); both stacks up throughout, the idle one waiting; spans counted ${LAST_EXPORT_MS / 1000} s after the last phase, over the ${traced.toLocaleString('en-US')} runs of the traced stack (warm-ups included)`,
      ...notes
    ]
  }
}
