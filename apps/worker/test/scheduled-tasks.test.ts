import { sql } from 'drizzle-orm'
import t from 'tap'
import { createScheduleSync } from '@switchboard/core/schedules'
import type { Teardown } from '@switchboard/testing/teardown'
import { scheduledTasksProcessor } from '../src/processors/scheduled-tasks.ts'
import { createWorkerTestContext, takeJob, TOKEN } from './context.ts'

// The cron tick processor (processors/scheduled-tasks.ts) on the ticks a real job scheduler of the
// file's queue produces: a tick starts one run at its planned time, a stale tick starts none.
const context = await createWorkerTestContext(t)
const { db } = context.database
const queue = context.queues['scheduled-tasks']
const scheduleSync = createScheduleSync({ db, queue })
const processor = scheduledTasksProcessor(context)

const [owner] = await db.execute<{ id: string }>(sql`insert into users (id, email, password_hash) values ('owner', 'owner@example.com', 'x') returning id`)

/** An active CRON workflow of `cronExpression`, its scheduler registered as a save registers it. */
async function cronWorkflow (cronExpression: string): Promise<string> {
  const [row] = await db.execute<{ id: string }>(sql`
    insert into workflows (id, user_id, name, trigger_type, trigger_config, is_active)
    values (gen_random_uuid()::text, ${owner!.id}, 'ticker', 'CRON', ${JSON.stringify({ cronExpression })}::jsonb, true)
    returning id`)
  if (await scheduleSync.reconcile(row!.id) !== 'scheduled') throw new Error('the workflow was not scheduled')
  return row!.id
}

/** Takes the scheduler's next tick of `workflowId` now rather than at its time. */
async function takeTick (t: Teardown, workflowId: string) {
  const tick = (await queue.getDelayed()).find((job) => job.data.workflowId === workflowId)
  if (tick === undefined) throw new Error(`no tick of ${workflowId} scheduled`)
  await tick.promote()
  return await takeJob(t, context, 'scheduled-tasks')
}
const runsOf = async (workflowId: string) =>
  await db.execute<{ id: string, triggerData: { scheduledAt: string, cronExpression: string } }>(sql`select id, trigger_data as "triggerData" from runs where workflow_id = ${workflowId}`)

t.test('a tick starts one run with its planned time, once however often its job is worked', async (t) => {
  const workflowId = await cronWorkflow('0 * * * * *')
  const job = await takeTick(t, workflowId)
  const outcome = await processor(job, TOKEN)
  t.match(outcome, { created: true })
  const [run] = await runsOf(workflowId)
  t.same(outcome, { runId: run!.id, created: true })
  t.equal(run!.triggerData.cronExpression, '0 * * * * *')
  t.equal(new Date(run!.triggerData.scheduledAt).getTime() % 60_000, 0, 'the tick\'s planned minute, not when its job was taken')
  t.ok(await context.queues['workflow-runs'].getJob(run!.id), 'the run is queued')

  t.same(await processor(job, TOKEN), { runId: run!.id, created: false }, 'a retried tick starts nothing more')
  t.equal((await runsOf(workflowId)).length, 1)
})

t.test('a tick of an expression the workflow no longer has starts nothing and puts its scheduler right', async (t) => {
  const workflowId = await cronWorkflow('*/5 * * * *')
  await queue.upsertJobScheduler(workflowId, { pattern: '* * * * *', tz: 'UTC' }, { name: 'tick', data: { workflowId } })
  const job = await takeTick(t, workflowId)
  t.same(await processor(job, TOKEN), { skipped: 'stale' })
  t.same(await runsOf(workflowId), [])
  t.match(await queue.getJobScheduler(workflowId), { pattern: '*/5 * * * *' })
})
