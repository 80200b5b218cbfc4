/**
 * One of two api processes told to stop (SIGTERM) while webhooks pour in: the requests it was
 * serving are answered before it exits, it exits cleanly within its grace time, and every
 * accepted run ends SUCCESS while the other api goes on accepting.
 */
import t from 'tap'
import { createLoad, numbering } from '@switchboard/testing/load'
import {
  acceptedRunIds, assertAudit, audit, createWorkflow, deliveryNode, SENDER_GIVE_UP_MS, sleep, startReliabilityStack,
  waitUntilSettled, webhookAccepted
} from './scenario.ts'

t.setTimeout(120_000)

/** close-with-grace's delay in apps/api/src/server.ts: a stopping api exits by then whatever it was doing. */
const API_GRACE_MS = 10_000
const BURST = 300

const rs = await startReliabilityStack(t, { apis: 2, workers: 2 })
const { stack, sink, sql } = rs

t.test('an api stopped under load drains what it was serving and loses nothing accepted', async (t) => {
  const workflowId = await createWorkflow(rs, {
    name: 'deliver',
    triggerType: 'WEBHOOK',
    nodes: [deliveryNode(rs, 'hit', 'fast', 'triggerData.body.seq')]
  })
  const [stays, stops] = stack.apis as [typeof stack.apis[0], typeof stack.apis[0]]
  const webhookOf = (api: { baseUrl: string }): string => `${api.baseUrl}/api/automation/webhook/${workflowId}`
  // One sequence of request numbers for both senders: the paced one alternates between the apis,
  // the burst goes to the api that is stopped, so that it has requests in hand when told to stop.
  const seqs = numbering()
  const paced = createLoad({ url: (seq) => webhookOf(seq % 2 === 0 ? stays : stops), body: (seq) => ({ seq }), giveUpMs: SENDER_GIVE_UP_MS, numbering: seqs })
  const burst = createLoad({ url: () => webhookOf(stops), body: (seq) => ({ seq }), giveUpMs: SENDER_GIVE_UP_MS, numbering: seqs })

  const traffic = paced.paced(30)
  await sleep(4000)
  const bursting = burst.burst(BURST, BURST)
  await sleep(20)
  const inFlightAtSigterm = burst.inFlight()
  const sigtermAt = Date.now()
  await stops.stop('SIGTERM')
  const exitMs = Date.now() - sigtermAt
  await bursting
  await sleep(4000)
  await traffic.stop()

  const answers = [...paced.answers, ...burst.answers]
  const settledAt = await waitUntilSettled(sql, [workflowId], acceptedRunIds(answers, webhookAccepted), 30_000)
  const result = await audit('api SIGTERM', {
    sql,
    workflowIds: [workflowId],
    answers,
    accepted: webhookAccepted,
    seqColumn: "trigger_data->'body'->>'seq'",
    deliveries: sink.deliveries
  })
  const burstAnswered = burst.answers.filter((answer) => answer.sentAt < sigtermAt && answer.status !== undefined).length
  const burstCut = burst.answers.filter((answer) => answer.sentAt < sigtermAt && answer.status === undefined)
  Object.assign(result.figures, {
    inFlightAtSigterm,
    burstSentBeforeSigterm: burstAnswered + burstCut.length,
    burstCutBeforeAnswer: burstCut.length,
    apiExitMs: exitMs,
    settledAfterSigtermMs: settledAt === undefined ? null : settledAt - sigtermAt
  })
  assertAudit(t, result)
  t.ok(inFlightAtSigterm > 0, `the api had requests in hand when told to stop (${inFlightAtSigterm})`)
  t.same(burstCut.map((answer) => answer.failure), [], 'every request sent before SIGTERM was answered')
  t.equal(stops.child.exitCode, 0, 'the stopped api exits cleanly')
  t.ok(exitMs < API_GRACE_MS, `it exits within its grace time (${exitMs} ms)`)
  t.ok(paced.answers.some((answer) => answer.url === webhookOf(stays) && answer.sentAt > sigtermAt && webhookAccepted(answer)), 'the other api keeps accepting')
})
