/**
 * Fan-in: the children of one foreach ending together, a hundred at a time, thousands in all.
 * Each child's end touches only its own row and wakes the parent with a deduplicated job
 * (engine/children.ts), so the parent's row is written once per wake and nothing queues on it:
 * the loop finishes, with every result in item order, and lock waits stay at a handful.
 */
import t from 'tap'
import postgres from 'postgres'
import { startStack } from '@switchboard/testing/processes'

t.setTimeout(180_000)

/** FOREACH_MAX_ITEMS's default: about 16 s (some 600 items/s) on a two-core machine shared with other tests. */
const ITEMS = 10_000
const CONCURRENCY = 100
/**
 * Lock waits seen at once in the stack's database. A child writing its parent's row would have
 * up to the worker's pool (DATABASE_POOL_MAX, 10) waiting on it; a few come from elsewhere
 * (the counters' fold, two starts of the same wake).
 */
const MAX_LOCK_WAITERS = 3
const SAMPLE_EVERY_MS = 50

const stack = await startStack(t, { env: { FOREACH_MAX_ITEMS: String(ITEMS), LOG_LEVEL: 'warn' } })
const token = await stack.adminToken()
const sql = postgres(stack.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
t.teardown(async () => { await sql.end({ timeout: 1 }) })

interface Waiter { pid: number, query: string }

t.test(`${ITEMS} children ending a hundred at a time: the parent finishes, nothing queues on its row`, async (t) => {
  const child = await stack.client.createWorkflow(token, {
    name: 'one set node',
    isActive: false,
    nodes: [{ id: 'n1', type: 'set', config: { values: { i: '{{triggerData.index}}' } } }]
  })
  const parent = await stack.client.createWorkflow(token, {
    name: 'fan-in',
    nodes: [{ id: 'loop', type: 'foreach', config: { workflowId: child, items: '{{triggerData.items}}', concurrency: CONCURRENCY } }]
  })
  const runId = await stack.client.fire(token, parent, { items: Array.from({ length: ITEMS }, (_, index) => index) })

  let samples = 0
  let most: Waiter[] = []
  let status = 'PENDING'
  const deadline = Date.now() + 150_000
  while (!['SUCCESS', 'FAILED', 'CANCELLED'].includes(status) && Date.now() < deadline) {
    const waiters = await sql<Waiter[]>`
      select pid, left(query, 200) as query from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`
    samples++
    if (waiters.length > most.length) most = waiters
    const [row] = await sql<Array<{ status: string }>>`select status from runs where id = ${runId}`
    status = row!.status
    await new Promise((resolve) => setTimeout(resolve, SAMPLE_EVERY_MS))
  }

  const [timing] = await sql<Array<{ seconds: number }>>`
    select extract(epoch from completed_at - created_at)::float8 as seconds from runs where id = ${runId}`
  const run = await stack.client.getRun(token, runId)
  t.equal(run.status, 'SUCCESS', `the parent ended SUCCESS within 150 s ${run.error ?? ''}`)
  t.match(run.result.loop, { total: ITEMS, succeeded: ITEMS, failed: 0, errors: [] }, 'every item succeeded')
  const results: Array<{ n1: { i: number } } | null> = run.result.loop?.results ?? []
  t.equal(results.length, ITEMS, 'one result per item')
  t.same(results.flatMap((output, index) => output?.n1.i === index ? [] : [index]).slice(0, 10), [], 'each result is its item\'s child\'s, in item order')
  const [children] = await sql<Array<{ count: number }>>`select count(*)::int as count from runs where parent_run_id = ${runId} and status = 'SUCCESS'`
  t.equal(children!.count, ITEMS, 'one child run per item')
  t.ok(most.length <= MAX_LOCK_WAITERS, `at most ${MAX_LOCK_WAITERS} lock waits at once (${most.length}: ${JSON.stringify(most)})`)
  t.comment(`figures ${JSON.stringify({ items: ITEMS, concurrency: CONCURRENCY, seconds: timing!.seconds, itemsPerSecond: Math.round(ITEMS / timing!.seconds), lockWaitersMax: most.length, samples })}`)
})
