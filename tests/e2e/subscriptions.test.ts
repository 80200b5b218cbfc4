import { setTimeout as sleep } from 'node:timers/promises'
import postgres from 'postgres'
import t from 'tap'
import { Webhook } from 'standardwebhooks'
import { startDeliverySink, type SinkAnswer } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/** What the subscriber verified: each POST's webhook-id and body, by path. */
interface Received { id: string, path: string, body: { type: string, timestamp: string, data: Record<string, unknown> } }

t.setTimeout(240_000)

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`
const verifier = new Webhook(SECRET)
const received: Received[] = []
let forged = 0
/** How each path answers: 200 after verifying the signature, or a hostile answer. */
const behaviours: Record<string, () => SinkAnswer | Promise<SinkAnswer>> = {
  '/ok': () => ({ body: 'thanks' }),
  '/fail': () => ({ status: 500, body: 'x'.repeat(5000) }),
  '/slow': async () => { await sleep(3000); return { body: 'too late' } },
  '/redirect': () => ({ status: 302, headers: { location: `${subscriber.url}/ok` } })
}
const subscriber = await startDeliverySink(t, {
  answer: async ({ path, headers, body }) => {
    try {
      verifier.verify(body, headers as Record<string, string>)
    } catch {
      forged++
      return { status: 401 }
    }
    received.push({ id: String(headers['webhook-id']), path, body: JSON.parse(body) })
    return await (behaviours[path] ?? behaviours['/ok']!)()
  }
})

// Short bounds (README, Event subscriptions): retries after 100 then 200 ms, for at most 600 ms of waits,
// so a failing delivery makes 4 attempts; two failed deliveries in a row disable a subscription.
const stack = await startStack(t, {
  env: {
    HTTP_REQUEST_ALLOW_PRIVATE: 'true',
    EVENT_DELIVERY_TIMEOUT_MS: '500',
    EVENT_DELIVERY_RETRY_BASE_MS: '100',
    EVENT_DELIVERY_RETRY_MAX_DELAY_MS: '200',
    EVENT_DELIVERY_RETRY_WINDOW_MS: '600',
    EVENT_SUBSCRIPTION_DISABLE_AFTER: '2',
    RECONCILER_INTERVAL_MS: '500',
    RECONCILER_GRACE_MS: '500'
  }
})
const token = await stack.adminToken()
const url = (path: string): string => `${subscriber.url}${path}`

/** A user of their own with a subscription of `path` to workflow.run.failed. */
async function subscribed (path: string) {
  const user = await stack.client.newUser(token)
  const created = await stack.call('POST', '/api/automation/subscriptions', { token: user.token, body: { url: url(path), events: ['workflow.run.failed'], secret: SECRET } })
  if (created.status !== 201) throw new Error(`subscription: ${created.status} ${JSON.stringify(created.body)}`)
  return { user, subscription: created.body as { id: string } }
}

/** A run of `userToken`'s that fails (its http_request goes to a metadata address, refused without traffic): one workflow.run.failed. */
async function failedRun (userToken: string): Promise<string> {
  const run = await stack.client.runWorkflow(userToken, { name: 'fails', nodes: [{ id: 'call', type: 'http_request', config: { url: 'http://169.254.169.254/' } }] }, {}, { statuses: ['FAILED'] })
  return run.id
}

async function deliveriesOf (userToken: string, subscriptionId: string, status?: string): Promise<Array<Record<string, any>>> {
  const res = await stack.call('GET', `/api/automation/subscriptions/${subscriptionId}/deliveries${status === undefined ? '' : `?status=${status}`}`, { token: userToken })
  if (res.status !== 200) throw new Error(`deliveries: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

async function finishedDelivery (userToken: string, subscriptionId: string, count = 1): Promise<Array<Record<string, any>>> {
  return await waitFor(async () => {
    const all = await deliveriesOf(userToken, subscriptionId)
    return all.length >= count && all.every((delivery) => delivery.status !== 'pending') ? all : undefined
  }, { what: 'deliveries to finish', timeoutMs: 30_000 })
}

