import { createHmac } from 'node:crypto'
import { asc, eq } from 'drizzle-orm'
import t from 'tap'
import type { Dispatcher } from 'undici'
import { createCoreTestContext } from '@switchboard/testing/context'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { createTestEngine } from '@switchboard/testing/engine'
import type { ChatSender, SendTemplateInput, SendTextInput } from '../src/chat/sender.ts'
import { runLogs, runs, users, workflows, type WorkflowNode } from '../src/db/schema/index.ts'
import { createHttpClient } from '../src/engine/nodes/http-client.ts'
import { createLogger } from '../src/logger.ts'
import { resumeJobId, WORKFLOW_RUNS } from '../src/queues/catalog.ts'
import { dispatchEvents } from '../src/triggers/event.ts'
import { foldCounterDeltas } from '../src/workflows/counters.ts'

const { db, queues } = await createCoreTestContext(t)
const logger = createLogger('silent', 'engine-test')

/** The local http sink: records every request; the path picks the answer. */
let flaky = 0
const json = { 'content-type': 'application/json' }
const sink = await startDeliverySink(t, {
  delayMs: (path) => path.startsWith('/slow') ? 5000 : 0,
  answer: ({ path, body }) => {
    if (path.startsWith('/slow')) return { body: 'late' }
    if (path.startsWith('/missing')) return { status: 404, body: 'no such thing' }
    if (path.startsWith('/flaky') && flaky++ === 0) return { status: 503 }
    if (path.startsWith('/binary')) return { headers: { 'content-type': 'image/png' }, body: Buffer.from([0x89, 0x50, 0x00, 0x4e]) }
    if (path.startsWith('/escapes')) return { headers: json, body: '{"nul":"a\\u0000b","lone":"\\ud800","pair":"\\ud83d\\ude00","literal":"\\\\u0000"}' }
    return { headers: json, body: JSON.stringify({ id: 'remote-1', echo: body === '' ? null : JSON.parse(body) }) }
  }
})
const received = sink.deliveries

const sent: Array<SendTextInput | SendTemplateInput> = []
const chat: ChatSender = {
  async sendText (input) { sent.push(input); return { wamid: `wamid.text${sent.length}`, to: input.to ?? '' } },
  async sendTemplate (input) { sent.push(input); return { wamid: `wamid.tpl${sent.length}`, to: input.to ?? '' } },
  async sendMedia () { throw new Error('unused') },
  async sendInteractive () { throw new Error('unused') },
  async conversation () { throw new Error('unused') },
  async recentMessages () { throw new Error('unused') },
  async draftText () { throw new Error('unused') },
  async handoff () { throw new Error('unused') },
  async markRead () { throw new Error('unused') }
}

const publicHttp = createHttpClient({ allowPrivate: false })
const engineWith = (http?: Dispatcher) => createTestEngine(t, {
  db,
  queues,
  nodes: { chat, http },
  dispatchEvents: async (eventIds) => await dispatchEvents({ db, queues, logger, eventFanoutMax: 100 }, { ids: eventIds }),
  cancelPollMs: 50
})
const engine = engineWith()

t.teardown(async () => { await publicHttp.close() })

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()

async function workflow (nodes: WorkflowNode[], extra: Partial<typeof workflows.$inferInsert> = {}): Promise<string> {
  const [row] = await db.insert(workflows).values({ userId: owner.id, name: 'wf', triggerType: 'MANUAL', isActive: true, nodes, ...extra }).returning()
  return row.id
}

async function run (workflowId: string, triggerData: unknown = {}, extra: Partial<typeof runs.$inferInsert> = {}): Promise<string> {
  const [row] = await db.insert(runs).values({ workflowId, userId: owner.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData, ...extra }).returning()
  return row.id
}

const readRun = async (id: string) => (await db.select().from(runs).where(eq(runs.id, id)))[0]
/** The workflow row once the counter deltas are folded in, as the worker does. */
const readWorkflow = async (id: string) => {
  await foldCounterDeltas(db)
  return (await db.select().from(workflows).where(eq(workflows.id, id)))[0]
}
const readLogs = async (id: string) => db.select().from(runLogs).where(eq(runLogs.runId, id)).orderBy(asc(runLogs.id))

