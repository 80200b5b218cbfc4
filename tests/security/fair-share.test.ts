import t from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

// One member's slow runs must not starve another user: before, a member firing 60 runs of a slow
// http_request held all 20 slots of the worker, and the admin's one-node run waited for them. The
// admin's idle runs come first: a user who used the queue lately gets the slots the share keeps.
const SLOTS = 20
const sink = await startDeliverySink(t, { delayMs: (path) => path.startsWith('/slow/') ? 3000 : 0 })
const stack = await startStack(t, { env: { WORKER_CONCURRENCY: String(SLOTS), HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
const adminToken = await stack.adminToken()
const member = await stack.client.newUser(adminToken)

/** Milliseconds from the fire's answer to the run's SUCCESS, read from the run (server clocks). */
async function runLatency (token: string, workflowId: string): Promise<number> {
  const runId = await stack.client.fire(token, workflowId)
  const run = await stack.client.runReaching(token, runId, ['SUCCESS'], { timeoutMs: 60_000, intervalMs: 10 })
  return Date.parse(run.completedAt!) - Date.parse(run.createdAt)
}
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

t.test('a member\'s slow runs hold at most their share of a worker\'s slots while the admin\'s runs wait: the admin\'s runs stay within 2× their idle latency', async (t) => {
  const quick = await stack.client.createWorkflow(adminToken, { name: 'quick', nodes: [{ id: 'n', type: 'set', config: { values: { ok: true } } }] })
  const slow = await stack.client.createWorkflow(member.token, {
    name: 'slow',
    nodes: [{ id: 'call', type: 'http_request', config: { url: `${sink.url}/slow/{{triggerData.n}}`, timeoutMs: 30_000 } }]
  })
  const idle: number[] = []
  for (let i = 0; i < 5; i++) idle.push(await runLatency(adminToken, quick))

  await Promise.all(Array.from({ length: 60 }, async (_, n) => await stack.client.fire(member.token, slow, { n })))
  await waitFor(async () => sink.inFlight() >= SLOTS / 2 ? true : undefined, { what: 'the member\'s calls in flight' })
  const busy: number[] = []
  for (let i = 0; i < 5; i++) busy.push(await runLatency(adminToken, quick))
  const inFlight = sink.inFlight()

  t.comment(`admin's run: idle median ${median(idle)} ms (${idle.join(', ')}); with the member's 60 slow runs queued, slowest ${Math.max(...busy)} ms (${busy.join(', ')}); member calls in flight ${inFlight}`)
  t.ok(inFlight <= SLOTS / 2, `the member holds at most half the worker's ${SLOTS} slots (${inFlight})`)
  // The floor keeps a few milliseconds of a busy machine from deciding, and the median one run's hiccup (a
  // collection, a slow fsync: 119 ms once among 23–30 on a slow machine); a run that waited for a slot would
  // wait for a member's 3 s call, which the bound on each run catches.
  t.ok(median(busy) <= 2 * median(idle) + 50, 'the admin\'s runs within 2× their idle latency (median)')
  t.ok(Math.max(...busy) < 1000, 'none waited for a member\'s call')
  await waitFor(async () => sink.deliveries.filter((delivery) => delivery.path.startsWith('/slow/')).length === 60 ? true : undefined,
    { what: 'every member run to make its call', timeoutMs: 90_000 })
  t.pass('the member\'s held runs all ran')
})
