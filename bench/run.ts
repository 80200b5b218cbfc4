/**
 * Benchmarks of the hot paths against a real api process (and its own database):
 * POST /fire and the inbound webhook. Run with `pnpm bench`; prints one line per
 * scenario and a JSON summary. Targets are read from the numbers, not asserted in tests.
 */
import autocannon from 'autocannon'
import { startStack } from '@switchboard/testing/processes'

const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)

const teardowns: Array<() => unknown> = []
const stack = await startStack({ teardown: (fn) => { teardowns.push(fn) } }, { workers: 0, env: { LOG_LEVEL: 'warn' } })

try {
  const token = await stack.adminToken()
  // A large graph: the answer of /fire must not depend on the workflow's size.
  const nodes = Array.from({ length: 200 }, (_, i) => ({ id: `n${i}`, type: 'set', config: { values: { i: String(i) } }, ...(i < 199 && { next: `n${i + 1}` }) }))
  const create = async (triggerType: string): Promise<string> => stack.client.createWorkflow(token, { name: `bench ${triggerType}`, triggerType, nodes })
  const manual = await create('MANUAL')
  const webhook = await create('WEBHOOK')

  const scenarios = [
    { name: 'fire', path: `/api/automation/workflows/${manual}/fire`, headers: { authorization: `Bearer ${token}` } },
    { name: 'inbound webhook', path: `/api/automation/webhook/${webhook}`, headers: {} }
  ]
  const summary: Record<string, unknown> = {}
  for (const scenario of scenarios) {
    const result = await autocannon({
      url: `${stack.baseUrl}${scenario.path}`,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...scenario.headers },
      body: JSON.stringify({ event: 'order.created', data: { id: 42, phone: '16505551234' } }),
      connections: CONNECTIONS,
      duration: DURATION_SECONDS
    })
    const line = {
      requestsPerSecond: Math.round(result.requests.average),
      latencyP50Ms: result.latency.p50,
      latencyP99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors
    }
    summary[scenario.name] = line
    console.log(`${scenario.name}: ${line.requestsPerSecond} req/s, p50 ${line.latencyP50Ms} ms, p99 ${line.latencyP99Ms} ms, non-2xx ${line.non2xx}, errors ${line.errors}`)
  }
  console.log(JSON.stringify({ connections: CONNECTIONS, durationSeconds: DURATION_SECONDS, results: summary }))
} finally {
  for (const fn of teardowns.reverse()) await fn()
}
