/**
 * What an operator sees of a run: the series both /metrics endpoints export, and one request id
 * from the webhook's answer through the api's log, the job, the worker's log and the run's lines.
 */
import postgres from 'postgres'
import t from 'tap'
import { createTestDatabase } from '@switchboard/testing/database'
import { freePort, startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const workerPort = await freePort()
const database = await createTestDatabase()
// Debug: node lines reach the worker's log at debug.
const stack = await startStack(t, { database, env: { WORKER_HTTP_PORT: String(workerPort), LOG_LEVEL: 'debug' } })
const token = await stack.adminToken()

/** Every application series, on both processes. */
const SERIES = [
  'switchboard_runs_created_total',
  'switchboard_runs_finished_total',
  'switchboard_run_duration_seconds_bucket',
  'switchboard_queue_wait_seconds_bucket',
  'switchboard_node_duration_seconds_bucket',
  'switchboard_queue_jobs',
  'switchboard_chat_sends_total',
  'switchboard_chat_inbound_deliveries_total',
  'switchboard_webhook_answers_total',
  'switchboard_reconciler_actions_total',
  'switchboard_event_deliveries_total',
  'switchboard_retention_total',
  'switchboard_database_up',
  'switchboard_database_pool_max',
  'switchboard_database_pool_in_use',
  'switchboard_redis_up'
]

async function createWorkflow (triggerType: string, nodes: unknown[]): Promise<string> {
  const res = await stack.call('POST', '/api/automation/workflows', { token, body: { name: triggerType, triggerType, isActive: true, domain: 'CLIENTS', nodes } })
  if (res.status !== 201) throw new Error(`create failed: ${JSON.stringify(res.body)}`)
  return res.body.id
}

async function finished (runId: string): Promise<{ status: string, logs: Array<{ nodeId: string | null, level: string, message: string }> }> {
  return await waitFor(async () => {
    const res = await stack.call('GET', `/api/automation/runs/${runId}`, { token })
    return ['SUCCESS', 'FAILED'].includes(res.body.status) ? res.body : undefined
  }, { what: `run ${runId} to finish` })
}

/** The value of one sample (`name{labels} value`), or undefined when absent. */
function sample (text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

const scrape = async (url: string): Promise<string> => await (await fetch(url)).text()

const webhookWorkflow = await createWorkflow('WEBHOOK', [{ id: 'greet', type: 'set', config: { values: { hello: '{{triggerData.body.name}}' } } }])
const requestId = 'req-observability-0001'
const webhook = await stack.call('POST', `/api/automation/webhook/${webhookWorkflow}`, { body: { name: 'Ana' }, headers: { 'x-request-id': requestId } })
const webhookRun = await finished(webhook.body.runId)
// Fails at once: the address guard refuses loopback before any connection.
const failing = await createWorkflow('MANUAL', [{ id: 'call', type: 'http_request', config: { method: 'GET', url: 'http://127.0.0.1:9/' } }])
const failedRun = await finished((await stack.call('POST', `/api/automation/workflows/${failing}/fire`, { token, body: {} })).body.runId)
const ignored = await stack.call('POST', '/api/automation/webhook/not-a-workflow', { body: {} })

t.test('the request id follows a webhook from the api to its run', async (t) => {
  t.equal(webhook.headers.get('x-request-id'), requestId, 'echoed')
  t.equal(webhookRun.status, 'SUCCESS')
  t.ok(webhookRun.logs.some((line) => line.nodeId === null && line.message === `Request id: ${requestId}`), 'on the run\'s log lines')
  const apiLines = stack.api.output().split('\n').filter((line) => line.includes(`"requestId":"${requestId}"`)).map((line) => JSON.parse(line))
  t.match(apiLines.filter((line) => line.level >= 30), [{
    level: 30,
    requestId,
    req: { method: 'POST', url: `/api/automation/webhook/${webhookWorkflow}` },
    res: { statusCode: 200 },
    responseTime: Number,
    msg: 'request completed'
  }], 'on the api\'s one line for the request: method, URL, status and response time')
  t.equal(apiLines.filter((line) => line.level >= 30).length, 1, 'one line at info')
  t.match(apiLines.filter((line) => line.level < 30), [{ level: 20, msg: 'incoming request', req: { method: 'POST' } }], 'its arrival at debug')
  const workerLines = stack.workers[0]!.output().split('\n').filter((line) => line.includes(`"requestId":"${requestId}"`)).map((line) => JSON.parse(line))
  t.ok(workerLines.length > 0, 'on the worker\'s lines')
  t.ok(workerLines.every((line) => line.runId === webhook.body.runId), 'each with the run id')
  t.ok(workerLines.filter((line) => line.msg !== 'run job done').every((line) => line.workflowId === webhookWorkflow), 'the engine\'s with the workflow id')
  t.ok(workerLines.some((line) => line.level === 30 && line.msg === 'Run started'), 'run lines at info')
  t.ok(workerLines.some((line) => line.level === 20 && line.nodeId === 'greet' && /^Node greet completed in \d+ms$/.test(line.msg)), 'node lines at debug, with nodeId')
  t.ok(workerLines.some((line) => line.level === 30 && line.msg === 'Run succeeded'))
})

t.test('the api logs probes at debug, other requests at info; scrapes go to the metrics listener', async (t) => {
  await fetch(`${stack.baseUrl}/health/ready`)
  await scrape(`${stack.metricsUrl}/metrics`)
  const completed = (): Array<{ level: number, req: { url: string } }> =>
    stack.api.output().split('\n').filter((line) => line.includes('"msg":"request completed"')).map((line) => JSON.parse(line))
  // The line is written once the answer is sent, maybe after the client has read it.
  const lines = await waitFor(async () => completed().some((line) => line.req.url === '/health/ready') ? completed() : undefined, { what: 'the probe\'s request line' })
  t.notOk(lines.some((line) => line.req.url === '/metrics'), 'no request line for a scrape')
  for (const path of ['/health/live', '/health/ready']) {
    const probes = lines.filter((line) => line.req.url === path)
    t.ok(probes.length > 0 && probes.every((line) => line.level === 20), `${path} at debug`)
  }
  t.ok(lines.some((line) => line.req.url === '/api/automation/webhook/not-a-workflow' && line.level === 30), 'a request at info')
})

t.test('the engine\'s failure lines reach the worker log at their level', async (t) => {
  t.equal(failedRun.status, 'FAILED')
  const lines = stack.workers[0]!.output().split('\n').filter((line) => line.includes('"runId"') && line.includes(failing)).map((line) => JSON.parse(line))
  t.ok(lines.some((line) => line.level === 50 && line.nodeId === 'call' && line.msg.startsWith('Node call failed')), 'node error at error')
  t.ok(lines.some((line) => line.level === 50 && line.msg === 'Run failed' && typeof line.error === 'string'))
})

t.test('a request id is generated when missing, and replaced when it is not a plain token', async (t) => {
  const generated = await stack.call('GET', '/health/live')
  t.match(generated.headers.get('x-request-id'), /^[0-9a-f-]{36}$/)
  const hostile = await stack.call('GET', '/health/live', { headers: { 'x-request-id': `${'x'.repeat(129)}` } })
  t.match(hostile.headers.get('x-request-id'), /^[0-9a-f-]{36}$/)
  const forged = await stack.call('GET', '/health/live', { headers: { 'x-request-id': 'a"}{"level":60' } })
  t.match(forged.headers.get('x-request-id'), /^[0-9a-f-]{36}$/)
})

t.test('both /metrics endpoints show every series; each process counts what it did', async (t) => {
  t.equal(ignored.body.status, 'ignored')
  const api = await scrape(`${stack.metricsUrl}/metrics`)
  const worker = await scrape(`http://127.0.0.1:${workerPort}/metrics`)
  for (const series of SERIES) {
    t.match(api, new RegExp(`^${series}[{ ]`, 'm'), `api: ${series}`)
    t.match(worker, new RegExp(`^${series}[{ ]`, 'm'), `worker: ${series}`)
  }
  t.equal(sample(api, 'switchboard_runs_created_total{trigger_type="WEBHOOK",domain="CLIENTS"}'), 1)
  t.equal(sample(api, 'switchboard_runs_created_total{trigger_type="MANUAL",domain="CLIENTS"}'), 1)
  t.equal(sample(api, 'switchboard_webhook_answers_total{status="received"}'), 1)
  t.equal(sample(api, 'switchboard_webhook_answers_total{status="ignored"}'), 1)
  t.equal(sample(worker, 'switchboard_runs_finished_total{status="SUCCESS"}'), 1)
  t.equal(sample(worker, 'switchboard_runs_finished_total{status="FAILED"}'), 1)
  t.equal(sample(worker, 'switchboard_run_duration_seconds_count{status="SUCCESS"}'), 1)
  t.equal(sample(worker, 'switchboard_node_duration_seconds_count{node_type="set",outcome="success"}'), 1)
  t.equal(sample(worker, 'switchboard_node_duration_seconds_count{node_type="http_request",outcome="failure"}'), 1)
  t.ok((sample(worker, 'switchboard_queue_wait_seconds_count{queue="workflow-runs"}') ?? 0) >= 2)
  for (const text of [api, worker]) {
    t.equal(sample(text, 'switchboard_queue_jobs{queue="workflow-runs",state="waiting"}'), 0)
    t.equal(sample(text, 'switchboard_database_up'), 1)
    t.equal(sample(text, 'switchboard_redis_up{connection="producer"}'), 1)
  }
  t.equal(sample(worker, 'switchboard_redis_up{connection="worker"}'), 1)
  t.notMatch(api + worker, webhookWorkflow, 'no workflow id in any label')
  t.notMatch(api + worker, webhook.body.runId, 'no run id in any label')
})

t.test('the pool-in-use gauge counts the connections requests hold, and falls back to 0 once they are answered', async (t) => {
  const held = 3
  const locker = postgres(database.url, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await locker.end() })
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  let lockTaken!: () => void
  const locked = new Promise<void>((resolve) => { lockTaken = resolve })
  // Every read of workflows waits for this lock, each on a connection of the api's pool.
  const holding = locker.begin(async (tx) => {
    await tx`lock table workflows in access exclusive mode`
    lockTaken()
    await released
  })
  await locked
  const reads = Array.from({ length: held }, async () => await stack.call('GET', `/api/automation/workflows/${webhookWorkflow}`, { token }))
  const inUse = await waitFor(async () => {
    const value = sample(await scrape(`${stack.metricsUrl}/metrics`), 'switchboard_database_pool_in_use')
    return value !== undefined && value >= held ? value : undefined
  }, { what: `${held} connections in use` })
  t.ok(inUse <= 10, `${inUse} in use, within DATABASE_POOL_MAX`)
  release()
  await holding
  t.same((await Promise.all(reads)).map((res) => res.status), Array(held).fill(200), 'the reads were answered once the lock went')
  await waitFor(async () => sample(await scrape(`${stack.metricsUrl}/metrics`), 'switchboard_database_pool_in_use') === 0 ? true : undefined, { what: 'no connection in use' })
  t.pass('back to 0')
})
