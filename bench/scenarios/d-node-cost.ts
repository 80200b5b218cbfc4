import { quantile } from '../lib/load.ts'
import { metric, type ScenarioResult } from '../lib/report.ts'
import { startStack, type BenchContext, type Stack } from '../lib/stack.ts'
import { codeChain, createWorkflow, pureChain } from '../lib/workflows.ts'

const CHAIN = 400
/** Code nodes cost about a millisecond each: a shorter chain measures them as well. */
const CODE_CHAIN = 100
const RUN_TIMEOUT_MS = 120_000

/** Fires the workflow, waits for its run to end, and returns how long it ran (started → completed), in ms. */
async function timedRun (stack: Stack, workflowId: string): Promise<number> {
  const runId = await stack.client.fire(await stack.adminToken(), workflowId, { n: 1 })
  const deadline = Date.now() + RUN_TIMEOUT_MS
  for (;;) {
    const [run] = await stack.sql<Array<{ status: string, ms: number | null }>>`
      select status, (extract(epoch from completed_at - started_at) * 1000)::float8 as ms from runs where id = ${runId}`
    if (run?.status === 'SUCCESS' && run.ms !== null) return run.ms
    if (run?.status === 'FAILED' || run?.status === 'CANCELLED') throw new Error(`run ${runId} of the ${workflowId} chain ended ${run.status}`)
    if (Date.now() > deadline) throw new Error(`run ${runId} did not finish within ${RUN_TIMEOUT_MS / 1000}s`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/**
 * Runs of a 400-node pure chain, one at a time on an idle worker, against runs of a one-node
 * workflow: the difference of the medians over 399 is what one more pure node costs. The same
 * for a 100-node chain of code nodes: what one more code node costs.
 */
export async function nodeCost (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const stack = await startStack(ctx, 'D')
  const long = await createWorkflow(stack, `bench D ${CHAIN} nodes`, 'MANUAL', pureChain(CHAIN))
  const short = await createWorkflow(stack, 'bench D 1 node', 'MANUAL', pureChain(1))
  const code = await createWorkflow(stack, `bench D ${CODE_CHAIN} code nodes`, 'MANUAL', codeChain(CODE_CHAIN))
  const repeats = ctx.quick ? 2 : 7
  // One run of each first, not counted: JIT, prepared statements, caches.
  await timedRun(stack, long)
  await timedRun(stack, short)
  await timedRun(stack, code)
  const longMs: number[] = []
  const shortMs: number[] = []
  const codeMs: number[] = []
  for (let i = 0; i < repeats; i++) {
    longMs.push(await timedRun(stack, long))
    shortMs.push(await timedRun(stack, short))
    codeMs.push(await timedRun(stack, code))
  }
  const longMedian = quantile(longMs, 0.5)
  const shortMedian = quantile(shortMs, 0.5)
  const codeMedian = quantile(codeMs, 0.5)
  return {
    id: 'D',
    title: `node cost (${CHAIN}-node pure chain)`,
    metrics: [
      metric('per pure node', (longMedian - shortMedian) / (CHAIN - 1) * 1000, 'µs', { op: '<', value: 50 }),
      metric('per code node', (codeMedian - shortMedian) / (CODE_CHAIN - 1), 'ms', { op: '<', value: 1 }),
      metric(`${CHAIN}-node run`, longMedian, 'ms'),
      metric(`${CODE_CHAIN}-code-node run`, codeMedian, 'ms'),
      metric('1-node run', shortMedian, 'ms')
    ],
    notes: [
      `medians of ${repeats} runs each (started → completed), one run at a time; set and condition nodes in turn; code nodes each returning the one before's value plus one (a sandbox thread's round trip and a fresh QuickJS runtime each)`,
      `the 1-node run executes in memory and is claimed with its end (its started → completed is its node's time); the ${CHAIN}-node chain is longer than a checkpoint's 100 nodes, so it is claimed and checkpointed, and its per-node figure carries those statements`
    ]
  }
}
