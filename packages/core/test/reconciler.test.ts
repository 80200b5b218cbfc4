import { asc, eq, sql } from 'drizzle-orm'
import { Worker } from 'bullmq'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { REDIS_URL } from '@switchboard/testing/database'
import { createTestEngine } from '@switchboard/testing/engine'
import { events, idempotencyKeys, runs, runWaits, users, workflows, type WorkflowNode } from '../src/db/schema/index.ts'
import { createReconciler } from '../src/engine/reconciler.ts'
import { claimOwnerId } from '../src/engine/run-store.ts'
import { createLogger } from '../src/logger.ts'
import { AGENT_EXECUTION, resumeJobId, runJobId, takeoverJobId, WORKFLOW_RUNS } from '../src/queues/catalog.ts'
import { createWorkerConnection } from '../src/queues/connections.ts'
import { startRun } from '../src/runs/start.ts'

const { db, queues } = await createCoreTestContext(t)
const logger = createLogger('silent', 'reconciler-test')
const dispatched: string[] = []
const engine = createTestEngine(t, { db, queues, dispatchEvents: async (eventIds) => { dispatched.push(...eventIds) } })
// No grace: every unfinished run is examined at once.
const reconciler = createReconciler({ db, queues, logger, engine, graceMs: 0, runningAfterMs: 0 })

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()
const nodes: WorkflowNode[] = [{ id: 'pause', type: 'wait', config: { seconds: 5 } }]
const [manual] = await db.insert(workflows).values({ userId: owner.id, name: 'm', triggerType: 'MANUAL', isActive: true, nodes }).returning()
const [agent] = await db.insert(workflows).values({ userId: owner.id, name: 'a', triggerType: 'AGENT', isActive: true, nodes }).returning()

async function run (values: Partial<typeof runs.$inferInsert> = {}): Promise<string> {
  const [row] = await db.insert(runs).values({ workflowId: manual.id, userId: owner.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData: {}, ...values }).returning()
  return row.id
}

const stateOf = async (jobId: string, queue = queues[WORKFLOW_RUNS]): Promise<string> => await queue.getJobState(jobId)

t.test('a PENDING run whose job failed for good (database down through every attempt) gets the job retried', async (t) => {
  const runId = await run()
  await queues[WORKFLOW_RUNS].add('run', { runId }, { jobId: runId, attempts: 1 })
  const connection = createWorkerConnection(REDIS_URL)
  const consumer = new Worker(WORKFLOW_RUNS, undefined, { connection, prefix: queues[WORKFLOW_RUNS].opts.prefix })
  t.teardown(async () => {
    await consumer.close()
    connection.disconnect()
  })
  const job = await consumer.getNextJob('token')
  t.equal(job?.id, runId)
  await job?.moveToFailed(new Error('database down'), 'token', false)
  t.equal(await stateOf(runId), 'failed')

  t.equal((await reconciler.reconcile()).requeued, 1)
  t.equal(await stateOf(runId), 'waiting')
})

t.test('a PENDING run without a job is enqueued once, on its trigger type\'s queue', async (t) => {
  const lost = await run()
  const [agentRun] = await db.insert(runs).values({ workflowId: agent.id, userId: owner.id, queue: AGENT_EXECUTION, workflowVersion: 1, triggerData: {} }).returning()
  const queued = await run()
  await queues[WORKFLOW_RUNS].add('run', { runId: queued }, { jobId: queued })

  const report = await reconciler.reconcile()
  t.equal(report.requeued, 2)
  t.equal(await stateOf(lost), 'waiting')
  t.same((await queues[WORKFLOW_RUNS].getJob(lost))?.data, { runId: lost })
  t.equal(await stateOf(agentRun.id, queues[AGENT_EXECUTION]), 'waiting')
  t.equal((await reconciler.reconcile()).requeued, 0, 'job ids are run ids: never enqueued twice')
})

