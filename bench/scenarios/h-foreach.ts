import { quantile } from '../lib/load.ts'
import { metric, type Metric, type ScenarioResult } from '../lib/report.ts'
import { startStack, type BenchContext, type Stack } from '../lib/stack.ts'
import { createWorkflow } from '../lib/workflows.ts'

const ITEMS = 1000
/** The most a foreach runs at once, and its default. */
const CONCURRENCIES = [100, 5]
const LOOP_TIMEOUT_MS = 120_000

interface Loop {
  itemsPerSecond: number
  /** Times the parent ran again (woken by its children's ends, or its timer). */
  wakes: number
}

/** Fires the loop over `items` items, waits for its run to end SUCCESS, and returns its rate (created → completed) and wakes. */
async function timedLoop (stack: Stack, workflowId: string, items: number): Promise<Loop> {
  const runId = await stack.client.fire(await stack.adminToken(), workflowId, { items: Array.from({ length: items }, (_, index) => index) })
  const deadline = Date.now() + LOOP_TIMEOUT_MS
  for (;;) {
    const [run] = await stack.sql<Array<{ status: string, error: string | null, seconds: number | null, wakes: number }>>`
      select status, error, extract(epoch from completed_at - created_at)::float8 as seconds,
        (select count(*)::int from run_logs where run_id = ${runId} and message = 'Run resumed') as wakes
      from runs where id = ${runId}`
    if (run?.status === 'SUCCESS' && run.seconds !== null) return { itemsPerSecond: items / run.seconds, wakes: run.wakes }
    if (run?.status === 'FAILED' || run?.status === 'CANCELLED') throw new Error(`loop ${runId} ended ${run.status}: ${run.error ?? ''}`)
    if (Date.now() > deadline) throw new Error(`loop ${runId} of ${items} items did not finish within ${LOOP_TIMEOUT_MS / 1000}s`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * A foreach over 1,000 items, each a child run of a one-`set`-node workflow, at the most
 * children at once (100) and at the default (5): items/s from the parent's creation to its end,
 * and how many times the parent was woken (children ending together share a wake).
 */
export async function foreachLoop (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const stack = await startStack(ctx, 'H')
  const child = await createWorkflow(stack, 'bench H child', 'MANUAL', [{ id: 'n1', type: 'set', config: { values: { i: '{{triggerData.index}}' } } }])
  const repeats = ctx.quick ? 1 : 3
  const metrics: Metric[] = []
  const notes: string[] = []
  for (const concurrency of CONCURRENCIES) {
    const loop = await createWorkflow(stack, `bench H concurrency ${concurrency}`, 'MANUAL', [
      { id: 'loop', type: 'foreach', config: { workflowId: child, items: '{{triggerData.items}}', concurrency, collectOutputs: false } }
    ])
    // One short loop first, not counted: JIT, prepared statements, caches.
    await timedLoop(stack, loop, concurrency * 2)
    const loops: Loop[] = []
    for (let i = 0; i < repeats; i++) loops.push(await timedLoop(stack, loop, ITEMS))
    metrics.push(
      metric(`items/s, ${concurrency} at once`, quantile(loops.map((l) => l.itemsPerSecond), 0.5), 'items/s'),
      metric(`parent wakes, ${concurrency} at once`, quantile(loops.map((l) => l.wakes), 0.5), 'wakes')
    )
    notes.push(`concurrency ${concurrency}: items/s ${loops.map((l) => Math.round(l.itemsPerSecond)).join(', ')}; wakes ${loops.map((l) => l.wakes).join(', ')}`)
  }
  return {
    id: 'H',
    title: `foreach loop (${ITEMS} items, one-set-node child)`,
    metrics,
    notes: [`medians of ${repeats} loops each, after one short loop not counted; items ÷ (parent completed − created), collectOutputs false`, ...notes]
  }
}