async function detail (userToken: string, deliveryId: string): Promise<Record<string, any>> {
  const res = await stack.call('GET', `/api/automation/subscriptions/deliveries/${deliveryId}`, { token: userToken })
  if (res.status !== 200) throw new Error(`delivery: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

t.test('a failed run is POSTed to its owner\'s subscriber, signed per Standard Webhooks; every attempt is recorded; a replay keeps the webhook-id', async (t) => {
  const { user, subscription } = await subscribed('/ok')
  const runId = await failedRun(user.token)
  const [delivery] = await finishedDelivery(user.token, subscription.id)
  t.match(delivery, { status: 'succeeded', eventName: 'workflow.run.failed', attempts: 1, payload: { runId } })
  const got = received.filter((entry) => entry.id === delivery!.id)
  t.equal(got.length, 1, 'received once, verified with the standardwebhooks package')
  t.match(got[0]!.body, { type: 'workflow.run.failed', data: { runId, workflowId: String, error: /cloud metadata/ } })
  const { attemptLog } = await detail(user.token, delivery!.id)
  t.match(attemptLog, [{ statusCode: 200, responseExcerpt: 'thanks', error: null, latencyMs: Number }])

  const replay = await stack.call('POST', `/api/automation/subscriptions/deliveries/${delivery!.id}/replay`, { token: user.token })
  t.equal(replay.status, 202)
  await waitFor(async () => received.filter((entry) => entry.id === delivery!.id).length === 2 ? true : undefined, { what: 'the replay' })
  await waitFor(async () => (await detail(user.token, delivery!.id)).attemptLog.length === 2 ? true : undefined, { what: 'the replay\'s attempt' })
  t.equal(forged, 0, 'every signature verified')

  const other = await stack.client.newUser(token)
  t.equal((await stack.call('GET', `/api/automation/subscriptions/deliveries/${delivery!.id}`, { token: other.token })).status, 404, 'another user\'s delivery is not found')
  t.equal((await stack.call('POST', `/api/automation/subscriptions/deliveries/${delivery!.id}/replay`, { token: other.token })).status, 404)
})

t.test('a subscriber answering 500: retried with backoff, then failed, the answer kept to 1 KiB; failing on disables the subscription, and the owner sees why', async (t) => {
  const { user, subscription } = await subscribed('/fail')
  await failedRun(user.token)
  const [first] = await finishedDelivery(user.token, subscription.id)
  t.match(first, { status: 'failed', attempts: 4 }, '4 attempts within the 600 ms window of waits (100, 200, 200)')
  const { attemptLog } = await detail(user.token, first!.id)
  t.equal(attemptLog.length, 4)
  for (const attempt of attemptLog) {
    t.match(attempt, { statusCode: 500, error: 'HTTP 500' })
    t.equal(attempt.responseExcerpt.length, 1024, 'the excerpt is bounded')
  }
  let view = (await stack.call('GET', `/api/automation/subscriptions/${subscription.id}`, { token: user.token })).body
  t.match(view, { enabled: true, consecutiveFailures: 1, disabledReason: null })

  await failedRun(user.token)
  await finishedDelivery(user.token, subscription.id, 2)
  view = (await stack.call('GET', `/api/automation/subscriptions/${subscription.id}`, { token: user.token })).body
  t.match(view, { enabled: false, consecutiveFailures: 2, disabledReason: 'Disabled after 2 failed deliveries in a row; the last: HTTP 500' })

  await failedRun(user.token)
  await sleep(1500)
  t.equal((await deliveriesOf(user.token, subscription.id)).length, 2, 'a disabled subscription gets no deliveries')

  const enabled = await stack.call('PATCH', `/api/automation/subscriptions/${subscription.id}`, { token: user.token, body: { enabled: true } })
  t.match(enabled.body, { enabled: true, consecutiveFailures: 0, disabledReason: null }, 'enabling again clears the failures and the reason')
})

t.test('a subscriber that answers slowly: the attempt ends at EVENT_DELIVERY_TIMEOUT_MS', async (t) => {
  const { user, subscription } = await subscribed('/slow')
  await failedRun(user.token)
  const [delivery] = await finishedDelivery(user.token, subscription.id)
  t.equal(delivery!.status, 'failed')
  const { attemptLog } = await detail(user.token, delivery!.id)
  for (const attempt of attemptLog) {
    t.match(attempt, { statusCode: null, error: 'No answer within 500 ms (EVENT_DELIVERY_TIMEOUT_MS)' })
    t.ok(attempt.latencyMs < 2500, `cut at the timeout (${attempt.latencyMs} ms)`)
  }
})

t.test('a redirect (here to a private address) is not followed: a 3xx is a failed attempt', async (t) => {
  const { user, subscription } = await subscribed('/redirect')
  await failedRun(user.token)
  const [delivery] = await finishedDelivery(user.token, subscription.id)
  t.equal(delivery!.status, 'failed')
  const { attemptLog } = await detail(user.token, delivery!.id)
  t.match(attemptLog[0], { statusCode: 302, error: 'Redirect (302) not followed: a delivery\'s URL must answer 2xx itself' })
  t.equal(received.filter((entry) => entry.id === delivery!.id && entry.path === '/ok').length, 0, 'the redirect target was never called')
})

t.test('workflow.run.succeeded and workflow.run.cancelled: written only while someone listens, delivered with their payloads', async (t) => {
  const user = await stack.client.newUser(token)
  const sql = postgres(stack.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await sql.end() })
  const unheard = await stack.client.runWorkflow(user.token, { name: 'quiet' }, {}, { statuses: ['SUCCESS'] })
  t.same(await sql`select id from events where payload->>'runId' = ${unheard.id}`, [], 'nobody listens: the success writes no event')

  const created = await stack.call('POST', '/api/automation/subscriptions', { token: user.token, body: { url: url('/ok'), events: ['workflow.run.succeeded', 'workflow.run.cancelled'], secret: SECRET } })
  t.equal(created.status, 201)
  const succeeded = await stack.client.runWorkflow(user.token, { name: 'heard' }, {}, { statuses: ['SUCCESS'] })
  const success = await waitFor(async () => received.find((entry) => entry.body.type === 'workflow.run.succeeded' && entry.body.data.runId === succeeded.id), { what: 'the success delivered' })
  t.match(success.body.data, { runId: succeeded.id, workflowId: succeeded.workflowId, durationMs: Number })

  const workflowId = await stack.client.createWorkflow(user.token, { name: 'waits', nodes: [{ id: 'pause', type: 'wait', config: { seconds: 60 } }] })
  const runId = await stack.client.fire(user.token, workflowId)
  await stack.client.runReaching(user.token, runId, ['WAITING'])
  t.equal((await stack.call('POST', `/api/automation/runs/${runId}/cancel`, { token: user.token })).status, 200)
  const cancel = await waitFor(async () => received.find((entry) => entry.body.type === 'workflow.run.cancelled' && entry.body.data.runId === runId), { what: 'the cancel delivered' })
  t.same(cancel.body.data, { runId, workflowId })
})

t.test('the subscription routes: validation, the secret shown once, owner scoping', async (t) => {
  const user = await stack.client.newUser(token)
  const call = async (method: string, path: string, body?: unknown) => await stack.call(method, `/api/automation/subscriptions${path}`, { token: user.token, body })
  const unknown = await call('POST', '', { url: url('/ok'), events: ['workflow.run.failed', 'run.exploded'] })
  t.equal(unknown.status, 400)
  t.match(unknown.body.message, /Unknown event "run.exploded"/)
  const metadata = await call('POST', '', { url: 'http://169.254.169.254/latest', events: ['workflow.run.failed'] })
  t.match(metadata, { status: 400, body: { message: 'url refused: Blocked request to cloud metadata address 169.254.169.254' } }, 'metadata is refused even with private addresses allowed')
  t.equal((await call('POST', '', { url: url('/ok'), events: ['chat.message.failed'], secret: 'whsec_short' })).status, 400)
  t.equal((await call('POST', '', { url: 'ftp://example.com/', events: ['chat.message.failed'] })).status, 400)

  const created = await call('POST', '', { url: url('/ok'), events: ['workflow.run.succeeded', 'chat.message.failed'] })
  t.equal(created.status, 201)
  t.match(created.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/, 'a generated secret, shown once')
  t.equal(new Webhook(created.body.secret).sign('msg', new Date(), 'x').startsWith('v1,'), true, 'usable by the standardwebhooks package')
  const listed = await call('GET', '')
  t.equal(listed.body.length, 1)
  t.notOk('secret' in listed.body[0], 'no secret in a list')
  t.notOk('secret' in (await call('GET', `/${created.body.id}`)).body, 'nor in a read')

  const other = await stack.client.newUser(token)
  t.equal((await stack.call('GET', `/api/automation/subscriptions/${created.body.id}`, { token: other.token })).status, 404)
  t.equal((await stack.call('PATCH', `/api/automation/subscriptions/${created.body.id}`, { token: other.token, body: { enabled: false } })).status, 404)
  t.equal((await stack.call('DELETE', `/api/automation/subscriptions/${created.body.id}`, { token: other.token })).status, 404)
  t.equal((await stack.call('GET', `/api/automation/subscriptions/${created.body.id}`, { token })).status, 200, 'an admin sees everyone\'s')
  t.equal((await call('GET', '/not-a-cuid!')).status, 404)
  t.equal((await call('DELETE', `/${created.body.id}`)).status, 204)
  t.equal((await call('GET', `/${created.body.id}`)).status, 404)
})

t.test('10,000 events in a burst: every one delivered at least once, with bounded memory', async (t) => {
  const { user, subscription } = await subscribed('/ok')
  const sql = postgres(stack.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await sql.end() })
  const before = new Set(received.map((entry) => entry.id))
  // Written as the outbox holds them, undispatched: the reconciler dispatches them in batches.
  await sql`
    insert into events (id, name, user_id, payload, created_at)
    select 'burst' || n, 'workflow.run.failed', ${user.id}, jsonb_build_object('runId', 'r' || n, 'workflowId', 'w', 'error', 'burst'), now() - interval '1 minute'
    from generate_series(1, 10000) n`
  let peakRss = 0
  const pid = stack.workers[0]!.child.pid!
  const delivered = await waitFor(async () => {
    const { readFile } = await import('node:fs/promises')
    const status = await readFile(`/proc/${pid}/status`, 'utf8')
    peakRss = Math.max(peakRss, Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024)
    const runIds = new Set(received.filter((entry) => !before.has(entry.id) && entry.body.data.error === 'burst').map((entry) => entry.body.data.runId))
    return runIds.size === 10_000 ? runIds : undefined
  }, { what: '10,000 deliveries', timeoutMs: 110_000, intervalMs: 500 })
  t.equal(delivered.size, 10_000, 'every event reached the subscriber')
  const [{ count }] = await sql`select count(*)::int as count from event_deliveries where subscription_id = ${subscription.id} and status = 'succeeded'`
  t.equal(count, 10_000, 'every delivery succeeded')
  t.ok(peakRss < 512 * 1024 * 1024, `the worker stayed under 512 MiB (${Math.round(peakRss / 1024 / 1024)} MiB at most)`)
})
