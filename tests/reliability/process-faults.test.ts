/**
 * Two api and three worker processes, as a small deployment runs, under webhooks, /fire through
 * both apis and an every-second cron: workers SIGKILLed while runs are in a slow http_request and
 * while runs wait, then one api sent SIGTERM while it holds requests. Every accepted run ends
 * SUCCESS, a node runs again only where its run was interrupted, each cron tick makes one run, and
 * the stopping api answers what it holds before it exits.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { createLoad } from '@switchboard/testing/load'
import type { ManagedProcess } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import {
  acceptedRunIds, assertAudit, audit, createWorkflow, deliveryNode, runAccepted, SENDER_GIVE_UP_MS, SEQ_OF_WEBHOOK_OR_FIRE,
  startReliabilityStack, waitUntilSettled, webhookAccepted, webhookAndFireTraffic
} from './scenario.ts'

t.setTimeout(240_000)

const SLOW_DELIVERY_MS = 1500
const WORKER_KILLS = 4
/** close-with-grace's delay in apps/api/src/server.ts: a stopping api exits by then whatever it was doing. */
const API_GRACE_MS = 10_000
const IN_HAND = 50

const rs = await startReliabilityStack(t, {
  apis: 2,
  workers: 3,
  // At debug the api logs each request as it comes in, at info as it is answered: how the SIGTERM
  // test knows what it holds (apps/api/src/request-log.ts).
  env: { CRON_MIN_INTERVAL_SECONDS: '1', LOG_LEVEL: 'debug' },
  sinkDelayMs: (path) => path.startsWith('/slow/') ? SLOW_DELIVERY_MS : 0
})
const { stack, sink, sql, token, postgres } = rs

t.test('workers SIGKILLed during slow deliveries and waits: nothing accepted lost, one run per cron tick, nothing delivered twice without cause', async (t) => {
  const slow = await createWorkflow(rs, {
    name: 'slow delivery',
    triggerType: 'WEBHOOK',
    nodes: [deliveryNode(rs, 'hit', 'slow', 'triggerData.body.seq', { next: 'done' }), { id: 'done', type: 'set', config: { values: { ok: 'yes' } } }]
  })
  const waits = await createWorkflow(rs, {
    name: 'wait then deliver',
    triggerType: 'WEBHOOK',
    nodes: [{ id: 'pause', type: 'wait', config: { seconds: 2 }, next: 'hit' }, deliveryNode(rs, 'hit', 'fast', 'triggerData.body.seq')]
  })
  const fired = await createWorkflow(rs, {
    name: 'fired',
    triggerType: 'MANUAL',
    nodes: [deliveryNode(rs, 'hit', 'slow', 'triggerData.seq', { next: 'done' }), { id: 'done', type: 'set', config: { values: { ok: 'yes' } } }]
  })
  const cron = await createWorkflow(rs, {
    name: 'every second',
    triggerType: 'CRON',
    triggerConfig: { cronExpression: '* * * * * *' },
    nodes: [{ id: 'tick', type: 'http_request', config: { method: 'POST', url: `${sink.url}/cron/tick/{{triggerData.scheduledAt}}` } }]
  })
  const workflowIds = [slow, waits, fired]
  const load = webhookAndFireTraffic(rs, [slow, waits], fired, stack.apis.map((api) => api.baseUrl))

  const traffic = load.start(14, 6)
  const kills: Array<{ slowDeliveriesInFlight: number, waitingRuns: number }> = []
  const replacements: Array<Promise<unknown>> = []
  const alive = (): ManagedProcess[] => stack.workers.filter((worker) => worker.child.exitCode === null && worker.child.signalCode === null)
  for (let kill = 0; kill < WORKER_KILLS; kill++) {
    await sleep(3500)
    // Every worker killed so far and none started again yet: wait for the replacements.
    if (alive().length === 0) await Promise.all(replacements)
    // The oldest live worker: it has been taking runs the longest.
    const victim = alive()[0]!
    const [{ waiting }] = await sql<Array<{ waiting: number }>>`select count(*)::int as waiting from runs where status = 'WAITING'`
    kills.push({ slowDeliveriesInFlight: sink.inFlight(), waitingRuns: waiting })
    await victim.stop('SIGKILL')
    // A replacement takes seconds to start; the next kill does not wait for it.
    replacements.push(stack.startWorker())
  }
  await sleep(2000)
  await traffic.stop()
  const trafficEnded = Date.now()
  const patched = await stack.call('PATCH', `/api/automation/workflows/${cron}`, { token, body: { isActive: false } })
  t.equal(patched.status, 200, 'the cron workflow is deactivated')
  await Promise.all(replacements)

  const settledAt = await waitUntilSettled(sql, [...workflowIds, cron], acceptedRunIds(load.answers(), runAccepted), 60_000)
  const result = await audit('workers SIGKILLed (2 apis, 3 workers)', {
    sql,
    workflowIds,
    answers: load.answers(),
    accepted: runAccepted,
    seqColumn: SEQ_OF_WEBHOOK_OR_FIRE,
    deliveries: sink.deliveries
  })

  const ticks = await sql<Array<{ scheduledAt: string, status: string, attempt: number }>>`
    select trigger_data->>'scheduledAt' as "scheduledAt", status, attempt from runs where workflow_id = ${cron}`
  const tickTimes = ticks.map((tick) => Date.parse(tick.scheduledAt)).sort((a, b) => a - b)
  const expectedTicks = tickTimes.length === 0 ? 0 : (tickTimes.at(-1)! - tickTimes[0]!) / 1000 + 1
  const tickDeliveries = new Map<number, number>()
  for (const delivery of sink.deliveries.filter((candidate) => candidate.path.startsWith('/cron/tick/'))) {
    const time = Date.parse(decodeURIComponent(delivery.path.slice('/cron/tick/'.length)))
    tickDeliveries.set(time, (tickDeliveries.get(time) ?? 0) + 1)
  }
  const overDeliveredTicks = ticks.filter((tick) => (tickDeliveries.get(Date.parse(tick.scheduledAt)) ?? 0) > 1 + tick.attempt)
  Object.assign(result.figures, {
    kills,
    settledAfterTrafficMs: settledAt === undefined ? null : settledAt - trafficEnded,
    cronTicks: tickTimes.length,
    // BullMQ computes a scheduler's next tick when a worker takes the current one, from that
    // moment: a tick taken late (a busy or dying worker) skips the seconds it overlapped.
    cronTicksSkipped: expectedTicks - tickTimes.length,
    cronDuplicatedDeliveries: [...tickDeliveries.values()].filter((count) => count > 1).length
  })
  assertAudit(t, result)
  t.equal(kills.length, WORKER_KILLS, `${WORKER_KILLS} workers were killed`)
  t.ok(kills.some((kill) => kill.slowDeliveriesInFlight > 0), 'a worker was killed while slow deliveries were in flight')
  t.ok(kills.some((kill) => kill.waitingRuns > 0), 'a worker was killed while runs were waiting')
  t.ok(result.figures.interrupted > 0, 'runs were taken over from killed workers')
  t.ok(tickTimes.length >= 10, `the cron ticked through the window (${tickTimes.length} ticks)`)
  t.equal(new Set(tickTimes).size, tickTimes.length, 'one run per cron tick')
  t.same(ticks.filter((tick) => tick.status !== 'SUCCESS'), [], 'every cron run ends SUCCESS')
  t.same(overDeliveredTicks, [], 'each tick delivered at most 1 + the times its run was interrupted')
})

