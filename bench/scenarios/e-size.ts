import { load, type LoadResult } from '../lib/load.ts'
import { failureNote, metric, type ScenarioResult } from '../lib/report.ts'
import { startStack, type BenchContext, type Stack } from '../lib/stack.ts'
import { createWorkflow, pureChain, seconds } from '../lib/workflows.ts'

const LARGE = 1000
/** Fires per second: a steady stream the api answers easily, so that latency shows cost, not queueing. */
const RATE = 10
const CONNECTIONS = 4

async function fireAtRate (stack: Stack, workflowId: string, durationSeconds: number): Promise<LoadResult> {
  const token = await stack.adminToken()
  let n = 0
  return load({
    baseUrl: stack.baseUrl,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    connections: CONNECTIONS,
    overallRate: RATE,
    durationSeconds,
    request: () => ({ path: `/api/automation/workflows/${workflowId}/fire`, body: JSON.stringify({ n: ++n }) })
  })
}

/**
 * /fire latency of a 1-node workflow and of a 1,000-node one, each fired at a steady rate
 * while the worker executes what was fired: the answer must not depend on the workflow's size.
 */
export async function sizeIndependence (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const stack = await startStack(ctx, 'E')
  const small = await createWorkflow(stack, 'bench E 1 node', 'MANUAL', pureChain(1))
  const large = await createWorkflow(stack, `bench E ${LARGE} nodes`, 'MANUAL', pureChain(LARGE))
  const duration = seconds(ctx.quick, 15, 3)
  await fireAtRate(stack, small, seconds(ctx.quick, 2, 1))
  const smallLoad = await fireAtRate(stack, small, duration)
  const largeLoad = await fireAtRate(stack, large, duration)
  const [{ finished }] = await stack.sql<Array<{ finished: number }>>`
    select count(*)::int as finished from runs where workflow_id = ${large} and status in ('SUCCESS', 'FAILED')`
  return {
    id: 'E',
    title: `size independence (/fire, 1 vs ${LARGE} nodes)`,
    metrics: [
      metric('1-node fire p50', smallLoad.p50Ms, 'ms'),
      metric('1-node fire p99', smallLoad.p99Ms, 'ms'),
      metric(`${LARGE}-node fire p50`, largeLoad.p50Ms, 'ms'),
      metric(`${LARGE}-node fire p99`, largeLoad.p99Ms, 'ms'),
      metric('p50 ratio', largeLoad.p50Ms / smallLoad.p50Ms, '×', { op: '<', value: 1.2 })
    ],
    notes: [
      `${RATE} fires/s over ${CONNECTIONS} connections for ${duration}s each; ${finished} of ${largeLoad.requests} ${LARGE}-node runs finished while fired`,
      ...failureNote('1-node fires', smallLoad),
      ...failureNote(`${LARGE}-node fires`, largeLoad)
    ]
  }
}
