/**
 * PostgreSQL stopped (immediate shutdown: every connection cut mid-statement) under webhook
 * and /fire traffic and started again: every accepted run ends SUCCESS, requests during the outage are
 * answered within the deadline, and no run is created for a request that was not accepted.
 */
import t from 'tap'
import {
  acceptedRunIds, assertAudit, audit, createWorkflow, deliveryNode, outageFigures, PENDING_FIX, runAccepted,
  SEQ_OF_WEBHOOK_OR_FIRE, sleep, startReliabilityStack, waitUntilSettled, webhookAndFireTraffic
} from './scenario.ts'

t.setTimeout(180_000)

const rs = await startReliabilityStack(t, { workers: 2, sinkDelayMs: (path) => path.startsWith('/slow/') ? 300 : 0 })
const { stack, sink, sql, postgres } = rs

t.test('PostgreSQL stopped and restarted under load: accepted runs finish, outage answers are prompt and leave no run', async (t) => {
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
  // A request the api still holds may create its run late: the apis drain (SIGTERM) before the audit.
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
    deliveries: sink.deliveries
  })
  Object.assign(result.figures, outageFigures(load.answers(), runAccepted, downAt, upAt), {
    apisDrainedMs,
    settledAfterPostgresBackMs: settledAt === undefined ? null : settledAt - upAt
  })
  assertAudit(t, result, { deadlines: PENDING_FIX.deadlines })
})
