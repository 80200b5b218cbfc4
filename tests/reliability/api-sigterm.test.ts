/**
 * One of two api processes told to stop (SIGTERM) while webhooks pour in: the requests it holds
 * are answered before it exits, it exits cleanly within its grace time, and every accepted run
 * ends SUCCESS while the other api goes on accepting.
 */
import t from 'tap'
import { createLoad, numbering } from '@switchboard/testing/load'
import { waitFor } from '@switchboard/testing/wait'
import {
  acceptedRunIds, assertAudit, audit, createWorkflow, deliveryNode, SENDER_GIVE_UP_MS, sleep, startReliabilityStack,
  waitUntilSettled, webhookAccepted
} from './scenario.ts'

t.setTimeout(120_000)

/** close-with-grace's delay in apps/api/src/server.ts: a stopping api exits by then whatever it was doing. */
const API_GRACE_MS = 10_000
const IN_HAND = 50

// At info the api logs each request as it comes in and as it is answered: how the test knows what it holds.
/** Lines of `log` that contain both texts. */
const count = (log: string, first: string, second: string): number =>
  log.split('\n').filter((line) => line.includes(first) && line.includes(second)).length

const rs = await startReliabilityStack(t, { apis: 2, workers: 2, env: { LOG_LEVEL: 'info' } })
const { stack, sink, sql, postgres } = rs

t.test('an api stopped under load answers the requests it holds and loses nothing accepted', async (t) => {
  const workflowId = await createWorkflow(rs, {
    name: 'deliver',
    triggerType: 'WEBHOOK',
    nodes: [deliveryNode(rs, 'hit', 'fast', 'triggerData.body.seq')]
  })
  const [stays, stops] = stack.apis as [typeof stack.apis[0], typeof stack.apis[0]]
  const webhookOf = (api: { baseUrl: string }): string => `${api.baseUrl}/api/automation/webhook/${workflowId}`
  // One numbering for both senders: the paced one alternates between the apis, the other
  // puts requests in the hands of the api that is stopped.
  const seqs = numbering()
  const paced = createLoad({ url: (seq) => webhookOf(seq % 2 === 0 ? stays : stops), body: (seq) => ({ seq }), giveUpMs: SENDER_GIVE_UP_MS, numbering: seqs })
  // Their request ids tell them apart in the api's log.
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
