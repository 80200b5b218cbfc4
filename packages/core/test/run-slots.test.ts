import { DelayedError, Worker } from 'bullmq'
import { asc, eq, inArray } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { REDIS_URL } from '@switchboard/testing/database'
import { startDeliverySink, type Delivery } from '@switchboard/testing/delivery-sink'
import { createTestEngine } from '@switchboard/testing/engine'
import { waitFor } from '@switchboard/testing/wait'
import { runs, runSlots, users, workflows, type WorkflowNode } from '../src/db/schema/index.ts'
import { createLogger } from '../src/logger.ts'
import { RUN_JOB, runJobId, WORKFLOW_RUNS, type RunJobData } from '../src/queues/catalog.ts'
import { createWorkerConnection } from '../src/queues/connections.ts'
import { createReconciler } from '../src/engine/reconciler.ts'
import { wakeWaitingRuns } from '../src/engine/slots.ts'

/**
 * maxConcurrentRuns (engine/slots.ts), driven through BullMQ workers in this process that do what
 * the worker's run processor does: runs beyond the limit wait PENDING with their jobs held,
 * start oldest first when a slot frees, and a WAITING run gives its slot back.
 */

const { db, queues, queuePrefix } = await createCoreTestContext(t)
const logger = createLogger('silent', 'run-slots-test')

/** A slow receiver: every call is answered after `holdMs` (by the path's first segment, its tag). */
const holdMs = new Map<string, number>()
const sink = await startDeliverySink(t, { delayMs: (path) => holdMs.get(path.split('/')[1]!) ?? 300 })
/** The most calls in flight at once among those the sink holds (each test empties it first). */
const maxInFlight = (): number => Math.max(0, ...sink.deliveries.map((call) =>
  sink.deliveries.filter((other) => other.receivedAt <= call.receivedAt && (other.answeredAt ?? Infinity) > call.receivedAt).length))

const engine = createTestEngine(t, { db, queues })

/** Two workers of five jobs each, processing as apps/worker's run processor does. */
const connections = [createWorkerConnection(REDIS_URL), createWorkerConnection(REDIS_URL)]
const workers = connections.map((connection) => new Worker<RunJobData>(WORKFLOW_RUNS, async (job, token, signal) => {
  const outcome = await engine.executeRun(job.data.runId, signal, { job, hold: async (until) => { await job.moveToDelayed(until, token) } })
  if (outcome === 'HELD') throw new DelayedError()
  return outcome
}, { connection, prefix: queuePrefix, concurrency: 5 }))
t.teardown(async () => {
  await Promise.all(workers.map(async (worker) => { await worker.close() }))
  for (const connection of connections) connection.disconnect()
})

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()

async function workflow (maxConcurrentRuns: number | null, nodes: WorkflowNode[]): Promise<string> {
  const [row] = await db.insert(workflows).values({ userId: owner!.id, name: 'limited', triggerType: 'MANUAL', isActive: true, nodes, maxConcurrentRuns }).returning()
  return row!.id
}

