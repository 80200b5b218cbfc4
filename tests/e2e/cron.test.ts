import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { closeQueues, createProducerConnection, createQueues, SCHEDULED_TASKS } from '@switchboard/core/queues'
import { REDIS_URL } from '@switchboard/testing/database'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { RunSummary } from '@switchboard/testing/client'

// Two worker processes from the start: every assertion below is made with both taking ticks.
const stack = await startStack(t, { workers: 2, env: { CRON_MIN_INTERVAL_SECONDS: '1' } })
const token = await stack.adminToken()
const prefix = stack.env.QUEUE_PREFIX!
const redis = createProducerConnection(REDIS_URL)
const queues = createQueues(redis, prefix)
const scheduledTasks = queues[SCHEDULED_TASKS]
t.teardown(async () => {
  await closeQueues(queues)
  redis.disconnect()
})

/** Long enough for a missed every-second tick to have shown up. */
const QUIET_PERIOD_MS = 2500

const createCron = async (triggerConfig: Record<string, unknown>): Promise<string> =>
  stack.client.createWorkflow(token, { name: 'ticker', triggerType: 'CRON', triggerConfig, nodes: [{ id: 'n1', type: 'set', config: { values: { ok: 'yes' } } }] })

async function patch (workflowId: string, body: Record<string, unknown>): Promise<number> {
  const res = await stack.call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body })
  if (res.status !== 200) throw new Error(`patch failed: ${JSON.stringify(res.body)}`)
  return Date.now()
}

const runsOf = async (workflowId: string): Promise<RunSummary[]> => stack.client.runsOf(token, workflowId, { limit: 500 })

async function waitForRuns (workflowId: string, count: number, accept: (run: RunSummary) => boolean = () => true): Promise<RunSummary[]> {
  return waitFor(async () => {
    const runs = (await runsOf(workflowId)).filter(accept)
    return runs.length >= count ? runs : undefined
  }, { what: `${count} runs of ${workflowId}` })
}

const tickTimes = (runs: RunSummary[]): number[] => runs.map((run) => Date.parse(run.triggerData.scheduledAt))

/** Tick jobs a scheduler has produced, in any state, for planned times after `after`. */
async function ticksAfter (workflowId: string, after: number): Promise<string[]> {
  const jobs = await scheduledTasks.getJobs(['wait', 'delayed', 'active', 'completed', 'failed', 'prioritized'])
  return jobs.map((job) => job.id ?? '')
    .filter((id) => id.startsWith(`repeat:${workflowId}:`) && Number(id.split(':').at(-1)) > after)
}

t.test('an every-second schedule gives exactly one run per tick with two workers', async (t) => {
  const workflowId = await createCron({ cronExpression: '* * * * * *' })
  const runs = await waitForRuns(workflowId, 4)
  const times = tickTimes(runs)
  t.equal(new Set(times).size, runs.length, 'no tick has two runs')
  t.ok(times.every((time) => time % 1000 === 0), 'runs carry their whole-second tick time')
  t.ok(runs.every((run) => run.triggerData.cronExpression === '* * * * * *'))

  const detail = await stack.call('GET', `/api/automation/workflows/${workflowId}`, { token })
  const [schedule] = detail.body.schedules
  t.ok(Date.parse(schedule.lastRunAt) >= Math.max(...times) - 1000, 'lastRunAt follows the ticks')
  t.ok(Date.parse(schedule.nextRunAt) > Date.parse(schedule.lastRunAt), 'nextRunAt is after the last run')

  await patch(workflowId, { isActive: false })
})

t.test('a changed expression replaces the old ticks without a restart', async (t) => {
  const workflowId = await createCron({ cronExpression: '* * * * * *' })
  await waitForRuns(workflowId, 1)
  const changedAt = await patch(workflowId, { triggerConfig: { cronExpression: '*/2 * * * * *' } })
  const fresh = await waitForRuns(workflowId, 2, (run) => run.triggerData.cronExpression === '*/2 * * * * *')
  t.ok(tickTimes(fresh).every((time) => time % 2000 === 0), 'new ticks follow the new expression')

  const stale = (await runsOf(workflowId))
    .filter((run) => run.triggerData.cronExpression === '* * * * * *' && Date.parse(run.triggerData.scheduledAt) > changedAt)
  t.same(stale, [], 'no tick of the old expression after the change')
  const all = tickTimes(await runsOf(workflowId))
  t.equal(new Set(all).size, all.length)

  await patch(workflowId, { isActive: false })
})

