import { asc, eq } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { startDeliverySink, type Delivery, type SinkAnswer } from '@switchboard/testing/delivery-sink'
import { createTestEngine } from '@switchboard/testing/engine'
import { waitFor } from '@switchboard/testing/wait'
import { ChatPlatformError, ChatPlatformUnavailableError } from '../src/chat/client.ts'
import { platformFailure } from '../src/chat/platform-errors.ts'
import type { ChatSender } from '../src/chat/sender.ts'
import { runLogs, runs, users, workflows, type WorkflowNode } from '../src/db/schema/index.ts'
import { WORKFLOW_RUNS } from '../src/queues/catalog.ts'

/**
 * Retries and time-outs of any node (issue 15, item 3), in the engine: what is retried, how
 * long it waits, what stops a wait, and what a chat send carries on every attempt.
 */

const { db, queues } = await createCoreTestContext(t)

/** The local http sink: `answer` decides what each call gets; a hanging call is cut at teardown. */
let answer: (call: Delivery) => SinkAnswer | Promise<SinkAnswer> = () => ({ body: '{}' })
const sink = await startDeliverySink(t, { answer: async (call) => await answer(call) })
const callsTo = (path: string): Delivery[] => sink.deliveries.filter((call) => call.path === path)
const hang = async (): Promise<SinkAnswer> => await new Promise(() => {})

const noChat: ChatSender = {
  async sendText () { throw new Error('unused') },
  async sendTemplate () { throw new Error('unused') },
  async sendMedia () { throw new Error('unused') },
  async sendInteractive () { throw new Error('unused') },
  async conversation () { throw new Error('unused') },
  async recentMessages () { throw new Error('unused') },
  async draftText () { throw new Error('unused') },
  async handoff () { throw new Error('unused') },
  async markRead () { throw new Error('unused') }
}
const engineWith = (chat: ChatSender = noChat) => createTestEngine(t, { db, queues, nodes: { chat }, cancelPollMs: 50 })

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()

async function run (nodes: WorkflowNode[], triggerData: unknown = {}): Promise<string> {
  const [workflow] = await db.insert(workflows).values({ userId: owner!.id, name: 'wf', triggerType: 'MANUAL', isActive: true, nodes }).returning()
  const [row] = await db.insert(runs).values({ workflowId: workflow!.id, userId: owner!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData }).returning()
  return row!.id
}

const readRun = async (id: string) => (await db.select().from(runs).where(eq(runs.id, id)))[0]!
const lines = async (id: string) => (await db.select().from(runLogs).where(eq(runLogs.runId, id)).orderBy(asc(runLogs.id))).map(({ level, message }) => `${level} ${message}`)