/** One slow call to the sink, `/<tag>/<n>`. */
const slowCall = (tag: string): WorkflowNode[] => [{ id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/${tag}/{{triggerData.n}}` } }]

/** A PENDING run created now (each a little after the one before, so creation order is defined). */
async function pendingRun (workflowId: string, n: number): Promise<string> {
  const [row] = await db.insert(runs).values({ workflowId, userId: owner!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData: { n } }).returning()
  return row!.id
}

const enqueue = async (runIds: string[]): Promise<void> => {
  for (const runId of runIds) await queues[WORKFLOW_RUNS].add(RUN_JOB, { runId }, { jobId: runJobId(runId) })
}
const statuses = async (runIds: string[]) => {
  const rows = await db.select({ id: runs.id, status: runs.status }).from(runs).where(inArray(runs.id, runIds))
  return runIds.map((id) => rows.find((row) => row.id === id)!.status)
}
const allEnded = (runIds: string[]) => async () => (await statuses(runIds)).every((status) => status === 'SUCCESS' || status === 'FAILED') ? true : undefined
const callsTo = (tag: string): Delivery[] => sink.deliveries.filter((call) => call.path.startsWith(`/${tag}/`))

t.test('at most maxConcurrentRuns execute at once across two workers; the runs beyond wait PENDING and start oldest first, whatever order their jobs came in', async (t) => {
  sink.deliveries.length = 0
  // Calls long enough that the first two still hold their slots while the eight others are held, on a loaded machine too.
  holdMs.set('order', 1000)
  const workflowId = await workflow(2, slowCall('order'))
  const runIds: string[] = []
  for (let n = 1; n <= 10; n++) runIds.push(await pendingRun(workflowId, n))
  // The first two take the slots; the eight others arrive newest first.
  await enqueue(runIds.slice(0, 2))
  await waitFor(async () => callsTo('order').length === 2 ? true : undefined, { what: 'the first two calls' })
  await enqueue(runIds.slice(2).reverse())
  await waitFor(async () => (await db.select().from(runSlots).where(eq(runSlots.state, 'waiting'))).length === 8 ? true : undefined, { what: 'eight runs waiting' })
  t.same((await statuses(runIds)).slice(2), Array(8).fill('PENDING'), 'the runs beyond the limit wait PENDING')
  // A run's slot row says it waits a moment before its job is moved to delayed.
  await waitFor(async () => await queues[WORKFLOW_RUNS].getDelayedCount() === 8 ? true : undefined, { what: 'their jobs held (delayed)' })

  // The reconciler leaves them alone: their jobs are live, nothing is re-enqueued or failed.
  const reconciler = createReconciler({ db, queues, logger, engine, graceMs: 0 })
  const report = await reconciler.reconcile()
  t.same([report.requeued, report.failed, report.woken], [0, 0, 0], 'no requeue storm, no failure, no slot to give')

  await waitFor(allEnded(runIds), { timeoutMs: 30_000, what: 'every run to end' })
  t.same(await statuses(runIds), Array(10).fill('SUCCESS'))
  t.ok(maxInFlight() <= 2, `at most 2 calls at once (saw ${maxInFlight()})`)
  const called = callsTo('order').map((call) => Number(call.path.split('/')[2]))
  t.same(called.slice(0, 2).sort(), [1, 2], 'the first two took the slots')
  // Two held runs woken together (both slots freed at once) race to the sink, so each may be one place off; a run
  // that overtook one created two or more places earlier took no slot in order (tests/e2e/workflow-limits.test.ts too).
  t.same([...called.slice(2)].sort((a, b) => a - b), [3, 4, 5, 6, 7, 8, 9, 10])
  t.ok(called.every((n, i) => Math.abs(n - 1 - i) < 2), `runs 3 to 10 called in creation order, give or take runs woken together (${called.join(', ')})`)
  const started = await db.select({ id: runs.id, startedAt: runs.startedAt }).from(runs).where(inArray(runs.id, runIds)).orderBy(asc(runs.startedAt))
  t.ok(started.every((row, i) => Math.abs(runIds.indexOf(row.id) - i) < 2), 'and started in creation order, give or take the same')

  // Latency from a slot freed (a call answered) to the next run's call, for the held runs.
  const order = callsTo('order')
  const latencies = order.slice(2).map((call, i) => call.receivedAt - order[i]!.answeredAt!).filter((ms) => ms >= 0)
  t.comment(`slot freed → next held run's call: median ${latencies.sort((a, b) => a - b)[Math.floor(latencies.length / 2)]} ms, max ${Math.max(...latencies)} ms`)
  t.ok(Math.max(...latencies) < 2000, 'woken by the run that freed the slot, not by the held job\'s own recheck (5 min)')
})

t.test('a run WAITING at a wait node gives its slot back and takes one again when it resumes', async (t) => {
  sink.deliveries.length = 0
  holdMs.set('long', 1500)
  const waitsFirst = await workflow(1, [])
  // One workflow, limit 1: the first run waits 1 s, then calls; the second calls for 1.5 s meanwhile.
  await db.update(workflows).set({
    nodes: [
      { id: 'branch', type: 'condition', config: { field: 'triggerData.n', operator: 'equals', value: 1, then: 'pause', else: 'long' } },
      { id: 'pause', type: 'wait', config: { seconds: 1 }, next: 'short' },
      { id: 'short', type: 'http_request', config: { method: 'POST', url: `${sink.url}/short/{{triggerData.n}}` } },
      { id: 'long', type: 'http_request', config: { method: 'POST', url: `${sink.url}/long/{{triggerData.n}}` } }
    ]
  }).where(eq(workflows.id, waitsFirst))
  const first = await pendingRun(waitsFirst, 1)
  await enqueue([first])
  await waitFor(async () => (await statuses([first]))[0] === 'WAITING' ? true : undefined, { what: 'the first run to wait' })
  const second = await pendingRun(waitsFirst, 2)
  await enqueue([second])
  await waitFor(allEnded([first, second]), { timeoutMs: 30_000, what: 'both runs to end' })

  t.same(await statuses([first, second]), ['SUCCESS', 'SUCCESS'])
  const long = callsTo('long')[0]!
  const short = callsTo('short')[0]!
  t.ok(long.receivedAt < short.receivedAt, 'the second run started while the first waited')
  t.ok(short.receivedAt >= long.answeredAt!, 'the first resumed only once the second ended (its resume waited for the slot)')
  t.equal(maxInFlight(), 1)
})

