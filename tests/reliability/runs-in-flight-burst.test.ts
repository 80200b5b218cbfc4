/**
 * runsInFlight under the burst that used to pass it (README, Quotas): a foreach of 300 items at a
 * concurrency of 100, its children spread over two worker processes. Every job that reaches a
 * worker is admitted under its owner's lock, counting the runs admitted and not yet RUNNING on
 * either worker, so the children never run more than the quota at once (before: 17, 10 and 10
 * RUNNING with a quota of 3). tests/security/tenant-fairness.test.ts has the small version.
 */
import t from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { runsAtOnce } from '@switchboard/testing/run-spans'

t.setTimeout(120_000)

const QUOTA = 3
const ITEMS = 300
const calls = await startDeliverySink(t, { delayMs: () => 50 })
const stack = await startStack(t, { workers: 2, env: { WORKER_CONCURRENCY: '50', HTTP_REQUEST_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'warn' } })
const adminToken = await stack.adminToken()
const database = createDatabase(stack.env.DATABASE_URL!, { max: 1 })
t.teardown(database.close)

t.test(`a foreach of ${ITEMS} items at a concurrency of 100 on two workers never has more than runsInFlight (${QUOTA}) of its children running`, async (t) => {
  const member = await stack.client.newUser(adminToken)
  const patched = await stack.call('PATCH', `/api/users/${member.id}`, { token: adminToken, body: { quotas: { runsInFlight: QUOTA } } })
  t.equal(patched.status, 200)
  const item = await stack.client.createWorkflow(member.token, {
    name: 'item',
    nodes: [{ id: 'call', type: 'http_request', config: { url: `${calls.url}/{{triggerData.index}}` } }]
  })
  const loop = await stack.client.createWorkflow(member.token, {
    name: 'loop',
    nodes: [{ id: 'each', type: 'foreach', config: { workflowId: item, items: '{{triggerData.items}}', concurrency: 100, collectOutputs: false } }]
  })
  const started = Date.now()
  const parent = await stack.client.fire(member.token, loop, { items: Array.from({ length: ITEMS }, (_, n) => n) })
  const run = await stack.client.runReaching(member.token, parent, ['SUCCESS', 'FAILED'], { timeoutMs: 100_000, intervalMs: 250 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')

  const { runs, most } = await runsAtOnce(database.sql, item)
  t.comment(`${ITEMS} items in ${Date.now() - started} ms; children running at once: at most ${most} (database), ${calls.maxInFlight()} calls in flight (receiver)`)
  t.equal(runs, ITEMS, 'every item ran: the held runs came later')
  t.ok(most <= QUOTA, `at most ${QUOTA} ran at once (${most})`)
  t.ok(calls.maxInFlight() <= QUOTA, `at most ${QUOTA} calls in flight at once (${calls.maxInFlight()})`)
})