t.test('a WAITING run past its time without a resume job gets it back; a future one is left alone', async (t) => {
  const past = new Date(Date.now() - 60_000).toISOString()
  const future = new Date(Date.now() + 60_000).toISOString()
  const due = await run({ status: 'WAITING', startedAt: new Date(), currentNodeId: 'pause', result: { triggerData: {}, pause: { until: past } } })
  const later = await run({ status: 'WAITING', startedAt: new Date(), currentNodeId: 'pause', result: { triggerData: {}, pause: { until: future } } })
  const report = await reconciler.reconcile()
  t.equal(report.resumed, 1)
  t.equal(await stateOf(resumeJobId(due, 'pause')), 'waiting')
  t.equal(await stateOf(resumeJobId(later, 'pause')), 'unknown')
})

t.test('a WAITING run whose approval was decided but not woken (Redis away then) is woken, not left to its timeout', async (t) => {
  const future = new Date(Date.now() + 3_600_000)
  const decided = await run({ status: 'WAITING', startedAt: new Date(), currentNodeId: 'ask', result: { triggerData: {}, ask: { until: future.toISOString() } } })
  const undecided = await run({ status: 'WAITING', startedAt: new Date(), currentNodeId: 'ask', result: { triggerData: {}, ask: { until: future.toISOString() } } })
  for (const [runId, decidedAt] of [[decided, new Date(Date.now() - 1000)], [undecided, null]] as const) {
    await db.insert(runWaits).values({ runId, nodeId: 'ask', userId: owner.id, tokenHash: `hash-${runId}`, expiresAt: future, decision: decidedAt === null ? null : 'approve', decidedAt })
  }
  const waiting = async () => (await queues[WORKFLOW_RUNS].getJobs(['waiting'])).map((job) => job.data.runId)
  await reconciler.reconcile()
  t.ok((await waiting()).includes(decided), 'the decided run has a wake')
  t.notOk((await waiting()).includes(undecided), 'the undecided one waits for its decision or its timeout')
})

t.test('a RUNNING run without a live job is taken over; one whose takeovers are spent fails', async (t) => {
  const orphan = await run({ status: 'RUNNING', startedAt: new Date(), currentNodeId: 'pause' })
  const alive = await run({ status: 'RUNNING', startedAt: new Date(), currentNodeId: 'pause' })
  await queues[WORKFLOW_RUNS].add('run', { runId: alive }, { jobId: alive })
  const spent = await run({ status: 'RUNNING', startedAt: new Date(), currentNodeId: 'pause', attempt: 3 })

  const report = await reconciler.reconcile()
  t.equal(await stateOf(takeoverJobId(orphan, 0)), 'waiting')
  t.equal(await stateOf(takeoverJobId(alive, 0)), 'unknown', 'a run whose job is queued is left alone')
  t.equal(report.failed, 1)
  const [row] = await db.select().from(runs).where(eq(runs.id, spent))
  t.equal(row.status, 'FAILED')
  t.equal(row.error, 'Run interrupted: its worker stopped 4 times')
  const [event] = await db.select().from(events).where(eq(events.id, dispatched.at(-1)!))
  t.match(event, { userId: owner.id, name: 'workflow.run.failed', payload: { runId: spent, workflowId: manual.id, error: 'Run interrupted: its worker stopped 4 times' } }, 'the failure wrote its event, then dispatched it')

  // The takeover job, executed, continues the run from its current node.
  t.equal(await engine.executeRun(orphan), 'WAITING')
  const [taken] = await db.select().from(runs).where(eq(runs.id, orphan))
  t.equal(taken.attempt, 1)
  t.equal((await reconciler.reconcile()).takenOver, 0, 'a taken-over run that is waiting is not touched')
})

t.test('a RUNNING run driven by the job that claimed it (a wake, whose id is BullMQ\'s own) is left alone until that job ends', async (t) => {
  const queue = queues[WORKFLOW_RUNS]
  const runId = await run({ status: 'RUNNING', startedAt: new Date(Date.now() - 3_600_000), currentNodeId: 'pause' })
  // First in line (lifo), before the jobs earlier tests left waiting.
  await queue.add('run', { runId, wake: true }, { deduplication: { id: `wake:${runId}` }, lifo: true })
  const connection = createWorkerConnection(REDIS_URL)
  const consumer = new Worker(WORKFLOW_RUNS, undefined, { connection, prefix: queue.opts.prefix })
  t.teardown(async () => {
    await consumer.close()
    connection.disconnect()
  })
  const wake = await consumer.getNextJob('token')
  t.same(wake?.data, { runId, wake: true })
  t.notOk(wake!.id!.includes(runId), 'the wake has an id that does not name the run')
  await db.update(runs).set({ claimOwner: claimOwnerId(wake!) }).where(eq(runs.id, runId))

  t.equal((await reconciler.reconcile()).takenOver, 0, 'its claiming job is active: the run is alive, however long ago it started')
  t.equal(await stateOf(takeoverJobId(runId, 0)), 'unknown')

  await wake!.moveToCompleted('WAITING', 'token', false)
  t.equal((await reconciler.reconcile()).takenOver, 1, 'that job ended without the run ending: taken over')
  t.equal(await stateOf(takeoverJobId(runId, 0)), 'waiting')
})

