import { DelayedError, UnrecoverableError } from 'bullmq'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { startRun } from '@switchboard/core/runs'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { waitFor } from '@switchboard/testing/wait'
import { runProcessor } from '../src/processors/workflow-runs.ts'
import { createWorkerTestContext, takeJob, TOKEN } from './context.ts'

// The run processor (processors/workflow-runs.ts) on a real job of the file's queue: the run it
// names is executed to its end in the database, and a run beyond its workflow's slots is held.
const context = await createWorkerTestContext(t, { HTTP_REQUEST_ALLOW_PRIVATE: 'true' })
const { db } = context.database
const processor = runProcessor(context)

/** Calls to `/held` are answered once the test releases them, and at once after that. */
const sink = await startDeliverySink(t, { held: (path) => path === '/held' })

const [owner] = await db.execute<{ id: string }>(sql`insert into users (id, email, password_hash) values ('owner', 'owner@example.com', 'x') returning id`)

/** A MANUAL workflow of `nodes`, at most `maxConcurrentRuns` of its runs executing at once. */
async function workflow (nodes: unknown[], maxConcurrentRuns: number | null = null) {
  const [row] = await db.execute<{ id: string, userId: string, triggerType: 'MANUAL' }>(sql`
    insert into workflows (id, user_id, name, trigger_type, is_active, nodes, max_concurrent_runs)
    values (gen_random_uuid()::text, ${owner!.id}, 'wf', 'MANUAL', true, ${JSON.stringify(nodes)}::jsonb, ${maxConcurrentRuns})
    returning id, user_id as "userId", trigger_type as "triggerType"`)
  return row!
}
const start = async (target: { id: string, userId: string, triggerType: 'MANUAL' }): Promise<string> =>
  (await startRun({ db, queues: context.queues }, { workflow: target, triggerData: { name: 'Ada' } })).runId
const readRun = async (id: string) => (await db.execute<{ status: string, result: unknown }>(sql`select status, result from runs where id = ${id}`))[0]!

t.test('a run\'s job executes the run to its end: SUCCESS in the database, the outcome returned', async (t) => {
  const runId = await start(await workflow([{ id: 'greet', type: 'set', config: { values: { greeting: 'Hello {{triggerData.name}}' } } }]))
  const job = await takeJob(t, context, 'workflow-runs')
  t.equal(job.data.runId, runId)
  t.same(await processor(job, TOKEN), { outcome: 'SUCCESS' })
  const row = await readRun(runId)
  t.equal(row.status, 'SUCCESS')
  t.match(row.result, { greet: { greeting: 'Hello Ada' } })
})

t.test('a run beyond its workflow\'s maxConcurrentRuns: its job is moved to delayed, the run left PENDING', async (t) => {
  const limited = await workflow([{ id: 'call', type: 'http_request', config: { url: `${sink.url}/held`, timeoutMs: 30_000 } }], 1)
  const first = await start(limited)
  const firstOutcome = processor(await takeJob(t, context, 'workflow-runs'), TOKEN)
  await waitFor(async () => sink.inFlight() === 1 ? true : undefined, { what: 'the first run to hold its slot' })

  const second = await start(limited)
  const job = await takeJob(t, context, 'workflow-runs')
  t.equal(job.data.runId, second)
  await t.rejects(processor(job, TOKEN), DelayedError, 'the processor hands the job back to BullMQ as delayed')
  t.equal(await job.getState(), 'delayed')
  t.equal((await readRun(second)).status, 'PENDING')

  sink.release()
  t.same(await firstOutcome, { outcome: 'SUCCESS' })
  t.equal((await readRun(first)).status, 'SUCCESS')
  const woken = await takeJob(t, context, 'workflow-runs')
  t.equal(woken.data.runId, second, 'the slot freed wakes the held job')
  t.same(await processor(woken, TOKEN), { outcome: 'SUCCESS' })
  t.equal((await readRun(second)).status, 'SUCCESS')
})

t.test('a job without a runId fails for good', async (t) => {
  await context.queues['workflow-runs'].add('run', { runId: '' })
  const job = await takeJob(t, context, 'workflow-runs')
  await t.rejects(processor(job, TOKEN), UnrecoverableError)
})
