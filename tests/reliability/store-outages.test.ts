/**
 * The stores fail under webhook and /fire traffic, one after the other on one deployment (an api,
 * two workers). Redis is killed and started again empty: every job, delayed resume and cron
 * scheduler it held is gone; requests keep being accepted meanwhile (a run is accepted once
 * committed) and their runs are queued once Redis is back. PostgreSQL is stopped by an immediate
 * shutdown (every connection cut mid-statement) and started again: requests are refused within
 * the deadline, and a refused request has a run only when its COMMIT was in doubt. Each time every
 * accepted run ends SUCCESS, a node runs again only where its run was interrupted, and (Redis)
 * cron ticks come back.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { answerLabel } from '@switchboard/testing/load'
import {
  acceptedRunIds, assertAudit, audit, createWorkflow, deliveryNode, outageFigures, REQUEUE_DEADLINE_MS,
  runAccepted, SEQ_OF_WEBHOOK_OR_FIRE, startReliabilityStack, waitUntilSettled, webhookAndFireTraffic
} from './scenario.ts'

t.setTimeout(300_000)

/** Time for the outage's own work to drain once it is re-enqueued. */
const DRAIN_MS = 5_000

const rs = await startReliabilityStack(t, {
  workers: 2,
  env: { CRON_MIN_INTERVAL_SECONDS: '1' },
  sinkDelayMs: (path) => path.startsWith('/slow/') ? 300 : 0
})
const { stack, sink, sql, redis, postgres } = rs

t.test('Redis killed and restarted empty under load: accepted runs finish, cron ticks return', async (t) => {
  const deliver = await createWorkflow(rs, {
    name: 'deliver',
    triggerType: 'WEBHOOK',
    nodes: [deliveryNode(rs, 'hit', 'fast', 'triggerData.body.seq', { next: 'done' }), { id: 'done', type: 'set', config: { values: { ok: 'yes' } } }]
  })
  const waits = await createWorkflow(rs, {
    name: 'wait then deliver',
    triggerType: 'WEBHOOK',
    nodes: [{ id: 'pause', type: 'wait', config: { seconds: 2 }, next: 'hit' }, deliveryNode(rs, 'hit', 'fast', 'triggerData.body.seq')]
  })
  const cron = await createWorkflow(rs, {
    name: 'every second',
    triggerType: 'CRON',
    triggerConfig: { cronExpression: '* * * * * *' },
    nodes: [{ id: 'tick', type: 'set', config: { values: { at: '{{triggerData.scheduledAt}}' } } }]
  })
  const fired = await createWorkflow(rs, {
    name: 'fired',
    triggerType: 'MANUAL',
    nodes: [deliveryNode(rs, 'hit', 'fast', 'triggerData.seq')]
  })
  const load = webhookAndFireTraffic(rs, [deliver, waits], fired)
  const workflowIds = [deliver, waits, fired]

  const traffic = load.start(24, 6)
  await sleep(5000)
  const downAt = Date.now()
  await redis.stop('SIGKILL')
  await sleep(5000)
  await redis.start()
  const upAt = Date.now()
  await sleep(8000)
  await traffic.stop()

  const settledAt = await waitUntilSettled(sql, workflowIds, acceptedRunIds(load.answers(), runAccepted), 100_000)
  const ticks = await sql<Array<{ scheduledAt: string }>>`
    select trigger_data->>'scheduledAt' as "scheduledAt" from runs where workflow_id = ${cron} order by 1`
  const tickTimes = ticks.map((tick) => Date.parse(tick.scheduledAt))
  const result = await audit('Redis killed, restarted empty', {
    sql,
    workflowIds,
    answers: load.answers(),
    accepted: runAccepted,
    seqColumn: SEQ_OF_WEBHOOK_OR_FIRE,
    deliveries: sink.deliveries,
    apiOutput: stack.apis.map((api) => api.output()).join('\n')
  })
  const during = load.answers().filter((answer) => answer.sentAt >= downAt && answer.sentAt < upAt)
  const recoveryMs = settledAt === undefined ? null : settledAt - upAt
  // Everything a worker prints is a JSON log line; anything else is an error nobody listened for.
  const rawLines = stack.workers.flatMap((worker) => worker.output().split('\n')).filter((line) => line.trim() !== '' && !line.startsWith('{'))
  const firstTickAfter = tickTimes.find((time) => time > upAt)
  Object.assign(result.figures, outageFigures(load.answers(), runAccepted, downAt, upAt), {
    settledAfterRedisBackMs: recoveryMs,
    cronTicks: tickTimes.length,
    cronTicksAfterRedisBack: tickTimes.filter((time) => time > upAt).length,
    firstCronTickAfterRedisBackMs: firstTickAfter === undefined ? null : firstTickAfter - upAt,
    workerLinesNotLogged: rawLines.length
  })
  assertAudit(t, result)
  t.ok(during.length > 0, 'requests were sent while Redis was away')
  t.same(during.filter((answer) => !runAccepted(answer)).map(answerLabel).slice(0, 5), [], 'every request is accepted while Redis is away')
  t.equal(result.figures.inDoubt, 0, 'no commit was in doubt: Postgres answered throughout')
  t.equal(new Set(tickTimes).size, tickTimes.length, 'one run per cron tick')
  t.ok(tickTimes.some((time) => time < downAt), 'cron ticked before the outage')
  t.ok(firstTickAfter !== undefined && firstTickAfter - upAt <= REQUEUE_DEADLINE_MS,
    `cron ticks again within ${REQUEUE_DEADLINE_MS} ms of Redis coming back empty`)
  t.same(rawLines.slice(0, 5), [], 'the workers log Redis errors as JSON lines')
  t.ok(recoveryMs !== null && recoveryMs <= REQUEUE_DEADLINE_MS + DRAIN_MS,
    `every accepted run finished within ${REQUEUE_DEADLINE_MS + DRAIN_MS} ms of Redis coming back (${recoveryMs} ms)`)
  const patched = await stack.call('PATCH', `/api/automation/workflows/${cron}`, { token: rs.token, body: { isActive: false } })
  t.equal(patched.status, 200, 'the cron workflow is deactivated')
})

