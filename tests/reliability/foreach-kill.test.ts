/**
 * A foreach loop of 1,000 items whose worker is SIGKILLed mid-loop: a new worker takes the loop
 * and its interrupted children over, every item is delivered, each by exactly one child run, and
 * an item is delivered twice only when its child was in the middle of its delivery at the kill.
 * About 25 s on a two-core machine: most of it the new worker's start and the dead one's job
 * locks expiring (LOCK_DURATION_MS).
 */
import t from 'tap'
import postgres from 'postgres'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

t.setTimeout(240_000)

const ITEMS = 1_000
const CONCURRENCY = 10
/** The kill comes once this many items were delivered: well inside the loop. */
const KILL_AFTER = 300
/** Each delivery is held this long, so that some are always in flight when the worker dies. */
const SINK_DELAY_MS = 50

const sink = await startDeliverySink(t, { delayMs: () => SINK_DELAY_MS })
const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'warn' } })
const token = await stack.adminToken()
const sql = postgres(stack.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
t.teardown(async () => { await sql.end({ timeout: 1 }) })

/** The item index a delivery was made for: the child POSTs to `/item/<index>`. */
const indexOf = (path: string): number => Number(path.split('/')[2])

t.test('a worker SIGKILLed mid-loop: every item delivered by one child run, duplicates only for children interrupted mid-delivery', async (t) => {
  const child = await stack.client.createWorkflow(token, {
    name: 'deliver one item',
    isActive: false,
    nodes: [{ id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/item/{{triggerData.index}}`, body: { index: '{{triggerData.index}}' }, timeoutMs: 30_000 } }]
  })
  const parent = await stack.client.createWorkflow(token, {
    name: 'loop over items',
    // collectOutputs false: 1,000 http_request outputs are not what is tested, and could pass NODE_OUTPUT_MAX_BYTES.
    nodes: [{ id: 'loop', type: 'foreach', config: { workflowId: child, items: '{{triggerData.items}}', concurrency: CONCURRENCY, collectOutputs: false } }]
  })
  const began = Date.now()
  const runId = await stack.client.fire(token, parent, { items: Array.from({ length: ITEMS }, (_, index) => index) })

  const distinct = (): number => new Set(sink.deliveries.map((d) => d.path)).size
  await waitFor(async () => distinct() >= KILL_AFTER ? true : undefined, { timeoutMs: 120_000, intervalMs: 10, what: `${KILL_AFTER} items delivered` })
  const inFlightAtKill = sink.inFlight()
  await stack.workers[0]!.stop('SIGKILL')
  const deliveredAtKill = distinct()
  const [atKill] = await sql<Array<{ status: string, running: number }>>`
    select status, (select count(*)::int from runs where parent_run_id = ${runId} and status = 'RUNNING') as running from runs where id = ${runId}`
  t.ok(deliveredAtKill < ITEMS && atKill!.status !== 'SUCCESS', `the worker died mid-loop (${deliveredAtKill} items delivered, parent ${atKill!.status})`)
  // No delivery after this can come from the dead worker: the new one is not started yet.
  const restartedAt = Date.now()
  await stack.startWorker()

  const run = await stack.client.runReaching(token, runId, undefined, { timeoutMs: 180_000, intervalMs: 250 })
  const seconds = (Date.now() - began) / 1000
  t.equal(run.status, 'SUCCESS', `the parent ended SUCCESS ${run.error ?? ''}`)
  t.same(run.result.loop, { total: ITEMS, succeeded: ITEMS, failed: 0, errors: [] }, 'the loop counts every item succeeded')

  const children = await sql<Array<{ id: string, index: number, status: string, attempt: number }>>`
    select id, item_index as index, status, attempt from runs where parent_run_id = ${runId} order by item_index`
  t.equal(children.length, ITEMS, 'one child run per item, none started twice for an item')
  t.same(children.map((c) => c.index), Array.from({ length: ITEMS }, (_, index) => index), 'the children are items 0..999')
  t.same(children.filter((c) => c.status !== 'SUCCESS').map((c) => `${c.index} ${c.status}`), [], 'every child ended SUCCESS')
  t.equal((await stack.client.getRun(token, runId) as unknown as { childCount: number }).childCount, ITEMS, 'the api counts the same children')

  const byIndex = new Map<number, typeof sink.deliveries>()
  for (const delivery of sink.deliveries) byIndex.set(indexOf(delivery.path), [...(byIndex.get(indexOf(delivery.path)) ?? []), delivery])
  t.same(children.filter((c) => !byIndex.has(c.index)).map((c) => c.index), [], 'every item was delivered')
  t.equal(byIndex.size, ITEMS, 'nothing delivered for an item that does not exist')
  // Every delivery of an item carries its child run's Idempotency-Key: a repeat is that child's node run again, not another child.
  t.same(children.filter((c) => byIndex.get(c.index)!.some((d) => d.idempotencyKey !== `${c.id}:call`)).map((c) => c.index), [], 'each delivery carries its child\'s <runId>:call key')

  // A duplicate is a child whose delivery was sent before the kill and not recorded: the dead
  // worker held at most CONCURRENCY children, so at most that many items, twice each, the first
  // before the kill, the second by the child taken over (its attempt counted).
  const duplicated = children.filter((c) => byIndex.get(c.index)!.length > 1)
  t.ok(duplicated.length <= CONCURRENCY, `at most ${CONCURRENCY} items delivered twice (${duplicated.length})`)
  t.same(duplicated.filter((c) => {
    const deliveries = byIndex.get(c.index)!
    return deliveries.length !== 2 || deliveries[0]!.receivedAt >= restartedAt || c.attempt < 1
  }).map((c) => c.index), [], 'each duplicated item: twice, first before the kill, its child taken over')
  t.comment(`figures ${JSON.stringify({ items: ITEMS, concurrency: CONCURRENCY, deliveredAtKill, inFlightAtKill, childrenRunningAtKill: atKill!.running, duplicated: duplicated.length, deliveries: sink.deliveries.length, takenOver: children.filter((c) => c.attempt > 0).length, seconds })}`)
})