t.test('a run\'s jobs stay on the queue it was created on when its workflow leaves AGENT', async (t) => {
  const [switching] = await db.insert(workflows).values({ userId: owner.id, name: 's', triggerType: 'AGENT', isActive: true, nodes }).returning()
  const { runId } = await startRun({ db, queues }, { workflow: switching, triggerData: {} })
  t.equal(await stateOf(runJobId(runId), queues[AGENT_EXECUTION]), 'waiting', 'started on agent-execution')
  // The job is lost while the workflow becomes MANUAL.
  await queues[AGENT_EXECUTION].remove(runJobId(runId))
  await db.update(workflows).set({ triggerType: 'MANUAL' }).where(eq(workflows.id, switching.id))

  await reconciler.reconcile()
  t.equal(await stateOf(runJobId(runId), queues[AGENT_EXECUTION]), 'waiting', 'the PENDING run is re-enqueued on agent-execution')
  t.equal(await stateOf(runJobId(runId), queues[WORKFLOW_RUNS]), 'unknown', 'and not on workflow-runs')

  // Suspended at its wait node, the run's resume job goes to agent-execution too.
  t.equal(await engine.executeRun(runId), 'WAITING')
  const resume = resumeJobId(runId, 'pause')
  t.equal(await stateOf(resume, queues[AGENT_EXECUTION]), 'delayed')
  t.equal(await stateOf(resume, queues[WORKFLOW_RUNS]), 'unknown')

  // Past its time without the resume job, the reconciler puts it back on agent-execution.
  await queues[AGENT_EXECUTION].remove(resume)
  const past = new Date(Date.now() - 60_000).toISOString()
  await db.update(runs).set({ result: sql`jsonb_set(${runs.result}, '{pause,until}', to_jsonb(${past}::text))` }).where(eq(runs.id, runId))
  await reconciler.reconcile()
  t.equal(await stateOf(resume, queues[AGENT_EXECUTION]), 'waiting')
  t.equal(await stateOf(resume, queues[WORKFLOW_RUNS]), 'unknown')

  // RUNNING without a live job: the takeover job goes to agent-execution.
  await queues[AGENT_EXECUTION].remove(resume)
  await db.update(runs).set({ status: 'RUNNING' }).where(eq(runs.id, runId))
  await queues[AGENT_EXECUTION].remove(runJobId(runId))
  await reconciler.reconcile()
  t.equal(await stateOf(takeoverJobId(runId, 0), queues[AGENT_EXECUTION]), 'waiting')
  t.equal(await stateOf(takeoverJobId(runId, 0), queues[WORKFLOW_RUNS]), 'unknown')
})

t.test('idempotency keys past their 24 hours are purged in batches; younger ones stay', async (t) => {
  const ageHours = [25, 30, 48, 24 * 7, 25, 23, 1]
  for (const [i, hours] of ageHours.entries()) {
    const runId = await run({ status: 'SUCCESS' })
    await db.insert(idempotencyKeys).values({ workflowId: manual.id, key: `key-${i}-${hours}h`, runId, createdAt: sql`now() - ${`${hours} hours`}::interval` })
  }
  // Batches of two: the expired five take three statements.
  const purging = createReconciler({ db, queues, logger, engine, keyBatchSize: 2 })
  t.equal((await purging.reconcile()).purgedKeys, 5)
  const kept = await db.select({ key: idempotencyKeys.key }).from(idempotencyKeys).orderBy(asc(idempotencyKeys.key))
  t.same(kept.map((row) => row.key), ['key-5-23h', 'key-6-1h'])
  t.equal((await purging.reconcile()).purgedKeys, 0)
})