t.test('PostgreSQL stopped and restarted under load: accepted runs finish, outage answers are prompt and leave a run only when in doubt', async (t) => {
  const deliver = await createWorkflow(rs, {
    name: 'deliver',
    triggerType: 'WEBHOOK',
    nodes: [
      deliveryNode(rs, 'first', 'slow', 'triggerData.body.seq', { next: 'second' }),
      deliveryNode(rs, 'second', 'fast', 'triggerData.body.seq')
    ]
  })
  const waits = await createWorkflow(rs, {
    name: 'wait then deliver',
    triggerType: 'WEBHOOK',
    nodes: [{ id: 'pause', type: 'wait', config: { seconds: 2 }, next: 'hit' }, deliveryNode(rs, 'hit', 'fast', 'triggerData.body.seq')]
  })
  const fired = await createWorkflow(rs, {
    name: 'fired',
    triggerType: 'MANUAL',
    nodes: [deliveryNode(rs, 'hit', 'fast', 'triggerData.seq')]
  })
  const load = webhookAndFireTraffic(rs, [deliver, waits], fired)
  const workflowIds = [deliver, waits, fired]

  const traffic = load.start(24, 6)
  await sleep(5000)
  const downAt = Date.now()
  await postgres.stop('SIGQUIT')
  await sleep(6000)
  await postgres.start()
  const upAt = Date.now()
  await sleep(8000)
  await traffic.stop()
  // A request the api still holds may create its run late: the apis drain (SIGTERM) before the audit,
  // which is why this scenario comes last.
  const drainedAt = Date.now()
  await Promise.all(stack.apis.map(async (api) => { await api.stop('SIGTERM') }))
  const apisDrainedMs = Date.now() - drainedAt

  const settledAt = await waitUntilSettled(sql, workflowIds, acceptedRunIds(load.answers(), runAccepted), 60_000)
  const result = await audit('PostgreSQL stopped and restarted', {
    sql,
    workflowIds,
    answers: load.answers(),
    accepted: runAccepted,
    seqColumn: SEQ_OF_WEBHOOK_OR_FIRE,
    deliveries: sink.deliveries,
    apiOutput: stack.apis.map((api) => api.output()).join('\n')
  })
  Object.assign(result.figures, outageFigures(load.answers(), runAccepted, downAt, upAt), {
    apisDrainedMs,
    settledAfterPostgresBackMs: settledAt === undefined ? null : settledAt - upAt
  })
  assertAudit(t, result)
})