t.test('retry.attempts counts the first: a node failing twice with 503 succeeds on its third attempt, each attempt logged and keyed alike', async (t) => {
  sink.deliveries.length = 0
  answer = () => callsTo('/flaky').length <= 2 ? { status: 503 } : {}
  const runId = await run([{ id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/flaky`, retry: { attempts: 3, backoffMs: 20, backoffFactor: 3 } } }])
  t.equal(await engineWith().executeRun(runId), 'SUCCESS')
  t.same(callsTo('/flaky').map((call) => call.idempotencyKey), Array(3).fill(`${runId}:call`))
  const logged = await lines(runId)
  t.same(logged.filter((line) => line.startsWith('WARN')), [
    `WARN POST ${sink.url}/flaky answered 503; retrying in 20ms (1 of 2)`,
    `WARN POST ${sink.url}/flaky answered 503; retrying in 60ms (2 of 2)`
  ], 'backoffMs, then times backoffFactor')
  t.same(logged.filter((line) => line.includes('Calling')), [1, 2, 3].map((n) => `INFO Calling POST ${sink.url}/flaky (attempt ${n})`))
})

t.test('a Retry-After longer than the longest retry delay is not waited for: the node fails with the 429 at once', async (t) => {
  sink.deliveries.length = 0
  answer = () => ({ status: 429, headers: { 'retry-after': '3600' } })
  const runId = await run([{ id: 'call', type: 'http_request', config: { url: `${sink.url}/busy`, retry: { attempts: 5, backoffMs: 10 } } }])
  const started = Date.now()
  t.equal(await engineWith().executeRun(runId), 'FAILED')
  t.ok(Date.now() - started < 5000)
  t.equal(callsTo('/busy').length, 1)
  t.equal((await readRun(runId)).error, 'Request failed with status 429')
  t.ok((await lines(runId)).includes('WARN Not retried: Retry-After asks for 3600000ms, more than the longest retry delay (60000ms)'))
})

t.test('timeoutMs bounds each attempt of a node with an outside effect; a timed-out attempt is retried', async (t) => {
  sink.deliveries.length = 0
  answer = () => callsTo('/slow').length === 1 ? hang() : {}
  const runId = await run([{ id: 'call', type: 'http_request', config: { url: `${sink.url}/slow`, timeoutMs: 200, retry: { attempts: 2, backoffMs: 0 } } }])
  t.equal(await engineWith().executeRun(runId), 'SUCCESS')
  t.equal(callsTo('/slow').length, 2)
  t.ok((await lines(runId)).includes('WARN Timed out after 200ms; retrying in 0ms (1 of 1)'))
})

t.test('the job\'s signal (the lock watchdog) ends a wait between attempts at once; a cancel ends it too', async (t) => {
  sink.deliveries.length = 0
  answer = () => ({ status: 503 })
  const engine = engineWith()
  const abandonedId = await run([{ id: 'call', type: 'http_request', config: { url: `${sink.url}/down`, retry: { attempts: 2, backoffMs: 60_000 } } }])
  const controller = new AbortController()
  const execution = engine.executeRun(abandonedId, controller.signal)
  await waitFor(async () => callsTo('/down').length === 1 ? true : undefined, { what: 'the first attempt' })
  await waitFor(async () => (await lines(abandonedId)).length > 0 ? true : undefined, { what: 'the attempt in the log' })
  const aborted = Date.now()
  controller.abort()
  t.equal(await execution, 'ABANDONED')
  t.ok(Date.now() - aborted < 2000, 'not after the 60 s backoff')
  t.equal(callsTo('/down').length, 1)

  const cancelledId = await run([{ id: 'call', type: 'http_request', config: { url: `${sink.url}/down`, retry: { attempts: 2, backoffMs: 60_000 } } }])
  const cancelled = engine.executeRun(cancelledId)
  await waitFor(async () => callsTo('/down').length === 2 ? true : undefined, { what: 'the first attempt' })
  await db.update(runs).set({ status: 'CANCELLED', completedAt: new Date() }).where(eq(runs.id, cancelledId))
  t.equal(await cancelled, 'STOPPED')
  t.equal(callsTo('/down').length, 2, 'the retry was never sent')
})

t.test('pure nodes: their failures are deterministic and never retried; a time-out is, and fails the node once its attempts are spent', async (t) => {
  const engine = engineWith()
  const invalid = await run([{ id: 'check', type: 'verify_signature', config: { secret: 's', header: 'x-signature', retry: { attempts: 3, backoffMs: 0 } } }])
  t.equal(await engine.executeRun(invalid), 'FAILED')
  t.equal((await readRun(invalid)).error, 'Invalid signature')
  t.notOk((await lines(invalid)).some((line) => line.includes('retrying')), 'no retry of a deterministic failure')

  // Comparing two distinct lists of 50,000 objects takes tens of milliseconds, far more than 1 ms, every time.
  const list = (): unknown[] => Array.from({ length: 50_000 }, (_, i) => ({ i }))
  const slow = await run([
    { id: 'match', type: 'condition', config: { field: 'triggerData.left', operator: 'equals', value: '{{triggerData.right}}', timeoutMs: 1, retry: { attempts: 2, backoffMs: 10 } } }
  ], { left: list(), right: list() })
  t.equal(await engine.executeRun(slow), 'FAILED')
  t.equal((await readRun(slow)).error, 'Timed out after 1ms')
  const logged = await lines(slow)
  t.ok(logged.includes('WARN Timed out after 1ms; retrying in 10ms (1 of 1)'))
  t.match(logged.at(-2), /^ERROR Node match failed after \d+ms: Timed out after 1ms$/)
})

t.test('chat sends: the platform\'s passing failures are retried with one idempotency key, its refusals are not', async (t) => {
  const sends: Array<{ key: string | undefined, attempt: number }> = []
  const failures = [
    platformFailure(new ChatPlatformUnavailableError('Chat platform request failed: connect ECONNREFUSED')),
    platformFailure(new ChatPlatformError(429, { code: 130429, message: '(#130429) Rate limit hit' }))
  ]
  const chat: ChatSender = {
    async sendText (_input, options) {
      sends.push({ key: options?.idempotencyKey, attempt: sends.length + 1 })
      const failure = failures.shift()
      if (failure !== undefined) throw failure
      return { wamid: 'wamid.1', to: '15550001111' }
    },
    async sendTemplate (_input, options) {
      sends.push({ key: options?.idempotencyKey, attempt: sends.length + 1 })
      throw platformFailure(new ChatPlatformError(404, { code: 132001, message: '(#132001) Template name does not exist in the translation' }))
    },
    sendMedia: noChat.sendMedia,
    sendInteractive: noChat.sendInteractive,
    conversation: noChat.conversation,
    recentMessages: noChat.recentMessages,
    draftText: noChat.draftText,
    handoff: noChat.handoff,
    markRead: noChat.markRead
  }
  const engine = engineWith(chat)
  const textRun = await run([{ id: 'say hi', type: 'send_chat', config: { phone: '15550001111', text: 'hi', retry: { attempts: 3, backoffMs: 10 } } }])
  t.equal(await engine.executeRun(textRun), 'SUCCESS')
  t.same(sends.map(({ key }) => key), Array(3).fill(`${textRun}:say%20hi`), 'the same key on every attempt')
  const logged = await lines(textRun)
  t.same(logged.filter((line) => line.startsWith('WARN')), ['WARN Chat platform unavailable; retrying in 10ms (1 of 2)', 'WARN (#130429) Rate limit hit; retrying in 20ms (2 of 2)'])
  t.same(logged.filter((line) => line.includes('Sending')), [1, 2, 3].map((n) => `INFO Sending chat message to 15550001111 (attempt ${n})`))

  sends.length = 0
  const templateRun = await run([{ id: 'tpl', type: 'send_chat_template', config: { phone: '15550001111', templateName: 'gone', retry: { attempts: 3, backoffMs: 10 } } }])
  t.equal(await engine.executeRun(templateRun), 'FAILED')
  t.equal(sends.length, 1, 'a refusal is final')
  t.equal((await readRun(templateRun)).error, 'Template name does not exist')
})

t.test('http_request\'s older retries keep their backoff; a stored node with retry and retries follows retry', async (t) => {
  sink.deliveries.length = 0
  answer = (call) => callsTo(call.path).length === 1 ? { status: 502 } : {}
  const runId = await run([
    { id: 'legacy', type: 'http_request', config: { url: `${sink.url}/legacy`, retries: 2 }, next: 'both' },
    { id: 'both', type: 'http_request', config: { url: `${sink.url}/both`, retries: 5, retry: { attempts: 2, backoffMs: 30 } } }
  ])
  t.equal(await engineWith().executeRun(runId), 'SUCCESS')
  const warnings = (await lines(runId)).filter((line) => line.startsWith('WARN'))
  t.same(warnings, [`WARN GET ${sink.url}/legacy answered 502; retrying in 500ms (1 of 2)`, `WARN GET ${sink.url}/both answered 502; retrying in 30ms (1 of 1)`])
})
