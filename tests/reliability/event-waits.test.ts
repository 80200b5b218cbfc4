/**
 * One event resuming 10,000 waiting runs (README, Events and waits): the dispatch matches them a
 * thousand a statement and queues their wakes five hundred a Redis call, so every run resumes with
 * the event, none with the non-matching one posted before it, and no wait is left open.
 */
import t from 'tap'
import postgres from 'postgres'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

t.setTimeout(300_000)

const RUNS = 10_000

const stack = await startStack(t, { workers: 2, env: { LOG_LEVEL: 'warn' } })
const token = await stack.adminToken()
const { call } = stack
const sql = postgres(stack.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
t.teardown(async () => { await sql.end({ timeout: 1 }) })

const countOf = async (workflowId: string, status: string): Promise<number> =>
  (await sql<Array<{ count: number }>>`select count(*)::int as count from runs where workflow_id = ${workflowId} and status = ${status}`)[0]!.count

t.test(`one event resumes ${RUNS} waiting runs`, async (t) => {
  const workflowId = await stack.client.createWorkflow(token, {
    name: 'many waits',
    nodes: [{ id: 'go', type: 'wait_for_event', config: { event: 'sale.started', match: { region: 'eu' }, timeoutMinutes: 30 } }]
  })
  for (let fired = 0; fired < RUNS; fired += 200) {
    await Promise.all(Array.from({ length: 200 }, async () => {
      const res = await call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: {} })
      if (res.status !== 202) throw new Error(`fire: ${res.status} ${JSON.stringify(res.body)}`)
    }))
  }
  await waitFor(async () => await countOf(workflowId, 'WAITING') === RUNS || undefined, { timeoutMs: 180_000, intervalMs: 500, what: `${RUNS} runs WAITING` })
  const post = async (payload: unknown): Promise<void> => {
    const res = await call('POST', '/api/automation/events', { token, body: { name: 'sale.started', payload } })
    if (res.status !== 202) throw new Error(`event: ${res.status}`)
  }
  await post({ region: 'us' })
  const posted = Date.now()
  await post({ region: 'eu' })
  await waitFor(async () => await countOf(workflowId, 'SUCCESS') === RUNS || undefined, { timeoutMs: 180_000, intervalMs: 500, what: `${RUNS} runs resumed` })
  t.comment(`${RUNS} runs resumed ${((Date.now() - posted) / 1000).toFixed(1)} s after the event`)
  const [row] = await sql<Array<{ regions: string[], open: number }>>`
    select (select array_agg(distinct result->'go'->'payload'->>'region') from runs where workflow_id = ${workflowId}) as regions,
      (select count(*)::int from event_listens where event is null and closed_at is null) as open`
  t.same(row!.regions, ['eu'], 'each took the matching event')
  t.equal(row!.open, 0, 'no wait left open')
})
