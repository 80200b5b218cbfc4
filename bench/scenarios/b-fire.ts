import { load } from '../lib/load.ts'
import { failureNote, metric, type ScenarioResult } from '../lib/report.ts'
import { startStack, type BenchContext } from '../lib/stack.ts'
import { createWorkflow, seconds } from '../lib/workflows.ts'

const SPREAD = 100
/** Back-to-back pairs of a person's token and an API key firing the same workflow, first one then the other first (README, API keys: not measurably slower). */
const KEY_ROUNDS = 3

const median = (values: number[]): number => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!

/**
 * POST /fire at full speed, all to one workflow and then round robin over 100, with no
 * worker consuming: what the api accepts, each run durable and enqueued when it answers.
 */
export async function sustainedFire (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const stack = await startStack(ctx, 'B', { worker: false })
  const nodes = [{ id: 'n1', type: 'set', config: { values: { a: '{{triggerData.n}}' } } }]
  const ids: string[] = []
  for (let i = 0; i < SPREAD; i++) ids.push(await createWorkflow(stack, `bench B ${i}`, 'MANUAL', nodes))
  const token = await stack.adminToken()
  const created = await fetch(`${stack.baseUrl}/api/auth/api-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: 'bench B', scopes: ['runs:write'] })
  })
  if (created.status !== 201) throw new Error(`create an API key: ${created.status} ${await created.text()}`)
  const { key } = await created.json() as { key: string }
  let n = 0
  const fire = async (pick: () => string, durationSeconds: number, bearer = token) => load({
    baseUrl: stack.baseUrl,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
    connections: ctx.connections,
    durationSeconds,
    request: () => ({ path: `/api/automation/workflows/${pick()}/fire`, body: JSON.stringify({ n: ++n, event: 'order.created' }) })
  })
  const roundRobin = (): string => ids[n % SPREAD]!
  await fire(roundRobin, seconds(ctx.quick, 3, 1))
  const one = await fire(() => ids[0]!, seconds(ctx.quick, 10, 3))
  const spread = await fire(roundRobin, seconds(ctx.quick, 10, 3))
  const withToken: number[] = []
  const withKey: number[] = []
  // Each round swaps which goes first, so that a drift of the machine over the rounds favours neither.
  for (let round = 0; round < KEY_ROUNDS; round++) {
    const order = round % 2 === 0 ? [token, key] : [key, token]
    for (const bearer of order) {
      const { requestsPerSecond } = await fire(() => ids[0]!, seconds(ctx.quick, 4, 1), bearer)
      ;(bearer === key ? withKey : withToken).push(requestsPerSecond)
    }
  }
  return {
    id: 'B',
    title: '/fire sustained',
    metrics: [
      metric('one workflow', one.requestsPerSecond, 'req/s', { op: '>=', value: 5000 }),
      metric('one workflow p50', one.p50Ms, 'ms'),
      metric('one workflow p99', one.p99Ms, 'ms', { op: '<', value: 20 }),
      metric(`spread over ${SPREAD}`, spread.requestsPerSecond, 'req/s', { op: '>=', value: 5000 }),
      metric(`spread over ${SPREAD} p50`, spread.p50Ms, 'ms'),
      metric(`spread over ${SPREAD} p99`, spread.p99Ms, 'ms', { op: '<', value: 20 }),
      metric('one ÷ spread', one.requestsPerSecond / spread.requestsPerSecond, '×', { op: '>=', value: 0.9 }),
      metric(`with a person's token, median of ${KEY_ROUNDS}`, median(withToken), 'req/s'),
      metric(`with an API key, median of ${KEY_ROUNDS}`, median(withKey), 'req/s'),
      metric('API key ÷ token', median(withKey) / median(withToken), '×', { op: '>=', value: 0.95 })
    ],
    notes: [
      'api process only: no worker consumes while /fire is driven (scenarios A, C and E execute runs)',
      `token and key: ${KEY_ROUNDS} rounds of one workflow, back to back (token ${withToken.map(Math.round).join(', ')}; key ${withKey.map(Math.round).join(', ')} req/s)`,
      ...failureNote('one workflow', one),
      ...failureNote('spread', spread)
    ]
  }
}