t.test('a run executes every node, renders templates from triggerData and earlier nodes, and succeeds', async (t) => {
  received.length = 0
  const workflowId = await workflow([
    { id: 'vars', type: 'set', config: { values: { greeting: 'Hello {{triggerData.name}}', count: '{{triggerData.count}}' } } },
    { id: 'post', type: 'http_request', config: { method: 'POST', url: `${sink.url}/orders`, headers: { 'x-run': '{{vars.greeting}}' }, body: { count: '{{vars.count}}', name: '{{triggerData.name}}' } } },
    { id: 'notify', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Order {{post.body.id}} for {{triggerData.name}}' } }
  ])
  const runId = await run(workflowId, { name: 'Ada', count: 2, phone: '15550001111' })

  t.equal(await engine.executeRun(runId), 'SUCCESS')

  t.equal(received.length, 1)
  t.equal(received[0].method, 'POST')
  t.equal(received[0].headers['x-run'], 'Hello Ada')
  t.equal(received[0].headers['content-type'], 'application/json')
  t.equal(received[0].headers['idempotency-key'], `${runId}:post`, 'the node\'s idempotency key')
  t.same(JSON.parse(received[0].body), { count: 2, name: 'Ada' }, 'a single placeholder keeps the number type')
  t.match(sent.at(-1), { userId: owner.id, to: '15550001111', text: 'Order remote-1 for Ada' })

  const row = await readRun(runId)
  t.equal(row.status, 'SUCCESS')
  t.equal(row.error, null)
  t.same(row.result.triggerData, { name: 'Ada', count: 2, phone: '15550001111' })
  t.same(row.result.vars, { greeting: 'Hello Ada', count: 2 })
  t.match(row.result.post, { status: 200, body: { id: 'remote-1', echo: { count: 2, name: 'Ada' } } })
  t.same(row.result.notify, { wamid: `wamid.text${sent.length}`, kind: 'text', to: '15550001111' })
  t.ok(row.startedAt instanceof Date && row.completedAt instanceof Date)
  t.type(row.durationMs, 'number')
  t.equal(row.currentNodeId, null)

  const logs = await readLogs(runId)
  t.same(logs.map((line) => [line.nodeId, line.level, line.message.replace(/\d+ms/, 'Nms')]), [
    [null, 'INFO', 'Run started'],
    ['vars', 'INFO', 'Node vars (set) started'],
    ['vars', 'INFO', 'Node vars completed in Nms'],
    ['post', 'INFO', 'Node post (http_request) started'],
    ['post', 'INFO', `Calling POST ${sink.url}/orders (attempt 1)`],
    ['post', 'INFO', `POST ${sink.url}/orders answered 200`],
    ['post', 'INFO', 'Node post completed in Nms'],
    ['notify', 'INFO', 'Node notify (send_chat) started'],
    ['notify', 'INFO', 'Sending chat message to 15550001111 (attempt 1)'],
    ['notify', 'INFO', 'Node notify completed in Nms'],
    [null, 'INFO', 'Run succeeded in Nms']
  ])
  t.match(await readWorkflow(workflowId), { successCount: 1, failureCount: 0 })
})

t.test('a condition chooses each branch; cases switch on triggerData.body.event', async (t) => {
  const workflowId = await workflow([
    { id: 'check', type: 'condition', config: { field: 'triggerData.amount', operator: 'gt', value: 100, then: 'big', else: 'small' } },
    { id: 'big', type: 'set', config: { values: { size: 'big' } } },
    { id: 'small', type: 'set', config: { values: { size: 'small' } } }
  ])
  const bigRun = await run(workflowId, { amount: 250 })
  const smallRun = await run(workflowId, { amount: '7' })
  t.equal(await engine.executeRun(bigRun), 'SUCCESS')
  t.equal(await engine.executeRun(smallRun), 'SUCCESS')
  const big = await readRun(bigRun)
  t.same(big.result.check, { field: 'triggerData.amount', value: 250, matched: true, next: 'big' })
  t.ok('big' in big.result && !('small' in big.result))
  const small = await readRun(smallRun)
  t.equal((small.result.check as { matched: boolean }).matched, false)
  t.ok('small' in small.result && !('big' in small.result))

  const switchId = await workflow([
    { id: 'route', type: 'condition', config: { field: 'triggerData.body.event', cases: { 'order.created': 'created', 'order.paid': 'paid' }, default: 'other' } },
    { id: 'created', type: 'set', config: { values: { handled: 'created' } } },
    { id: 'paid', type: 'set', config: { values: { handled: 'paid' } } },
    { id: 'other', type: 'set', config: { values: { handled: 'other' } } }
  ])
  for (const [event, expected] of [['order.created', 'created'], ['order.paid', 'paid'], ['order.refunded', 'other']]) {
    const runId = await run(switchId, { body: { event } })
    t.equal(await engine.executeRun(runId), 'SUCCESS')
    const { result } = await readRun(runId)
    t.same(Object.keys(result).sort(), ['route', 'triggerData', expected].sort(), `${event} runs only ${expected}`)
  }
})

t.test('builder edges with handles route a condition', async (t) => {
  const workflowId = await workflow([
    { id: 'check', type: 'condition', config: { field: 'triggerData.vip', operator: 'equals', value: true } },
    { id: 'vip', type: 'set', config: { values: { tier: 'vip' } } },
    { id: 'regular', type: 'set', config: { values: { tier: 'regular' } } }
  ], { edges: [{ source: 'check', target: 'vip', sourceHandle: 'true' }, { source: 'check', target: 'regular', sourceHandle: 'false' }] })
  const vip = await run(workflowId, { vip: true })
  const regular = await run(workflowId, { vip: false })
  await engine.executeRun(vip)
  await engine.executeRun(regular)
  t.same((await readRun(vip)).result.vip, { tier: 'vip' })
  t.notOk('vip' in (await readRun(regular)).result)
  t.same((await readRun(regular)).result.regular, { tier: 'regular' })
})

t.test('a failing node fails the run with its error, counts it and emits workflow.run.failed', async (t) => {
  const listener = await workflow([{ id: 'noop', type: 'set', config: { values: {} } }], { triggerType: 'EVENT', triggerConfig: { eventName: 'workflow.run.failed' } })
  const workflowId = await workflow([
    { id: 'get', type: 'http_request', config: { url: `${sink.url}/missing` } },
    { id: 'after', type: 'set', config: { values: { reached: true } } }
  ])
  const runId = await run(workflowId)
  t.equal(await engine.executeRun(runId), 'FAILED')
  const row = await readRun(runId)
  t.equal(row.status, 'FAILED')
  t.equal(row.error, 'Request failed with status 404')
  t.notOk('after' in row.result)
  t.ok(row.completedAt instanceof Date)
  const logs = await readLogs(runId)
  t.match(logs.at(-2), { nodeId: 'get', level: 'ERROR', message: /^Node get failed after \d+ms: Request failed with status 404$/ })
  t.match(logs.at(-1), { nodeId: null, level: 'ERROR', message: 'Run failed: Request failed with status 404' })
  t.match(await readWorkflow(workflowId), { successCount: 0, failureCount: 1 })

  const [event] = await db.select().from(runs).where(eq(runs.workflowId, listener))
  t.same(event.triggerData, { runId, workflowId, error: 'Request failed with status 404' })
  t.equal(event.status, 'PENDING')
  t.equal(await (await queues[WORKFLOW_RUNS].getJob(event.id))?.getState(), 'waiting', 'the event run is queued')

  // The listener fails too: it emits nothing, so failures cannot loop.
  await db.update(workflows).set({ nodes: [{ id: 'boom', type: 'nope' }] }).where(eq(workflows.id, listener))
  t.equal(await engine.executeRun(event.id), 'FAILED')
  t.equal((await readRun(event.id)).error, 'Unknown node type: nope')
  t.equal((await db.select().from(runs).where(eq(runs.workflowId, listener))).length, 1)
})

t.test('http_request retries a 5xx, and failOnStatus false records the error status', async (t) => {
  flaky = 0
  const workflowId = await workflow([
    { id: 'flaky', type: 'http_request', config: { url: `${sink.url}/flaky`, retries: 2 } },
    { id: 'lenient', type: 'http_request', config: { url: `${sink.url}/missing?token=secret`, failOnStatus: false } }
  ])
  const runId = await run(workflowId)
  t.equal(await engine.executeRun(runId), 'SUCCESS')
  const row = await readRun(runId)
  t.match(row.result.flaky, { status: 200 })
  t.match(row.result.lenient, { status: 404, body: 'no such thing' })
  const logs = await readLogs(runId)
  t.ok(logs.some((line) => line.level === 'WARN' && /answered 503; retrying in 500ms \(1 of 2\)/.test(line.message)))
  t.notOk(logs.some((line) => line.message.includes('secret')), 'query strings stay out of the logs')
})

t.test('http_request refuses private addresses unless they are allowed', async (t) => {
  received.length = 0
  const workflowId = await workflow([{ id: 'call', type: 'http_request', config: { url: `${sink.url}/orders` } }])
  const runId = await run(workflowId)
  t.equal(await engineWith(publicHttp.dispatcher).executeRun(runId), 'FAILED')
  t.equal((await readRun(runId)).error, 'Blocked request to private address 127.0.0.1 (HTTP_REQUEST_ALLOW_PRIVATE=true on the worker allows private and loopback addresses)',
    'the refusal names the setting that allows it')
  t.equal(received.length, 0)

  const metadataRun = await run(await workflow([{ id: 'meta', type: 'http_request', config: { url: 'http://169.254.169.254/latest/meta-data/' } }]))
  t.equal(await engine.executeRun(metadataRun), 'FAILED')
  t.equal((await readRun(metadataRun)).error, 'Blocked request to cloud metadata address 169.254.169.254', 'metadata stays blocked when private is allowed')
})

t.test('verify_signature accepts the right HMAC of the raw body and fails a tampered one', async (t) => {
  const secret = 'webhook-secret'
  const rawBody = Buffer.from('{"event":"paid","amount":10}')
  const signature = `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`
  const workflowId = await workflow([
    { id: 'verify', type: 'verify_signature', config: { secret, header: 'X-Signature', prefix: 'sha256=' } },
    { id: 'ok', type: 'set', config: { values: { event: '{{triggerData.body.event}}' } } }
  ], { triggerType: 'WEBHOOK' })
  const triggerData = (sig: string) => ({ body: JSON.parse(rawBody.toString()), headers: { 'x-signature': sig }, query: {} })

  const valid = await run(workflowId, triggerData(signature), { rawBody })
  t.equal(await engine.executeRun(valid), 'SUCCESS')
  t.same((await readRun(valid)).result.verify, { valid: true })

  const tampered = await run(workflowId, triggerData(signature), { rawBody: Buffer.from('{"event":"paid","amount":99}') })
  t.equal(await engine.executeRun(tampered), 'FAILED')
  t.equal((await readRun(tampered)).error, 'Invalid signature')

  const base64 = await workflow([{ id: 'v', type: 'verify_signature', config: { secret, header: 'x-sig', encoding: 'base64' } }])
  const b64Run = await run(base64, { headers: { 'x-sig': createHmac('sha256', secret).update(rawBody).digest('base64') } }, { rawBody })
  t.equal(await engine.executeRun(b64Run), 'SUCCESS')
})

t.test('a wait suspends the run with a delayed resume job; the resumed run completes', async (t) => {
  const workflowId = await workflow([
    { id: 'pause', type: 'wait', config: { minutes: '{{triggerData.minutes}}' } },
    { id: 'after', type: 'set', config: { values: { done: true } } }
  ])
  const runId = await run(workflowId, { minutes: 5 })
  t.equal(await engine.executeRun(runId), 'WAITING')
  let row = await readRun(runId)
  t.equal(row.status, 'WAITING')
  t.equal(row.currentNodeId, 'pause')
  const until = (row.result.pause as { until: string }).until
  t.ok(Math.abs(Date.parse(until) - Date.now() - 5 * 60_000) < 10_000)
  const job = await queues[WORKFLOW_RUNS].getJob(resumeJobId(runId, 'pause'))
  t.equal(await job?.getState(), 'delayed')
  t.same(job?.data, { runId, userId: row.userId })

  // An early resume (a duplicate job, a reconciler) suspends again without moving on.
  t.equal(await engine.executeRun(runId), 'WAITING')
  t.notOk('after' in (await readRun(runId)).result)

  // Time passes: the stored `until` is due.
  const past = new Date(Date.now() - 1000).toISOString()
  await db.update(runs).set({ result: { ...row.result, pause: { until: past } } }).where(eq(runs.id, runId))
  t.equal(await engine.executeRun(runId), 'SUCCESS')
  row = await readRun(runId)
  t.equal((row.result.pause as { until: string }).until, past)
  t.type((row.result.pause as { resumedAt: string }).resumedAt, 'string')
  t.same(row.result.after, { done: true })
  const messages = (await readLogs(runId)).map((line) => line.message)
  t.ok(messages.includes('Run resumed'))
})

t.test('a cancel while a node runs aborts it and no later node runs; the terminal status stays', async (t) => {
  const workflowId = await workflow([
    { id: 'slow', type: 'http_request', config: { url: `${sink.url}/slow`, timeoutMs: 20000 } },
    { id: 'after', type: 'set', config: { values: { reached: true } } }
  ])
  const runId = await run(workflowId)
  const execution = engine.executeRun(runId)
  for (let i = 0; i < 200 && !received.some((request) => request.path === '/slow'); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  await db.update(runs).set({ status: 'CANCELLED', completedAt: new Date() }).where(eq(runs.id, runId))
  t.equal(await execution, 'STOPPED')
  const row = await readRun(runId)
  t.equal(row.status, 'CANCELLED')
  t.notOk('after' in row.result)
  t.equal(await engine.executeRun(runId), 'SKIPPED', 'a finished run is never taken again')
  t.match(await readWorkflow(workflowId), { successCount: 0, failureCount: 0 })
})

t.test('a RUNNING run whose worker died is taken over from its current node, a bounded number of times', async (t) => {
  received.length = 0
  const workflowId = await workflow([
    { id: 'first', type: 'http_request', config: { url: `${sink.url}/first` } },
    { id: 'second', type: 'http_request', config: { url: `${sink.url}/second` } }
  ])
  const runId = await run(workflowId, {}, {
    status: 'RUNNING', startedAt: new Date(), currentNodeId: 'second', result: { triggerData: {}, first: { status: 200 } }
  })
  t.equal(await engine.executeRun(runId), 'SUCCESS')
  t.same(received.map((request) => request.path), ['/second'], 'the completed node is not run again')
  const row = await readRun(runId)
  t.equal(row.attempt, 1)
  t.match((await readLogs(runId))[0], { message: 'Run taken over after its worker stopped (attempt 1)' })

  const exhausted = await run(workflowId, {}, { status: 'RUNNING', startedAt: new Date(), currentNodeId: 'first', attempt: 3 })
  t.equal(await engine.executeRun(exhausted), 'FAILED')
  t.equal((await readRun(exhausted)).error, 'Run interrupted: its worker stopped 4 times')
})

t.test('a missing template path renders empty and logs a WARN line', async (t) => {
  const workflowId = await workflow([{ id: 'vars', type: 'set', config: { values: { who: 'x{{triggerData.nobody}}y' } } }])
  const runId = await run(workflowId, {})
  t.equal(await engine.executeRun(runId), 'SUCCESS')
  t.same((await readRun(runId)).result.vars, { who: 'xy' })
  t.ok((await readLogs(runId)).some((line) => line.level === 'WARN' && line.nodeId === 'vars' && line.message === 'Template path not found: triggerData.nobody'))
})

t.test('send_chat_template passes its config to the chat sender', async (t) => {
  const workflowId = await workflow([{ id: 'tpl', type: 'send_chat_template', config: { phone: '{{triggerData.phone}}', templateName: 'welcome', components: [{ type: 'body', parameters: [{ type: 'text', text: '{{triggerData.name}}' }] }] } }])
  const runId = await run(workflowId, { phone: 15550002222, name: 'Bo' })
  t.equal(await engine.executeRun(runId), 'SUCCESS')
  t.match(sent.at(-1), { to: '15550002222', templateName: 'welcome', lang: 'en_US', components: [{ type: 'body', parameters: [{ type: 'text', text: 'Bo' }] }] })
  t.same((await readRun(runId)).result.tpl, { wamid: `wamid.tpl${sent.length}`, kind: 'template', to: '15550002222', templateName: 'welcome' })
})

t.test('answers with U+0000 or unpaired surrogates are stored with replacement characters; an error quoting them fails the run', async (t) => {
  const workflowId = await workflow([
    { id: 'image', type: 'http_request', config: { url: `${sink.url}/binary` } },
    { id: 'escapes', type: 'http_request', config: { url: `${sink.url}/escapes` } },
    { id: 'later', type: 'wait', config: { until: 'x{{image.body}}' } }
  ])
  const runId = await run(workflowId, {})
  t.equal(await engine.executeRun(runId), 'FAILED', 'a database error would throw instead')
  const row = await readRun(runId)
  t.equal((row.result.image as { body: string }).body, '\ufffdP\ufffdN')
  t.same((row.result.escapes as { body: unknown }).body, { nul: 'a\ufffdb', lone: '\ufffd', pair: '\u{1f600}', literal: '\\u0000' })
  t.equal(row.error, 'until is not a valid time: x\ufffdP\ufffdN')
})
