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
import { runForeachBurst, runsAtOnce } from '@switchboard/testing/in-flight'

t.setTimeout(120_000)

const QUOTA = 3
const ITEMS = 300
const calls = await startDeliverySink(t, { delayMs: () => 50 })
const stack = await startStack(t, { workers: 2, env: { WORKER_CONCURRENCY: '50', HTTP_REQUEST_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'warn' } })
const adminToken = await stack.adminToken()
const database = createDatabase(stack.env.DATABASE_URL!, { max: 1 })
t.teardown(database.close)

t.test(`a foreach of ${ITEMS} items at a concurrency of 100 on two workers never has more than runsInFlight (${QUOTA}) of its children running`, async (t) => {
  const started = Date.now()
  const { run, itemWorkflowId } = await runForeachBurst(stack.client, adminToken, { quota: QUOTA, items: ITEMS, concurrency: 100, callUrl: calls.url })
  t.equal(run.status, 'SUCCESS', run.error ?? '')

  const { runs, most } = await runsAtOnce(database.sql, itemWorkflowId)
  t.comment(`${ITEMS} items in ${Date.now() - started} ms; children running at once: at most ${most} (database), ${calls.maxInFlight()} calls in flight (receiver)`)
  t.equal(runs, ITEMS, 'every item ran: the held runs came later')
  t.ok(most <= QUOTA, `at most ${QUOTA} ran at once (${most})`)
  t.ok(calls.maxInFlight() <= QUOTA, `at most ${QUOTA} calls in flight at once (${calls.maxInFlight()})`)
})
