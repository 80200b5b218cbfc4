import { setTimeout as sleep } from 'node:timers/promises'
import postgres from 'postgres'
import t from 'tap'
import { Webhook } from 'standardwebhooks'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

t.setTimeout(180_000)

const EVENTS = 300
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`
const verifier = new Webhook(SECRET)
/** The webhook-ids each event arrived under, by its runId; every one verified. */
const arrivals = new Map<string, string[]>()
let forged = 0
// A subscriber that takes its time: deliveries are in flight when the worker is killed.
const subscriber = await startDeliverySink(t, {
  answer: async ({ headers, body: raw }) => {
    let body: { data: { runId: string } }
    try {
      body = verifier.verify(raw, headers as Record<string, string>) as typeof body
    } catch {
      forged++
      return { status: 401 }
    }
    await sleep(300)
    arrivals.set(body.data.runId, [...arrivals.get(body.data.runId) ?? [], String(headers['webhook-id'])])
    return { body: 'ok' }
  }
})

const stack = await startStack(t, {
  env: {
    HTTP_REQUEST_ALLOW_PRIVATE: 'true',
    EVENT_DELIVERY_CONCURRENCY: '20',
    EVENT_DELIVERY_RETRY_BASE_MS: '200',
    RECONCILER_INTERVAL_MS: '500',
    RECONCILER_GRACE_MS: '500'
  }
})
const token = await stack.adminToken()
const sql = postgres(stack.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
t.teardown(async () => { await sql.end() })

t.test('a worker SIGKILLed while delivering: another delivers every event, a repeat under the same webhook-id', async (t) => {
  const user = await stack.client.newUser(token)
  const created = await stack.call('POST', '/api/automation/subscriptions', { token: user.token, body: { url: `${subscriber.url}/hook`, events: ['workflow.run.failed'], secret: SECRET } })
  t.equal(created.status, 201)
  // Undispatched in the outbox, as a crash after the changes' commits would leave them.
  await sql`
    insert into events (id, name, user_id, payload, created_at)
    select 'crash' || n, 'workflow.run.failed', ${user.id}, jsonb_build_object('runId', 'r' || n, 'workflowId', 'w', 'error', 'crash'), now() - interval '1 minute'
    from generate_series(1, ${EVENTS}) n`
  await waitFor(async () => arrivals.size >= 40 ? true : undefined, { what: 'the first deliveries', timeoutMs: 30_000 })
  await stack.workers[0]!.stop('SIGKILL')
  const atKill = arrivals.size
  await stack.startWorker()

  await waitFor(async () => arrivals.size === EVENTS ? true : undefined, { what: 'every event delivered by the new worker', timeoutMs: 120_000, intervalMs: 250 })
  t.ok(atKill < EVENTS, `killed mid-way (${atKill} of ${EVENTS} delivered)`)
  t.equal(forged, 0, 'every attempt signed')
  await waitFor(async () => {
    const [row] = await sql`select count(*)::int as done from event_deliveries where subscription_id = ${created.body.id} and status = 'succeeded'`
    return row!.done === EVENTS ? true : undefined
  }, { what: 'every delivery recorded succeeded' })
  const [{ count }] = await sql`select count(*)::int as count from event_deliveries where subscription_id = ${created.body.id}`
  t.equal(count, EVENTS, 'one delivery per event, whoever dispatched it')
  const ids = [...arrivals.values()]
  t.ok(ids.every((each) => new Set(each).size === 1), 'an event sent twice came under one webhook-id, for the subscriber to deduplicate')
  const repeats = ids.filter((each) => each.length > 1).length
  t.ok(repeats <= 20, `only deliveries in flight at the kill were repeated (${repeats}, at most EVENT_DELIVERY_CONCURRENCY)`)
})
