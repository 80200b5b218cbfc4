/**
 * Worker processes SIGKILLed under webhook traffic, while runs are in a slow http_request and
 * while runs wait: every accepted run ends SUCCESS, and a node is delivered again only for a
 * run that was interrupted there.
 */
import t from 'tap'
import { createLoad } from '@switchboard/testing/load'
import type { ManagedProcess } from '@switchboard/testing/processes'
import { acceptedRunIds, assertAudit, audit, createWorkflow, deliveryNode, SENDER_GIVE_UP_MS, sleep, startReliabilityStack, waitUntilSettled, webhookAccepted } from './scenario.ts'

t.setTimeout(150_000)

const SLOW_DELIVERY_MS = 1500
const rs = await startReliabilityStack(t, {
  workers: 2,
  sinkDelayMs: (path) => path.startsWith('/slow/') ? SLOW_DELIVERY_MS : 0
})
const { stack, sink, sql } = rs

t.test('workers killed during slow deliveries and waits: nothing accepted is lost, nothing delivered twice without cause', async (t) => {
  const slow = await createWorkflow(rs, {
    name: 'slow delivery',
    triggerType: 'WEBHOOK',
    nodes: [
      deliveryNode(rs, 'hit', 'slow', 'triggerData.body.seq', { next: 'done' }),
      { id: 'done', type: 'set', config: { values: { ok: 'yes' } } }
    ]
  })
  const waits = await createWorkflow(rs, {
    name: 'wait then deliver',
    triggerType: 'WEBHOOK',
    nodes: [
      { id: 'pause', type: 'wait', config: { seconds: 2 }, next: 'hit' },
      deliveryNode(rs, 'hit', 'fast', 'triggerData.body.seq')
    ]
  })
  const workflowIds = [slow, waits]
  const load = createLoad({
    url: (seq) => `${stack.baseUrl}/api/automation/webhook/${workflowIds[seq % 2]}`,
    body: (seq) => ({ seq }),
    giveUpMs: SENDER_GIVE_UP_MS
  })

  const traffic = load.paced(20)
  const kills: Array<{ slowDeliveriesInFlight: number, waitingRuns: number }> = []
  const replacements: Array<Promise<unknown>> = []
  const alive = (): ManagedProcess[] => stack.workers.filter((worker) => worker.child.exitCode === null && worker.child.signalCode === null)
  for (let kill = 0; kill < 4; kill++) {
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
  await traffic.stop()
  await Promise.all(replacements)
  const trafficEnded = Date.now()

  const settledAt = await waitUntilSettled(sql, workflowIds, acceptedRunIds(load.answers, webhookAccepted), 60_000)
  const result = await audit('worker SIGKILL', {
    sql,
    workflowIds,
    answers: load.answers,
    accepted: webhookAccepted,
    seqColumn: "trigger_data->'body'->>'seq'",
    deliveries: sink.deliveries
  })
  Object.assign(result.figures, { kills, settledAfterTrafficMs: settledAt === undefined ? null : settledAt - trafficEnded })
  assertAudit(t, result)
  t.ok(kills.some((kill) => kill.slowDeliveriesInFlight > 0), 'a worker was killed while slow deliveries were in flight')
  t.ok(kills.some((kill) => kill.waitingRuns > 0), 'a worker was killed while runs were waiting')
  t.equal(kills.length, 4, 'four workers were killed')
  t.ok(result.figures.interrupted > 0, 'runs were taken over from killed workers')
})
