import { failureNote, metric, type Metric, type ScenarioResult } from '../lib/report.ts'
import { load } from '../lib/load.ts'
import { measureRuns, nowMs } from '../lib/runs.ts'
import { startStack, type BenchContext, type Stack } from '../lib/stack.ts'
import { oneSetNode } from '../lib/workflows.ts'

const DRAIN_TIMEOUT_MS = 240_000
/**
 * How long the wait for a phase's runs goes on with none finishing: longer than waitForFinished's, since
 * a key's line may start slowly behind a backlog of held runs, which is what this scenario measures.
 */
const STALLED_MS = 90_000

/** Keys of the measured phases, with the runs sent to each (full, `--quick`): in a full run at least two a key, so that the limit bites. */
const PHASES = [
  { keys: 1, runs: 1000, quickRuns: 300 },
  { keys: 100, runs: 5000, quickRuns: 1000 },
  { keys: 10_000, runs: 20_000, quickRuns: 10_000 }
]
/** The same workflow without flowControl, as the baseline. */
const BASELINE = { runs: 5000, quickRuns: 1000 }

/** An active WEBHOOK workflow of A's one `set` node, with `flowControl` (null: none); its id. */
async function flowWorkflow (stack: Stack, name: string, flowControl: unknown): Promise<string> {
  const res = await stack.client.call('POST', '/api/automation/workflows', {
    token: await stack.adminToken(),
    body: { name, triggerType: 'WEBHOOK', isActive: true, nodes: oneSetNode(), flowControl }
  })
  if (res.status !== 201) throw new Error(`create workflow: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.id
}

/** Waits until at least `expected` runs of the workflow exist and all finished, or DRAIN_TIMEOUT_MS, or none finished for STALLED_MS. */
async function drained (stack: Stack, workflowId: string, expected: number): Promise<void> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS
  let progress = { finished: -1, at: Date.now() }
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 250))
    const [{ runs, finished }] = await stack.sql<Array<{ runs: number, finished: number }>>`
      select count(*)::int as runs, count(completed_at)::int as finished from runs where workflow_id = ${workflowId}`
    if (runs >= expected && finished === runs) return
    if (finished !== progress.finished) progress = { finished, at: Date.now() }
    if (Date.now() > deadline || Date.now() - progress.at > STALLED_MS) return
  }
}

/**
 * Sends `runs` webhooks to the workflow at the bench's connections, each body stamped with its send
 * time and naming key `k<n mod keys>`, waits for every run to finish, and reads them back as A does:
 * runs/s = runs ÷ (last completed − first send), p50/p99 send → completed. `overlapping`: runs that
 * started before the run of their key before them had ended (0 when the limit of 1 held).
 */
async function phase (ctx: BenchContext, stack: Stack, workflowId: string, runs: number, keys: number) {
  let n = 0
  const fired = await load({
    baseUrl: stack.baseUrl,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections: ctx.connections,
    amount: runs,
    request: () => ({ path: `/api/automation/webhook/${workflowId}`, body: JSON.stringify({ sentAt: nowMs(), key: `k${n++ % keys}` }) })
  })
  await drained(stack, workflowId, fired.requests)
  const measured = await measureRuns(stack.sql, { table: 'runs', workflowId })
  const [{ overlapping }] = await stack.sql<Array<{ overlapping: number }>>`
    select count(*)::int as overlapping from (
      select started_at, lag(completed_at) over (partition by trigger_data->'body'->>'key' order by started_at, id) as previous_end
      from runs where workflow_id = ${workflowId}
    ) r where started_at < previous_end`
  return { fired, measured, overlapping }
}

/**
 * Flow control under load (README, Flow control): a concurrency key of limit 1 over the runs of one
 * webhook workflow of one `set` node, at 1, 100 and 10,000 keys, against the same workflow without
 * flowControl. Each phase a fresh workflow, its runs sent as fast as the api takes them and executed
 * from the backlog, measured as A. At 1 key the runs go one at a time: its figure is the hand-off
 * from a run's end to the next run of the key.
 */
export async function flowControlKeys (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const stack = await startStack(ctx, 'O')
  const metrics: Metric[] = []
  const notes: string[] = []
  // Not counted: JIT, prepared statements, caches, on both paths.
  await phase(ctx, stack, await flowWorkflow(stack, 'bench O warm-up', null), ctx.quick ? 200 : 500, 1)
  await phase(ctx, stack, await flowWorkflow(stack, 'bench O warm-up keyed', { concurrency: { key: '{{triggerData.body.key}}', limit: 1 } }), ctx.quick ? 200 : 500, 100)

  const baselineRuns = ctx.quick ? BASELINE.quickRuns : BASELINE.runs
  const baseline = await phase(ctx, stack, await flowWorkflow(stack, 'bench O no flowControl', null), baselineRuns, 1)
  metrics.push(metric('no flowControl: completed runs/s', baseline.measured.runsPerSecond, 'runs/s'))
  notes.push(...failureNote('no flowControl', baseline.fired))
  for (const { keys, runs: fullRuns, quickRuns } of PHASES) {
    const runs = ctx.quick ? quickRuns : fullRuns
    const workflowId = await flowWorkflow(stack, `bench O ${keys} keys`, { concurrency: { key: '{{triggerData.body.key}}', limit: 1 } })
    const { fired, measured, overlapping } = await phase(ctx, stack, workflowId, runs, keys)
    const label = `${keys.toLocaleString('en-US')} key${keys === 1 ? '' : 's'}`
    metrics.push(
      metric(`${label}: completed runs/s`, measured.runsPerSecond, 'runs/s'),
      metric(`${label}: request → SUCCESS p50`, measured.p50Ms, 'ms'),
      metric(`${label}: request → SUCCESS p99`, measured.p99Ms, 'ms'),
      metric(`${label}: ÷ no flowControl`, measured.runsPerSecond / baseline.measured.runsPerSecond, '×')
    )
    notes.push(`${label}: ${runs} webhooks (${Math.ceil(runs / keys)} a key), ${fired.requestsPerSecond.toFixed(0)} answered/s`)
    notes.push(...failureNote(`${label} load`, fired))
    if (measured.unfinished + measured.notSuccess > 0) notes.push(`${label}: ${measured.unfinished} runs unfinished, ${measured.notSuccess} not SUCCESS`)
    if (overlapping > 0) notes.push(`${label}: **${overlapping} runs started before the run of their key before them ended** (limit 1)`)
  }
  return {
    id: 'O',
    title: 'a concurrency key (limit 1) under load: 1, 100 and 10,000 keys',
    metrics,
    notes: [`baseline: ${baselineRuns} webhooks to the same workflow without flowControl`, ...notes]
  }
}
