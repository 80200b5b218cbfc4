/**
 * The api and a worker as real processes on a three-node Redis Cluster started by the test
 * (REDIS_CLUSTER_NODES for the processes, a redis+cluster:// REDIS_URL for the in-process api
 * at the end): every queue, the cron schedulers, delayed resumes, queue counters and the login
 * limiter work, and each queue's keys sit in the slot of its hash tag.
 */
import t from 'tap'
import { QUEUE_NAMES } from '@switchboard/core/queues'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { deliver, FAKE_ACCESS_TOKEN, messagesDelivery, newWamid, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { startRedisCluster } from '@switchboard/testing/redis-cluster'
import { waitFor } from '@switchboard/testing/wait'
import { LOGIN_LIMITS_PER_MINUTE } from '../../apps/api/src/routes/api/auth/index.ts'
import { buildTestApp } from '../../apps/api/test/helper.ts'

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'e2e-cluster-app-secret'

const cluster = await startRedisCluster(t)
const fake = await startFakeChatPlatform()
t.teardown(async () => { await fake.close() })
const stack = await startStack(t, {
  env: {
    REDIS_URL: '',
    REDIS_CLUSTER_NODES: cluster.nodeList,
    CRON_MIN_INTERVAL_SECONDS: '1',
    CHAT_API_URL: fake.url,
    CHAT_ACCESS_TOKEN: FAKE_ACCESS_TOKEN,
    CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    CHAT_APP_SECRET: APP_SECRET,
    // The event subscription below delivers to the test's own receiver on loopback.
    HTTP_REQUEST_ALLOW_PRIVATE: 'true',
    // The test is the proxy that names each login's client address.
    TRUST_PROXY: 'loopback'
  }
})
const prefix = stack.env.QUEUE_PREFIX
const { client } = stack
const token = await stack.adminToken()

/** Every key of this stack on each node, by node index. */
async function keysByNode (): Promise<string[][]> {
  return Promise.all(cluster.clients.map(async (node) => {
    const keys: string[] = []
    let cursor = '0'
    do {
      const [next, page] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
      keys.push(...page)
      cursor = next
    } while (cursor !== '0')
    return keys
  }))
}

t.test('the api and the worker are ready on the cluster', async (t) => {
  const ready = await stack.call('GET', '/health/ready')
  t.match([ready.status, ready.body], [200, { status: 'ok', checks: { database: 'ok', redis: 'ok' } }])

  const listening = /"port":(\d+)[^\n]*"msg":"worker http listening"/.exec(stack.workers[0].output())
  t.ok(listening, 'the worker says where its probes listen')
  const workerUrl = `http://127.0.0.1:${listening?.[1] ?? 0}`
  const workerReady = await fetch(`${workerUrl}/health/ready`)
  t.same([workerReady.status, await workerReady.json()], [200, { status: 'ok', checks: { database: 'ok', redis: 'ok' } }])

  const metrics = await (await fetch(`${stack.metricsUrl}/metrics`)).text()
  t.match(metrics, /^switchboard_redis_up\{connection="producer"\} 1$/m, 'the api\'s cluster connection counts as up')
  const workerMetrics = await (await fetch(`${workerUrl}/metrics`)).text()
  for (const connection of ['producer', 'worker']) {
    t.match(workerMetrics, new RegExp(`^switchboard_redis_up\\{connection="${connection}"\\} 1$`, 'm'), `the worker's ${connection} cluster connection counts as up`)
  }
})

t.test('fire, a wait resumed by its delayed job, an agent run and an inbound webhook run on the cluster', async (t) => {
  const waited = await client.runWorkflow(token, {
    nodes: [
      { id: 'pause', type: 'wait', config: { seconds: 1 }, next: 'done' },
      { id: 'done', type: 'set', config: { values: { said: '{{triggerData.say}}' } } }
    ]
  }, { say: 'hello' })
  t.equal(waited.status, 'SUCCESS', waited.error ?? '')
  t.equal(waited.result.done.said, 'hello')
  t.ok(waited.logs.some((line) => line.message === 'Run resumed'), 'resumed after its wait')

  const agent = await client.runWorkflow(token, { triggerType: 'AGENT', nodes: [{ id: 'reply', type: 'set', config: { values: { ok: 'yes' } } }] })
  t.equal(agent.status, 'SUCCESS', agent.error ?? '')

  const webhookId = await client.createWorkflow(token, { triggerType: 'WEBHOOK' })
  const answer = await fetch(`${stack.baseUrl}/api/automation/webhook/${webhookId}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order: 7 })
  })
  const received = await answer.json() as { status: string, runId: string }
  t.equal(received.status, 'received')
  const webhookRun = await client.runReaching(token, received.runId)
  t.equal(webhookRun.status, 'SUCCESS', webhookRun.error ?? '')
  t.same(webhookRun.triggerData.body, { order: 7 })
})

t.test('a cron schedule ticks on the cluster', async (t) => {
  const workflowId = await client.createWorkflow(token, { triggerType: 'CRON', triggerConfig: { cronExpression: '* * * * * *' } })
  const runs = await waitFor(async () => {
    const finished = (await client.runsOf(token, workflowId)).filter((run) => run.status === 'SUCCESS')
    return finished.length >= 2 ? finished : undefined
  }, { what: 'two cron runs' })
  const ticks = runs.map((run) => run.triggerData.scheduledAt)
  t.equal(new Set(ticks).size, ticks.length, 'one run per tick')
  const off = await stack.call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { isActive: false } })
  t.equal(off.status, 200)
})

t.test('an inbound chat message is processed on the cluster and its KEYWORD run replies', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['cluster'] },
    nodes: [{ id: 'reply', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'on the cluster' } }]
  })
  const delivered = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: '15550001111', name: 'Ana', text: 'cluster?', wamid: newWamid() }]), APP_SECRET)
  t.equal(delivered.status, 200)
  const run = await client.latestRunReaching(token, workflowId)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(fake.sends().at(-1)?.body, { to: '15550001111', text: { body: 'on the cluster' } })
})

t.test('a broadcast is sent on the cluster, its rate limit a key of its own', async (t) => {
  const created = await stack.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'hello_world', recipients: [{ to: '15550002222' }, { to: '15550003333' }] } })
  t.equal(created.status, 201)
  const done = await waitFor(async () => {
    const { body } = await stack.call('GET', `/api/chat/broadcasts/${created.body.id}`, { token })
    return body.status === 'done' ? body : undefined
  }, { what: 'the broadcast to be sent' })
  t.match(done.counts, { sent: 2, failed: 0 })
})

t.test('an event subscription is delivered on the cluster', async (t) => {
  const receiver = await startDeliverySink(t, { answer: () => ({ body: 'ok' }) })
  const received = receiver.deliveries
  const url = `${receiver.url}/events`
  const subscribed = await stack.call('POST', '/api/automation/subscriptions', { token, body: { url, events: ['workflow.run.succeeded'] } })
  t.equal(subscribed.status, 201, JSON.stringify(subscribed.body))
  const workflowId = await client.createWorkflow(token, { name: 'subscribed on the cluster' })
  await client.runReaching(token, await client.fire(token, workflowId))
  await waitFor(async () => received.length > 0 ? true : undefined, { what: 'the event to be delivered' })
  t.match(received[0]?.headers['webhook-id'], /.+/, 'a delivery with its webhook-id')
})

t.test('a knowledge source is indexed on the cluster', async (t) => {
  const added = await stack.call('POST', '/api/chat/accounts/default/knowledge', { token, body: { type: 'text', title: 'Cluster', content: 'Passages indexed on the cluster.' } })
  t.equal(added.status, 202, JSON.stringify(added.body))
  const source = await waitFor(async () => {
    const { body } = await stack.call('GET', `/api/chat/accounts/default/knowledge/${added.body.id}`, { token })
    return body.status === 'indexing' ? undefined : body
  }, { what: 'the source to be indexed' })
  t.match(source, { status: 'ready', chunks: 1 })
})

t.test('queue counters come from the cluster, and each queue lives in the slot of its hash tag', async (t) => {
  // A job is counted completed after its processor returns: the event receiver above has its request before the delivery job finishes.
  const counted = async (): Promise<{ status: number, body: any }> => await stack.call('GET', '/api/automation/queues', { token })
  const { status, body } = await waitFor(async () => {
    const answer = await counted()
    return answer.body.queues?.every((q: { completed: number }) => q.completed >= 1) === true ? answer : undefined
  }, { what: 'a completed job on every queue' }).catch(counted)
  t.equal(status, 200)
  for (const name of QUEUE_NAMES) {
    const queue = body.queues.find((q: { name: string }) => q.name === name)
    t.notOk(queue.error, `${name}: no error`)
    t.ok(queue.completed >= 1, `${name}: its completed jobs are counted (${queue.completed})`)
  }

  const byNode = await keysByNode()
  const home = await Promise.all(QUEUE_NAMES.map(async (name) => await cluster.nodeOf(`{${name}}`)))
  QUEUE_NAMES.forEach((name, i) => {
    const holders = byNode.map((keys, node) => keys.some((key) => key.startsWith(`${prefix}:{${name}}:${name}:`)) ? node : -1).filter((node) => node >= 0)
    t.same(holders, [home[i]], `${name}: every key on node ${home[i]}, the one serving {${name}}`)
  })
  t.ok(new Set(home).size > 1, `the queues spread over nodes ${[...new Set(home)].join(', ')}`)
  // Logins so far left rate-limit counters, which need no hash tag.
  const stray = byNode.flat().filter((key) => !key.startsWith(`${prefix}:rate-limit:`) && !QUEUE_NAMES.some((name) => key.startsWith(`${prefix}:{${name}}:`)))
  t.same(stray, [], 'no queue key outside its hash tag')
})

t.test('the login limiter counts in the cluster', async (t) => {
  const statuses: number[] = []
  for (let i = 0; i <= LOGIN_LIMITS_PER_MINUTE.address; i++) {
    const res = await stack.call('POST', '/api/auth/login', { headers: { 'x-forwarded-for': '198.51.100.20' }, body: { email: `guess-${i}@example.com`, password: 'wrong-password' } })
    statuses.push(res.status)
  }
  t.same(statuses.slice(0, LOGIN_LIMITS_PER_MINUTE.address), Array(LOGIN_LIMITS_PER_MINUTE.address).fill(401))
  t.equal(statuses.at(-1), 429, 'refused after the per-address limit')
  const limits = (await keysByNode()).map((keys) => keys.filter((key) => key.startsWith(`${prefix}:rate-limit:`)))
  t.ok(limits.flat().some((key) => key.endsWith('login:address:198.51.100.20')), 'the counter is in the cluster')
  t.ok(limits.filter((keys) => keys.length > 0).length > 1, 'rate-limit keys carry no hash tag: they spread over nodes')
})

t.test('a redis+cluster:// REDIS_URL works the same (in-process api)', async (t) => {
  const { request } = await buildTestApp(t, { REDIS_URL: cluster.url })
  const ready = await request({ method: 'GET', url: '/health/ready' })
  t.match(ready.json(), { status: 'ok', checks: { database: 'ok', redis: 'ok' } })
})

t.test('a cluster that stops serving every slot makes the api degraded', async (t) => {
  const stopped = cluster.nodes[2]
  stopped.process.kill('SIGKILL')
  const degraded = await waitFor(async () => {
    const ready = await stack.call('GET', '/health/ready')
    return ready.body.status === 'degraded' ? ready : undefined
  }, { what: 'readiness to say degraded', timeoutMs: 30_000 })
  t.same([degraded.status, degraded.body.checks], [200, { database: 'ok', redis: 'unavailable' }])
})