/** Lines of `log` that contain both texts. */
const count = (log: string, first: string, second: string): number =>
  log.split('\n').filter((line) => line.includes(first) && line.includes(second)).length

t.test('an api sent SIGTERM under load answers the requests it holds and loses nothing accepted', async (t) => {
  const workflowId = await createWorkflow(rs, {
    name: 'deliver',
    triggerType: 'WEBHOOK',
    nodes: [deliveryNode(rs, 'hit', 'fast', 'triggerData.body.seq')]
  })
  const [stays, stops] = stack.apis as [typeof stack.apis[0], typeof stack.apis[0]]
  const webhookOf = (api: { baseUrl: string }): string => `${api.baseUrl}/api/automation/webhook/${workflowId}`
  // The stack's numbering for both senders: the paced one alternates between the apis, the other
  // puts requests in the hands of the api that is stopped (their request ids tell them apart in its log).
  const seqs = rs.numbering
  const paced = createLoad({ url: (seq) => webhookOf(seq % 2 === 0 ? stays : stops), body: (seq) => ({ seq }), giveUpMs: SENDER_GIVE_UP_MS, numbering: seqs })
  const held = createLoad({ url: () => webhookOf(stops), body: (seq) => ({ seq }), headers: (seq) => ({ 'x-request-id': `held-${seq}` }), giveUpMs: SENDER_GIVE_UP_MS, numbering: seqs })

  const traffic = paced.paced(30)
  await sleep(3000)
  // With PostgreSQL frozen for a moment, the requests sent to the api wait inside it for the
  // database; SIGTERM comes once the api has read them all (not while some are still in the
  // kernel's accept queue, which a closing server resets).
  postgres.freeze()
  const holding = held.burst(IN_HAND, IN_HAND)
  const inHand = (): number => count(stops.output(), '"requestId":"held-', '"msg":"incoming request"') - count(stops.output(), '"requestId":"held-', '"msg":"request completed"')
  await waitFor(async () => inHand() >= IN_HAND ? true : undefined, { timeoutMs: 10_000, what: `the api to hold ${IN_HAND} requests` })
  const inHandAtSigterm = inHand()
  const sigtermAt = Date.now()
  const exited = stops.stop('SIGTERM')
  await sleep(200)
  postgres.thaw()
  await exited
  const exitMs = Date.now() - sigtermAt
  await holding
  await sleep(3000)
  await traffic.stop()

  const answers = [...paced.answers, ...held.answers]
  const settledAt = await waitUntilSettled(sql, [workflowId], acceptedRunIds(answers, webhookAccepted), 30_000)
  const result = await audit('api SIGTERM', {
    sql,
    workflowIds: [workflowId],
    answers,
    accepted: webhookAccepted,
    seqColumn: "trigger_data->'body'->>'seq'",
    deliveries: sink.deliveries
  })
  const heldNotAccepted = held.answers.filter((answer) => !webhookAccepted(answer))
  Object.assign(result.figures, {
    inHandAtSigterm,
    inHandAccepted: held.answers.length - heldNotAccepted.length,
    apiExitMs: exitMs,
    settledAfterSigtermMs: settledAt === undefined ? null : settledAt - sigtermAt
  })
  assertAudit(t, result)
  t.equal(inHandAtSigterm, IN_HAND, 'the api held requests when told to stop')
  t.same(heldNotAccepted.map((answer) => answer.status ?? answer.failure), [], 'every request it held was answered received')
  t.equal(stops.child.exitCode, 0, 'the stopped api exits cleanly')
  t.ok(exitMs < API_GRACE_MS, `it exits within its grace time (${exitMs} ms)`)
  t.ok(paced.answers.some((answer) => answer.url === webhookOf(stays) && answer.sentAt > sigtermAt && webhookAccepted(answer)), 'the other api keeps accepting')
})
