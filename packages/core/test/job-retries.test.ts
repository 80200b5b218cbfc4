import { asc, eq } from 'drizzle-orm'
import { Worker, type Job } from 'bullmq'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { REDIS_URL } from '@switchboard/testing/database'
import { createTestEngine } from '@switchboard/testing/engine'
import { waitFor } from '@switchboard/testing/wait'
import { runLogs, runs, users, workflows } from '../src/db/schema/index.ts'
import { WORKFLOW_RUNS, type RunJobData } from '../src/queues/catalog.ts'
import { createWorkerConnection } from '../src/queues/connections.ts'
import { startRun } from '../src/runs/start.ts'
import { foldCounterDeltas } from '../src/workflows/counters.ts'
import type { Teardown } from '@switchboard/testing/teardown'

const { db, queues } = await createCoreTestContext(t)
const engine = createTestEngine(t, { db, queues })

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()
const [workflow] = await db.insert(workflows).values({
  userId: owner!.id,
  name: 'retried',
  triggerType: 'MANUAL',
  isActive: true,
  nodes: [{ id: 'only', type: 'set', config: { values: { done: 'yes' } } }]
}).returning()

/** A worker on the test's workflow-runs queue whose processor is `process`; resolves each job's outcome by job id. */
function consume (t: Teardown, process: (job: Job<RunJobData>) => Promise<unknown>) {
  const connection = createWorkerConnection(REDIS_URL)
  const worker = new Worker<RunJobData>(WORKFLOW_RUNS, process, { connection, prefix: queues[WORKFLOW_RUNS].opts.prefix })
  const settled = new Map<string, { returned?: unknown, failed?: string, attemptsMade: number }>()
  worker.on('completed', (job, returned) => { settled.set(job.id!, { returned, attemptsMade: job.attemptsMade }) })
  worker.on('failed', (job, err) => { if (job !== undefined && job.finishedOn !== undefined) settled.set(job.id!, { failed: err.message, attemptsMade: job.attemptsMade }) })
  t.teardown(async () => {
    await worker.close()
    connection.disconnect()
  })
  return async (jobId: string) => await waitFor(async () => settled.get(jobId), { what: `job ${jobId} to finish` })
}

const runStatus = async (runId: string) => (await db.select({ status: runs.status }).from(runs).where(eq(runs.id, runId)))[0]?.status
const logMessages = async (runId: string) =>
  (await db.select({ message: runLogs.message }).from(runLogs).where(eq(runLogs.runId, runId)).orderBy(asc(runLogs.id))).map((line) => line.message)

t.test('a run job that fails on a transient error is retried at once and the run completes', async (t) => {
  const finished = consume(t, async (job) => {
    if (job.attemptsMade === 0) throw new Error('connection terminated unexpectedly')
    return await engine.executeRun(job.data.runId)
  })
  const { runId } = await startRun({ db, queues }, { workflow: workflow!, triggerData: {} })
  const job = await finished(runId)
  t.same(job, { returned: 'SUCCESS', attemptsMade: 2 }, 'completed on its second attempt')
  t.equal(await runStatus(runId), 'SUCCESS')
})

t.test('a retried job of a run that already finished does nothing', async (t) => {
  const finished = consume(t, async (job) => {
    const outcome = await engine.executeRun(job.data.runId)
    // The run ended, then the job failed before BullMQ recorded it (Redis briefly away).
    if (job.attemptsMade === 0) throw new Error('Connection is closed.')
    return outcome
  })
  const { runId } = await startRun({ db, queues }, { workflow: workflow!, triggerData: {} })
  t.same(await finished(runId), { returned: 'SKIPPED', attemptsMade: 2 })
  t.equal(await runStatus(runId), 'SUCCESS')
  t.equal((await logMessages(runId)).filter((message) => message === 'Run started').length, 1, 'the run executed once')
  await foldCounterDeltas(db)
  t.equal((await db.select({ successCount: workflows.successCount }).from(workflows).where(eq(workflows.id, workflow!.id)))[0]?.successCount, 2, 'counted once per run')
})