t.test('a wake that was lost (the worker died right after its run ended) is given by the reconciler; a limit removed lets every waiting run go', async (t) => {
  holdMs.set('lost', 1000)
  const workflowId = await workflow(1, slowCall('lost'))
  // A run that took the slot on a worker that then died: RUNNING, holding the slot, nobody executing it.
  const [blocking] = await db.insert(runs).values({ workflowId, userId: owner!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, status: 'RUNNING', startedAt: new Date(), claim: 1 }).returning()
  await db.insert(runSlots).values({ runId: blocking!.id, workflowId, runCreatedAt: blocking!.createdAt, state: 'holding', claim: 0 })
  const waiting = [await pendingRun(workflowId, 2), await pendingRun(workflowId, 3)]
  await enqueue(waiting)
  await waitFor(async () => (await db.select().from(runSlots).where(inArray(runSlots.runId, waiting))).filter((row) => row.state === 'waiting').length === 2 ? true : undefined, { what: 'two runs waiting' })

  // Its end was written, and the worker died before it woke anyone.
  await db.update(runs).set({ status: 'SUCCESS', completedAt: new Date() }).where(eq(runs.id, blocking!.id))
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.same(await statuses(waiting), ['PENDING', 'PENDING'], 'still waiting: nothing woke them')
  const reconciler = createReconciler({ db, queues, logger, engine })
  t.equal((await reconciler.reconcile()).woken, 1, 'the reconciler gives the free slot to the oldest')
  await waitFor(async () => callsTo('lost').length === 1 ? true : undefined, { what: 'the second run to call' })
  t.equal(callsTo('lost')[0]!.path, '/lost/2')
  t.same(await statuses(waiting), ['RUNNING', 'PENDING'], 'one at a time')

  // No limit any more: the third goes at once, beside the second.
  await db.update(workflows).set({ maxConcurrentRuns: null }).where(eq(workflows.id, workflowId))
  t.equal(await wakeWaitingRuns({ db, queues }, workflowId), 1)
  await waitFor(async () => callsTo('lost').length === 2 ? true : undefined, { what: 'the third run to call' })
  t.equal(callsTo('lost')[1]!.path, '/lost/3')
  t.equal(callsTo('lost')[0]!.answeredAt, undefined, 'while the second still ran')
  await waitFor(allEnded(waiting), { what: 'both to end' })
})

t.test('the reconciler\'s wake pass reaches every workflow with waiting runs, a batch a pass, not the same batch every pass', async (t) => {
  // Three workflows whose one slot is taken, each with a run waiting (rightly), and a fourth, last
  // in id order, whose waiting run lost its wake while its slot is free.
  const limited = async (id: string): Promise<void> => {
    await db.insert(workflows).values({ id, userId: owner!.id, name: id, triggerType: 'MANUAL', isActive: true, nodes: slowCall('wake'), maxConcurrentRuns: 1 })
  }
  const slotted = async (workflowId: string, state: 'holding' | 'waiting'): Promise<string> => {
    const [row] = await db.insert(runs).values({ workflowId, userId: owner!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData: { n: 0 }, status: state === 'holding' ? 'RUNNING' : 'PENDING', claim: 1 }).returning()
    await db.insert(runSlots).values({ runId: row!.id, workflowId, runCreatedAt: row!.createdAt, state, claim: 1 })
    return row!.id
  }
  for (const id of ['wake-a', 'wake-b', 'wake-c']) {
    await limited(id)
    await slotted(id, 'holding')
    await slotted(id, 'waiting')
  }
  await limited('wake-z')
  const lost = await slotted('wake-z', 'waiting')
  const reconciler = createReconciler({ db, queues, logger, engine, graceMs: 0, batchSize: 3, runningAfterMs: 3_600_000 })
  const woken: number[] = []
  for (let pass = 0; pass < 3; pass++) woken.push((await reconciler.reconcile()).woken)
  t.same(woken.reduce((a, b) => a + b, 0), 1, `one run woken in three passes (${woken.join(', ')})`)
  t.ok(await queues[WORKFLOW_RUNS].getJob(runJobId(lost)), 'the run whose wake was lost has its job')
})
