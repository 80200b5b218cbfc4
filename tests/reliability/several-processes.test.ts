/**
 * Two api and three worker processes, as a small deployment runs: an every-second cron gives
 * one run per tick, /fire through both apis gives one execution per run, and neither loses a
 * run while workers are SIGKILLed one after another.
 */
import t from 'tap'
import { createLoad } from '@switchboard/testing/load'
import type { ManagedProcess } from '@switchboard/testing/processes'
import {
  acceptedRunIds, assertAudit, audit, createWorkflow, deliveryNode, SENDER_GIVE_UP_MS, sleep, startReliabilityStack,
  waitUntilSettled
} from './scenario.ts'

t.setTimeout(180_000)

const WORKER_KILLS = 3

const rs = await startReliabilityStack(t, {
  apis: 2,
  workers: 3,
  env: { CRON_MIN_INTERVAL_SECONDS: '1' },
  sinkDelayMs: (path) => path.startsWith('/slow/') ? 500 : 0
})
const { stack, sink, sql, token } = rs

t.test('two apis and three workers, workers killed: one run per cron tick, one execution per run, none lost', async (t) => {
  const cron = await createWorkflow(rs, {
    name: 'every second',
    triggerType: 'CRON',
    triggerConfig: { cronExpression: '* * * * * *' },
    nodes: [{ id: 'tick', type: 'http_request', config: { method: 'POST', url: `${sink.url}/cron/tick/{{triggerData.scheduledAt}}` } }]
  })
  const fired = await createWorkflow(rs, {
    name: 'fired',
    triggerType: 'MANUAL',
    nodes: [deliveryNode(rs, 'hit', 'slow', 'triggerData.seq', { next: 'done' }), { id: 'done', type: 'set', config: { values: { ok: 'yes' } } }]
  })
  const load = createLoad({
    url: (seq) => `${stack.apis[seq % stack.apis.length]!.baseUrl}/api/automation/workflows/${fired}/fire`,
    body: (seq) => ({ seq }),
    headers: { authorization: `Bearer ${token}` },
    giveUpMs: SENDER_GIVE_UP_MS
  })
  const accepted = (answer: { status?: number }): boolean => answer.status === 202

  const traffic = load.paced(20)
  const replacements: Array<Promise<unknown>> = []
  const alive = (): ManagedProcess[] => stack.workers.filter((worker) => worker.child.exitCode === null && worker.child.signalCode === null)
  for (let kill = 0; kill < WORKER_KILLS; kill++) {
    await sleep(4000)
    if (alive().length === 0) await Promise.all(replacements)
    await alive()[0]!.stop('SIGKILL')
    replacements.push(stack.startWorker())
  }
  await sleep(3000)
  await traffic.stop()
  const trafficEnded = Date.now()
  const patched = await stack.call('PATCH', `/api/automation/workflows/${cron}`, { token, body: { isActive: false } })
  t.equal(patched.status, 200, 'the cron workflow is deactivated')
  await Promise.all(replacements)

  const settledAt = await waitUntilSettled(sql, [fired, cron], acceptedRunIds(load.answers, accepted), 60_000)
  const result = await audit('2 apis + 3 workers, workers killed', {
    sql,
    workflowIds: [fired],
    answers: load.answers,
    accepted,
    seqColumn: "trigger_data->>'seq'",
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
    workerKills: WORKER_KILLS,
    settledAfterTrafficMs: settledAt === undefined ? null : settledAt - trafficEnded,
    cronTicks: tickTimes.length,
    // BullMQ computes a scheduler's next tick when a worker takes the current one, from that
    // moment: a tick taken late (a busy or dying worker) skips the seconds it overlapped.
    cronTicksSkipped: expectedTicks - tickTimes.length,
    cronRunsNotSuccess: ticks.filter((tick) => tick.status !== 'SUCCESS').length,
    cronDuplicatedDeliveries: [...tickDeliveries.values()].filter((count) => count > 1).length
  })
  assertAudit(t, result)
  t.ok(result.figures.interrupted > 0, 'runs were taken over from killed workers')
  t.ok(tickTimes.length >= 10, `the cron ticked through the window (${tickTimes.length} ticks)`)
  t.equal(new Set(tickTimes).size, tickTimes.length, 'one run per cron tick')
  t.same(ticks.filter((tick) => tick.status !== 'SUCCESS'), [], 'every cron run ends SUCCESS')
  t.same(overDeliveredTicks, [], 'each tick delivered at most 1 + the times its run was interrupted')
})