t.test('deactivating stops the ticks', async (t) => {
  const workflowId = await createCron({ cronExpression: '* * * * * *' })
  await waitForRuns(workflowId, 1)
  const stoppedAt = await patch(workflowId, { isActive: false })
  await sleep(QUIET_PERIOD_MS)
  t.same(tickTimes(await runsOf(workflowId)).filter((time) => time > stoppedAt), [])
  t.same(await ticksAfter(workflowId, stoppedAt), [])
  t.equal(await scheduledTasks.getJobScheduler(workflowId), undefined)
})

t.test('deleting stops the ticks', async (t) => {
  const workflowId = await createCron({ cronExpression: '* * * * * *' })
  await waitForRuns(workflowId, 1)
  const res = await stack.call('DELETE', `/api/automation/workflows/${workflowId}`, { token })
  t.equal(res.status, 204)
  const deletedAt = Date.now()
  await sleep(QUIET_PERIOD_MS)
  t.same(await ticksAfter(workflowId, deletedAt), [])
  t.equal(await scheduledTasks.getJobScheduler(workflowId), undefined)
})

t.test('a worker restart rebuilds flushed schedulers and drops stale ones', async (t) => {
  const workflowId = await createCron({ cronExpression: '* * * * * *', timezone: 'Europe/Berlin' })
  await waitForRuns(workflowId, 1)
  await Promise.all(stack.workers.map(async (worker) => { await worker.stop('SIGTERM') }))

  // Redis loses every key of the scheduled-tasks queue ...
  const keys = await redis.keys(`${prefix}:${SCHEDULED_TASKS}:*`)
  if (keys.length > 0) await redis.del(...keys)
  t.equal(await scheduledTasks.getJobScheduler(workflowId), undefined)
  // ... and holds a scheduler whose workflow does not exist.
  await scheduledTasks.upsertJobScheduler('no-such-workflow', { pattern: '* * * * * *', tz: 'UTC' }, { name: 'tick', data: { workflowId: 'no-such-workflow' } })

  const restartedAt = Date.now()
  const worker = await stack.startWorker()
  t.match(worker.output(), /"scheduled":1/, 'only the active CRON workflow is scheduled again')
  t.match(await scheduledTasks.getJobScheduler(workflowId), { pattern: '* * * * * *', tz: 'Europe/Berlin' })
  t.equal(await scheduledTasks.getJobScheduler('no-such-workflow'), undefined)

  const runs = await waitForRuns(workflowId, 2, (run) => Date.parse(run.triggerData.scheduledAt) > restartedAt)
  const all = tickTimes(await runsOf(workflowId))
  t.equal(new Set(all).size, all.length)
  t.ok(runs.length >= 2)
})

t.test('a worker restart requeues a tick that Redis lost while keeping the scheduler', async (t) => {
  const [workflow] = (await stack.call('GET', '/api/automation/workflows?triggerType=CRON', { token })).body
    .filter((w: { isActive: boolean }) => w.isActive)
  await Promise.all(stack.workers.map(async (worker) => { await worker.stop('SIGTERM') }))

  // Every key but the schedulers' own records: the queued next tick is gone.
  const keys = (await redis.keys(`${prefix}:${SCHEDULED_TASKS}:*`))
    .filter((key) => !key.endsWith(`:${SCHEDULED_TASKS}:repeat`) && !key.endsWith(`:repeat:${workflow.id}`))
  await redis.del(...keys)
  t.ok(await scheduledTasks.getJobScheduler(workflow.id), 'the scheduler record survived')
  t.equal(await scheduledTasks.getDelayedCount(), 0, 'no tick is queued')

  const restartedAt = Date.now()
  await stack.startWorker()
  await waitForRuns(workflow.id, 2, (run) => Date.parse(run.triggerData.scheduledAt) > restartedAt)
  const all = tickTimes(await runsOf(workflow.id))
  t.equal(new Set(all).size, all.length)
})
