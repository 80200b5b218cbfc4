/**
 * 10,000 webhooks at once, 100 in flight at a time: every one is
 * acknowledged `received` within the deadline, and every run they started ends SUCCESS with
 * its delivery made exactly once.
 */
import t from 'tap'
import { createLoad } from '@switchboard/testing/load'
import {
  acceptedRunIds, assertAudit, audit, createWorkflow, deliveryNode, SENDER_GIVE_UP_MS, startReliabilityStack,
  waitUntilSettled, webhookAccepted
} from './scenario.ts'

t.setTimeout(360_000)

const WEBHOOKS = 10_000
const IN_FLIGHT = 100

// One api: on a small machine a second one only competes with the workers for the same cores.
const rs = await startReliabilityStack(t, { workers: 2 })
const { stack, sink, sql } = rs

t.test(`a burst of ${WEBHOOKS} webhooks: all acknowledged, all run once`, async (t) => {
  const workflowId = await createWorkflow(rs, {
    name: 'burst',
    triggerType: 'WEBHOOK',
    nodes: [deliveryNode(rs, 'hit', 'fast', 'triggerData.body.seq')]
  })
  const load = createLoad({
    url: () => `${stack.baseUrl}/api/automation/webhook/${workflowId}`,
    body: (seq) => ({ seq }),
    giveUpMs: SENDER_GIVE_UP_MS,
    numbering: rs.numbering
  })

  const startedAt = Date.now()
  await load.burst(WEBHOOKS, IN_FLIGHT)
  const acknowledgedMs = Date.now() - startedAt
  const settledAt = await waitUntilSettled(sql, [workflowId], acceptedRunIds(load.answers, webhookAccepted), 180_000)
  const result = await audit('10,000-webhook burst', {
    sql,
    workflowIds: [workflowId],
    answers: load.answers,
    accepted: webhookAccepted,
    seqColumn: "trigger_data->'body'->>'seq'",
    deliveries: sink.deliveries
  })
  const completedMs = settledAt === undefined ? null : settledAt - startedAt
  Object.assign(result.figures, {
    acknowledgedMs,
    acknowledgedPerSecond: Math.round(WEBHOOKS / acknowledgedMs * 1000),
    allRunsDoneMs: completedMs,
    runsPerSecond: completedMs === null ? null : Math.round(WEBHOOKS / completedMs * 1000)
  })
  assertAudit(t, result)
  t.equal(result.figures.accepted, WEBHOOKS, `all ${WEBHOOKS} acknowledged received`)
  t.equal(sink.deliveries.length, WEBHOOKS, 'one delivery per run')
})
