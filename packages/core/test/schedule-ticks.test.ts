import t from 'tap'
import { eq } from 'drizzle-orm'
import { createCoreTestContext } from '@switchboard/testing/context'
import { runs, users, workflows, workflowSchedules } from '../src/db/schema/index.ts'
import { SCHEDULED_TASKS } from '../src/queues/catalog.ts'
import { createScheduleSync } from '../src/schedules/sync.ts'
import { handleTick } from '../src/triggers/cron.ts'

const { db, queues } = await createCoreTestContext(t)
const queue = queues[SCHEDULED_TASKS]

const scheduleSync = createScheduleSync({ db, queue })
const deps = { db, queues, scheduleSync }
const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x', role: 'member' }).returning()

async function cronWorkflow (cronExpression: string) {
  const [workflow] = await db.insert(workflows)
    .values({ userId: owner!.id, name: 'ticker', triggerType: 'CRON', triggerConfig: { cronExpression }, isActive: true })
    .returning()
  await db.transaction(async (tx) => { await scheduleSync.onSaved(workflow!, tx) })
  return workflow!
}

t.test('a repeated tick starts one run and records the tick on the schedule', async (t) => {
  const workflow = await cronWorkflow('0 * * * * *')
  const scheduledAt = new Date(Math.floor(Date.now() / 60_000) * 60_000)
  const tick = { workflowId: workflow.id, scheduledAt, cronExpression: '0 * * * * *', timezone: 'UTC' }

  const first = await handleTick(deps, tick)
  const again = await handleTick(deps, tick)
  t.match(first, { created: true })
  t.same(again, { runId: (first as { runId: string }).runId, created: false })

  const stored = await db.select().from(runs).where(eq(runs.workflowId, workflow.id))
  t.equal(stored.length, 1)
  t.same(stored[0]!.triggerData, { scheduledAt: scheduledAt.toISOString(), cronExpression: '0 * * * * *' })
  t.equal((await queues['workflow-runs'].getJob(stored[0]!.id))?.data.runId, stored[0]!.id, 'the run is queued')

  const [schedule] = await db.select().from(workflowSchedules).where(eq(workflowSchedules.workflowId, workflow.id))
  t.same(schedule!.lastRunAt, scheduledAt)
  t.ok(schedule!.nextRunAt! > scheduledAt)

  // A late tick for an earlier time does not move lastRunAt back.
  await handleTick(deps, { ...tick, scheduledAt: new Date(scheduledAt.getTime() - 60_000) })
  const [after] = await db.select().from(workflowSchedules).where(eq(workflowSchedules.workflowId, workflow.id))
  t.same(after!.lastRunAt, scheduledAt)
})

t.test('a tick of an old expression starts nothing and re-registers the current one', async (t) => {
  const workflow = await cronWorkflow('*/5 * * * *')
  await queue.upsertJobScheduler(workflow.id, { pattern: '* * * * *', tz: 'UTC' }, { name: 'tick', data: { workflowId: workflow.id } })

  const outcome = await handleTick(deps, { workflowId: workflow.id, scheduledAt: new Date(), cronExpression: '* * * * *', timezone: 'UTC' })
  t.same(outcome, { skipped: 'stale' })
  t.same(await db.select().from(runs).where(eq(runs.workflowId, workflow.id)), [])
  t.match(await queue.getJobScheduler(workflow.id), { pattern: '*/5 * * * *', tz: 'UTC' })
})

t.test('a tick of a deleted or deactivated workflow removes its scheduler', async (t) => {
  for (const retire of [
    async (id: string) => { await db.delete(workflows).where(eq(workflows.id, id)) },
    async (id: string) => { await db.update(workflows).set({ isActive: false }).where(eq(workflows.id, id)) }
  ]) {
    const workflow = await cronWorkflow('* * * * *')
    await retire(workflow.id)
    const outcome = await handleTick(deps, { workflowId: workflow.id, scheduledAt: new Date(), cronExpression: '* * * * *', timezone: 'UTC' })
    t.same(outcome, { skipped: 'stale' })
    t.equal(await queue.getJobScheduler(workflow.id), undefined)
    t.same(await db.select().from(workflowSchedules).where(eq(workflowSchedules.workflowId, workflow.id)), [])
  }
})
