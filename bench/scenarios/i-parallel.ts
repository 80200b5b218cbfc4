import { quantile } from '../lib/load.ts'
import { metric, type ScenarioResult } from '../lib/report.ts'
import { startStack, type BenchContext, type Stack } from '../lib/stack.ts'
import { createWorkflow } from '../lib/workflows.ts'

const RUNS = 500
const FIRE_LANES = 25
const TIMEOUT_MS = 120_000

/**
 * Fires `count` runs of the workflow at once, so that the worker has a backlog, waits until they all ended, and reads from
 * `runs` their throughput (runs ÷ (last completed − first created)) and durations.
 */
async function fireAll (stack: Stack, workflowId: string, count: number): Promise<{ perSecond: number, durations: number[] }> {
  const token = await stack.adminToken()
  const runIds: string[] = []
  // Fires in FIRE_LANES lanes: one after another, a fire waits for its commit, and the worker would never get a backlog.
  await Promise.all(Array.from({ length: FIRE_LANES }, async (_, lane) => {
    for (let i = lane; i < count; i += FIRE_LANES) runIds.push(await stack.client.fire(token, workflowId, { order: i }))
  }))
  const deadline = Date.now() + TIMEOUT_MS
  for (;;) {
    const [left] = await stack.sql<Array<{ unfinished: number, failed: number }>>`
      select count(*) filter (where status in ('PENDING', 'RUNNING', 'WAITING'))::int as unfinished,
        count(*) filter (where status in ('FAILED', 'CANCELLED'))::int as failed
      from runs where id = any(${runIds})`
    if (left!.failed > 0) throw new Error(`${left!.failed} runs did not succeed`)
    if (left!.unfinished === 0) break
    if (Date.now() > deadline) throw new Error(`${left!.unfinished} runs did not finish within ${TIMEOUT_MS / 1000}s`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const rows = await stack.sql<Array<{ ms: number, created: number, completed: number }>>`
    select extract(epoch from completed_at - created_at)::float8 * 1000 as ms,
      extract(epoch from created_at)::float8 as created, extract(epoch from completed_at)::float8 as completed
    from runs where id = any(${runIds})`
  const first = Math.min(...rows.map((row) => row.created))
  const last = Math.max(...rows.map((row) => row.completed))
  return { perSecond: count / (last - first), durations: rows.map((row) => row.ms) }
}

/**
 * A parallel node with two branches of two `set` nodes each, meeting at a merge, then a `set`:
 * each branch a child run. Workflows/s and the duration of one (created → completed) while a
 * backlog of them is executed.
 */
export async function parallelMerge (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const stack = await startStack(ctx, 'I')
  const workflow = await createWorkflow(stack, 'bench I parallel', 'MANUAL', [
    { id: 'fork', type: 'parallel', config: { branches: ['a1', 'b1'] } },
    { id: 'a1', type: 'set', config: { values: { a: '{{triggerData.order}}' } }, next: 'a2' },
    { id: 'a2', type: 'set', config: { values: { a2: true } }, next: 'join' },
    { id: 'b1', type: 'set', config: { values: { b: '{{triggerData.order}}' } }, next: 'b2' },
    { id: 'b2', type: 'set', config: { values: { b2: true } }, next: 'join' },
    { id: 'join', type: 'merge', config: {}, next: 'after' },
    { id: 'after', type: 'set', config: { values: { both: '{{a1.a}}-{{b1.b}}' } } }
  ])
  // A few first, not counted: JIT, prepared statements, caches.
  await fireAll(stack, workflow, 20)
  const runs = ctx.quick ? 100 : RUNS
  const { perSecond, durations } = await fireAll(stack, workflow, runs)
  return {
    id: 'I',
    title: 'parallel → two branches of two set nodes → merge → set',
    metrics: [
      metric('workflows/s', perSecond, 'runs/s'),
      metric('p50 created → completed', quantile(durations, 0.5), 'ms'),
      metric('p99 created → completed', quantile(durations, 0.99), 'ms')
    ],
    notes: [`${runs} runs fired at once (${FIRE_LANES} requests in flight), executed from the backlog (each: the parent and two branch runs), after 20 not counted`]
  }
}
