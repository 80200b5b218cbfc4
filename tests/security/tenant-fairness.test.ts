import t from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { runForeachBurst, runsAtOnce } from '@switchboard/testing/in-flight'
import { waitFor } from '@switchboard/testing/wait'

// One tenant's load must not slow another's work down, nor pass its own quota (README, Quotas:
// Fair scheduling): event deliveries to hanging subscribers, endless code in the sandbox, and a
// burst of child runs against `runsInFlight`. Each tenant is a user of its own; the one measured
// used the queue (or the sandbox) first, as in fair-share.test.ts.
const SLOTS = 20
const sink = await startDeliverySink(t, { held: (path) => path.startsWith('/hang/') })
// Endless code ends after CODE_CPU_MS: half the default keeps the test short, and a script still takes
// ten times another user's whole run.
const CPU_MS = 500
const stack = await startStack(t, { env: { WORKER_CONCURRENCY: String(SLOTS), HTTP_REQUEST_ALLOW_PRIVATE: 'true', CODE_CPU_MS: String(CPU_MS) } })
const adminToken = await stack.adminToken()
const database = createDatabase(stack.env.DATABASE_URL!, { max: 1 })
t.teardown(database.close)
const { sql } = database

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const received = (prefix: string): number => sink.deliveries.filter((delivery) => delivery.path.startsWith(prefix)).length

/** Milliseconds from the fire's answer to the run's SUCCESS, read from the run (server clocks). */
async function runLatency (token: string, workflowId: string): Promise<number> {
  const run = await stack.client.runReaching(token, await stack.client.fire(token, workflowId), ['SUCCESS', 'FAILED'], { intervalMs: 10 })
  if (run.status !== 'SUCCESS') throw new Error(`run ${run.id} ${run.status}: ${run.error}`)
  return Date.parse(run.completedAt!) - Date.parse(run.createdAt)
}

async function subscribe (token: string, path: string): Promise<void> {
  const created = await stack.call('POST', '/api/automation/subscriptions', { token, body: { url: `${sink.url}${path}`, events: ['workflow.run.succeeded'] } })
  if (created.status !== 201) throw new Error(`subscription: ${created.status} ${JSON.stringify(created.body)}`)
}

t.test('a member\'s hanging subscribers hold at most their share of a worker\'s delivery slots: another user\'s delivery goes first, and theirs come later', async (t) => {
  const quiet = await stack.client.newUser(adminToken)
  const member = await stack.client.newUser(adminToken)
  const quick = await stack.client.createWorkflow(quiet.token, { name: 'quick' })
  await subscribe(quiet.token, '/quiet')
  /** Milliseconds from firing a run of `quick` to its delivery reaching the subscriber. */
  const deliveryLatency = async (): Promise<number> => {
    const before = received('/quiet')
    const fired = Date.now()
    await stack.client.fire(quiet.token, quick)
    await waitFor(async () => received('/quiet') > before ? true : undefined, { what: 'the quiet user\'s delivery', timeoutMs: 5000, intervalMs: 5 })
    return sink.deliveries.filter((delivery) => delivery.path.startsWith('/quiet')).at(-1)!.receivedAt - fired
  }
  const idle: number[] = []
  for (let i = 0; i < 5; i++) idle.push(await deliveryLatency())

  // 24 subscriptions to a URL that never answers, 3 events: 72 deliveries, each holding its slot for EVENT_DELIVERY_TIMEOUT_MS.
  for (let i = 0; i < 24; i++) await subscribe(member.token, `/hang/${i}`)
  const noisy = await stack.client.createWorkflow(member.token, { name: 'noisy' })
  for (let i = 0; i < 3; i++) await stack.client.fire(member.token, noisy)
  await waitFor(async () => received('/hang/') >= SLOTS / 2 ? true : undefined, { what: 'the member\'s deliveries in flight' })
  const busy: number[] = []
  for (let i = 0; i < 5; i++) busy.push(await deliveryLatency())
  const memberStarted = received('/hang/')

  t.comment(`quiet user's delivery: idle median ${median(idle)} ms (${idle.join(', ')}); with the member's 72 hanging deliveries queued, slowest ${Math.max(...busy)} ms (${busy.join(', ')}), ${(Math.max(...busy) / median(idle)).toFixed(1)}× idle; member deliveries started ${memberStarted}`)
  t.ok(Math.max(...busy) < 1000, 'each of the quiet user\'s deliveries reaches its subscriber within 1 s')
  t.ok(memberStarted <= SLOTS / 2, `the quiet user's deliveries went before the member's held ones: ${memberStarted} of 72 started, at most half the ${SLOTS} slots`)

  sink.release()
  await waitFor(async () => received('/hang/') === 72 && sink.deliveries.every((delivery) => delivery.answered) ? true : undefined,
    { what: 'every one of the member\'s deliveries to be made', timeoutMs: 30_000 })
  t.pass('the member\'s held deliveries were all made')
})

