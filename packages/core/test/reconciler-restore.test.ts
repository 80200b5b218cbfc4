import { setTimeout as sleep } from 'node:timers/promises'
import { Worker } from 'bullmq'
import { eq } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { REDIS_URL } from '@switchboard/testing/database'
import { deleteQueuePrefix } from '@switchboard/testing/redis'
import { chatDeliveryRequeue } from '../src/chat/inbound.ts'
import { chatDeliveriesRepository } from '../src/chat/deliveries-repository.ts'
import { chatDeliveries, runs, users, workflows } from '../src/db/schema/index.ts'
import { createLogger } from '../src/logger.ts'
import { ASSISTANT_MAIN, runJobId, SCHEDULED_TASKS, WORKFLOW_RUNS } from '../src/queues/catalog.ts'
import { createWorkerConnection } from '../src/queues/connections.ts'
import { createReconciler } from '../src/engine/reconciler.ts'
import { createScheduleSync } from '../src/schedules/sync.ts'

// What Redis may lose besides run jobs: the cron job schedulers and the jobs of stored chat deliveries.
const { db, queues, queuePrefix } = await createCoreTestContext(t)
const logger = createLogger('silent', 'reconciler-restore-test')
const scheduleSync = createScheduleSync({ db, queue: queues[SCHEDULED_TASKS] })
const engine = { failRun: async () => false }
const restore = {
  schedulers: scheduleSync.restoreLost,
  chatDeliveries: chatDeliveryRequeue({ db, queue: queues[ASSISTANT_MAIN], logger, graceMs: 0 }),
  events: async () => 0,
  assistantTurns: async () => 0,
  broadcasts: async () => 0,
  eventDeliveries: async () => 0,
  knowledgeSources: async () => 0
}
const reconciler = createReconciler({ db, queues, logger, engine, graceMs: 0, restore })
const deliveries = chatDeliveriesRepository(db)

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()

async function cronWorkflow (name: string): Promise<string> {
  const [workflow] = await db.insert(workflows).values({
    userId: owner.id, name, triggerType: 'CRON', triggerConfig: { cronExpression: '0 9 * * *' }, isActive: true, nodes: []
  }).returning()
  await scheduleSync.reconcile(workflow.id)
  return workflow.id
}

const schedulerIds = async (): Promise<string[]> => (await queues[SCHEDULED_TASKS].getJobSchedulers()).map((s) => s.key).sort()

t.test('cron schedulers Redis lost while workers ran are registered again by the next pass', async (t) => {
  const ids = [await cronWorkflow('daily a'), await cronWorkflow('daily b')].sort()
  t.same(await schedulerIds(), ids)
  t.equal((await reconciler.reconcile()).schedulersRestored, 0, 'nothing to do while Redis holds them')

  // Redis loses everything of this prefix (a restart without persistence, a flush).
  await deleteQueuePrefix(queuePrefix)
  t.same(await schedulerIds(), [])

  t.equal((await reconciler.reconcile()).schedulersRestored, 2)
  t.same(await schedulerIds(), ids)
  const [scheduler] = await queues[SCHEDULED_TASKS].getJobSchedulers()
  t.ok(await queues[SCHEDULED_TASKS].getJob(`repeat:${scheduler!.key}:${scheduler!.next}`), 'with its next tick queued')
  t.equal((await reconciler.reconcile()).schedulersRestored, 0, 'and left alone on the pass after')
})

t.test('a stored chat delivery whose job was lost, or failed all its attempts, is queued again', async (t) => {
  const lost = await deliveries.create({ object: 'whatsapp_business_account', entry: [] })
  const failed = await deliveries.create({ object: 'whatsapp_business_account', entry: [] })
  const queued = await deliveries.create({ object: 'whatsapp_business_account', entry: [] })
  const queue = queues[ASSISTANT_MAIN]
  await queue.add('chat-delivery', { deliveryId: failed }, { jobId: failed, attempts: 1 })
  await queue.add('chat-delivery', { deliveryId: queued }, { jobId: queued })

  // The failed one: taken by a consumer and failed for good (the database was away through its attempts).
  const connection = createWorkerConnection(REDIS_URL)
  const consumer = new Worker(ASSISTANT_MAIN, undefined, { connection, prefix: queuePrefix })
  t.teardown(async () => {
    await consumer.close()
    connection.disconnect()
  })
  const job = await consumer.getNextJob('token')
  t.equal(job?.id, failed, 'first in, first taken')
  await job?.moveToFailed(new Error('database down'), 'token', false)
  t.equal(await queue.getJobState(failed), 'failed')

  t.equal((await reconciler.reconcile()).chatDeliveriesRequeued, 2)
  t.equal(await queue.getJobState(lost), 'waiting', 'the lost one is queued')
  t.same((await queue.getJob(lost))?.data, { deliveryId: lost })
  t.equal(await queue.getJobState(failed), 'waiting', 'the failed one is retried')
  t.equal(await queue.getJobState(queued), 'waiting', 'the one whose job is live is left alone')
  t.equal((await reconciler.reconcile()).chatDeliveriesRequeued, 0, 'job ids are delivery ids: queued once')

  await db.delete(chatDeliveries)
  t.equal((await reconciler.reconcile()).chatDeliveriesRequeued, 0, 'a processed delivery (its row deleted) is never queued again')
})

t.test('a delivery younger than the grace is left to the request that stored it', async (t) => {
  const requeue = chatDeliveryRequeue({ db, queue: queues[ASSISTANT_MAIN], logger, graceMs: 60_000 })
  const young = await deliveries.create({ entry: [] })
  t.equal(await requeue(), 0)
  t.equal(await queues[ASSISTANT_MAIN].getJobState(young), 'unknown')
  await db.delete(chatDeliveries).where(eq(chatDeliveries.id, young))
})

t.test('Redis back: a pass at once, every scheduler rebuilt, and a second pass once the grace has passed', async (t) => {
  const [manual] = await db.insert(workflows).values({ userId: owner.id, name: 'm', triggerType: 'MANUAL', isActive: true, nodes: [] }).returning()
  const graceMs = 1500
  const watched = createReconciler({ db, queues, logger, engine, graceMs, intervalMs: 3_600_000, restore })
  watched.start()
  t.teardown(watched.stop)
  await sleep(1200) // the first pass, a second after start

  // Redis comes back empty; a run accepted a moment ago has lost its job.
  await deleteQueuePrefix(queuePrefix)
  const [young] = await db.insert(runs).values({ workflowId: manual.id, userId: owner.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData: {} }).returning()
  const returnedAt = Date.now()
  watched.redisReturned()

  const waitForState = async (check: () => Promise<boolean>, timeoutMs: number): Promise<number> => {
    while (!await check()) {
      if (Date.now() - returnedAt > timeoutMs) throw new Error('not restored in time')
      await sleep(20)
    }
    return Date.now() - returnedAt
  }
  const schedulersBackMs = await waitForState(async () => (await schedulerIds()).length === 2, 1000)
  t.ok(schedulersBackMs < 1000, `schedulers back ${schedulersBackMs} ms after Redis returned, not at the next interval (an hour)`)
  t.equal(await queues[WORKFLOW_RUNS].getJobState(runJobId(young.id)), 'unknown', 'a run younger than the grace is not queued by the first pass')
  const runBackMs = await waitForState(async () => await queues[WORKFLOW_RUNS].getJobState(runJobId(young.id)) === 'waiting', graceMs + 1500)
  t.ok(runBackMs >= graceMs, `the run is queued by the pass a grace later (${runBackMs} ms)`)
})