t.test('a member\'s endless code holds at most its share of the sandbox threads: another user\'s code node runs first', async (t) => {
  const quiet = await stack.client.newUser(adminToken)
  const member = await stack.client.newUser(adminToken)
  const small = await stack.client.createWorkflow(quiet.token, { name: 'small code', nodes: [{ id: 'js', type: 'code', config: { code: 'return 1' } }] })
  const endless = await stack.client.createWorkflow(member.token, { name: 'endless', nodes: [{ id: 'js', type: 'code', config: { code: 'while (true) {}' } }] })
  // Both threads started (they start with the first code they run), as on a worker that has been running code.
  await Promise.all([runLatency(quiet.token, small), runLatency(quiet.token, small)])
  const idle: number[] = []
  for (let i = 0; i < 5; i++) idle.push(await runLatency(quiet.token, small))

  const endlessRuns = await Promise.all(Array.from({ length: 30 }, async () => await stack.client.fire(member.token, endless)))
  const ended = async (): Promise<number> => (await sql`select count(*)::int as ended from runs where workflow_id = ${endless} and status = 'FAILED'`)[0]!.ended as number
  // The sandbox is busy with the member's code: its first run ran out of time, the others wait.
  await waitFor(async () => await ended() >= 1 ? true : undefined, { what: 'the member\'s first run to end', timeoutMs: 10_000 })
  const busy: number[] = []
  for (let i = 0; i < 5; i++) busy.push(await runLatency(quiet.token, small))
  const endedMeanwhile = await ended()

  t.comment(`quiet user's code run: idle median ${median(idle)} ms (${idle.join(', ')}); with the member's 30 endless runs queued, slowest ${Math.max(...busy)} ms (${busy.join(', ')}), ${(Math.max(...busy) / median(idle)).toFixed(1)}× idle; member runs ended meanwhile ${endedMeanwhile}`)
  t.ok(Math.max(...busy) < 1000, 'each of the quiet user\'s code runs ends within 1 s')
  t.ok(endedMeanwhile < 10, `the quiet user's 5 runs went before most of the member's queued code (${endedMeanwhile} of 30 ended meanwhile)`)

  await Promise.all(endlessRuns.map(async (runId) => await stack.call('POST', `/api/automation/runs/${runId}/cancel`, { token: member.token })))
  await Promise.all(endlessRuns.map(async (runId) => await stack.client.runReaching(member.token, runId, ['FAILED', 'CANCELLED'], { timeoutMs: 30_000 })))
})

t.test('runsInFlight holds under a burst: a foreach of 60 items at a concurrency of 60 never has more than the quota running', async (t) => {
  const QUOTA = 3
  const ITEMS = 60
  const calls = await startDeliverySink(t, { delayMs: () => 100 })
  const { run, itemWorkflowId } = await runForeachBurst(stack.client, adminToken, { quota: QUOTA, items: ITEMS, concurrency: ITEMS, callUrl: calls.url })
  t.equal(run.status, 'SUCCESS', run.error ?? '')

  const { runs, most } = await runsAtOnce(sql, itemWorkflowId)
  t.comment(`children running at once: at most ${most} (database), ${calls.maxInFlight()} calls in flight (receiver)`)
  t.equal(runs, ITEMS, 'every item ran: the held runs came later')
  t.ok(most <= QUOTA, `at most ${QUOTA} of the member's runs ran at once (${most})`)
  t.ok(calls.maxInFlight() <= QUOTA, 'at most the quota of calls in flight at once')
})
