import { once } from 'node:events'
import { Queue, Worker } from 'bullmq'
import { asc, eq, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { REDIS_URL } from '@switchboard/testing/database'
import { startDeliverySink, type Delivery, type SinkAnswer } from '@switchboard/testing/delivery-sink'
import { createTestEngine } from '@switchboard/testing/engine'
import { waitFor } from '@switchboard/testing/wait'
import type { ChatSender } from '../src/chat/sender.ts'
import type { Db } from '../src/db/client.ts'
import { runLogs, runs, users, workflows, type WorkflowNode } from '../src/db/schema/index.ts'
import type { RunDelivery } from '../src/engine/engine.ts'
import { createLogger } from '../src/logger.ts'
import { RUN_JOB, WORKFLOW_RUNS, type Queues, type RunJobData } from '../src/queues/catalog.ts'
import { createWorkerConnection } from '../src/queues/connections.ts'
import { createReconciler } from '../src/engine/reconciler.ts'

/**
 * Claims and fencing (issue 12): a retried job is not a takeover, a superseded
 * execution stops, and every outside effect is in the run's log before it happens.
 */

const { db, redis, queues, queuePrefix } = await createCoreTestContext(t)
const logger = createLogger('silent', 'engine-claims-test')

/** The local http sink: records every call; `answer` decides what each gets (held calls are answered at teardown). */
let answer: (call: Delivery) => SinkAnswer | Promise<SinkAnswer> = () => ({})
const sink = await startDeliverySink(t, { answer: async (call) => await answer(call) })
const held: Array<() => void> = []
const hold = async (): Promise<SinkAnswer> => await new Promise((resolve) => { held.push(() => { resolve({}) }) })
const releaseHeld = (): void => { for (const release of held.splice(0)) release() }
const callsTo = (path: string): Delivery[] => sink.deliveries.filter((call) => call.path === path)

const sentTexts: string[] = []
t.teardown(releaseHeld)

/** Writes `connection terminated unexpectedly` instead of running the statements `fails` picks (by their SQL text). */
const dialect = new PgDialect()
function failingDb (fails: (statement: string) => boolean): Db {
  return new Proxy(db, {
    get (target, property, receiver) {
      if (property !== 'execute') return Reflect.get(target, property, receiver)
      return async (query: SQL) => {
        if (fails(dialect.sqlToQuery(query).sql)) throw new Error('connection terminated unexpectedly')
        return await target.execute(query)
      }
    }
  })
}
const isAdvance = (statement: string): boolean => statement.includes('current_node_id = $')

function engineWith (options: { db?: Db, queues?: Queues, cancelPollMs?: number, chat?: ChatSender, checkpointMaxNodes?: number } = {}) {
  const chat: ChatSender = options.chat ?? {
    async sendText (input) { sentTexts.push(input.text); return { wamid: `wamid.${sentTexts.length}`, to: input.to ?? '' } },
    async sendTemplate () { throw new Error('unused') },
    async sendMedia () { throw new Error('unused') },
    async sendInteractive () { throw new Error('unused') },
    async conversation () { throw new Error('unused') },
    async recentMessages () { throw new Error('unused') },
    async draftText () { throw new Error('unused') },
    async handoff () { throw new Error('unused') },
    async markRead () { throw new Error('unused') }
  }
  return createTestEngine(t, {
    db: options.db ?? db,
    queues: options.queues ?? queues,
    nodes: { chat },
    cancelPollMs: options.cancelPollMs ?? 60_000,
    checkpointMaxNodes: options.checkpointMaxNodes
  })
}

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()

async function workflow (nodes: WorkflowNode[]): Promise<string> {
  const [row] = await db.insert(workflows).values({ userId: owner!.id, name: 'wf', triggerType: 'MANUAL', isActive: true, nodes }).returning()
  return row!.id
}

async function run (workflowId: string, extra: Partial<typeof runs.$inferInsert> = {}): Promise<string> {
  const [row] = await db.insert(runs).values({ workflowId, userId: owner!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData: {}, ...extra }).returning()
  return row!.id
}

const readRun = async (id: string) => (await db.select().from(runs).where(eq(runs.id, id)))[0]!
const readLogs = async (id: string) => await db.select().from(runLogs).where(eq(runLogs.runId, id)).orderBy(asc(runLogs.id))
const messages = async (id: string) => (await readLogs(id)).map((line) => line.message)

const delivery = (id: string, extra: Partial<RunDelivery> = {}): RunDelivery => ({ queueName: WORKFLOW_RUNS, id, attemptsMade: 0, stalledCounter: 0, timestamp: 0, ...extra })

/** Resolves with `promise`'s value, or with 'still running' after `ms`. */
async function within<T> (promise: Promise<T>, ms: number): Promise<T | 'still running'> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'still running'>((resolve) => { timer = setTimeout(() => { resolve('still running') }, ms) })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

t.test('a RUNNING run claimed again by the job that held it is a retry; a stalled job, another job or no job takes it over', async (t) => {
  const engine = engineWith()
  const workflowId = await workflow([{ id: 'only', type: 'set', config: { values: { done: true } } }])
  const heldRun = { status: 'RUNNING', startedAt: new Date(), currentNodeId: 'only', claim: 1, claimOwner: `${WORKFLOW_RUNS}/job-1/0/0` } as const
  const cases = [
    {
      what: 'the same job, after a failed attempt',
      job: delivery('job-1', { attemptsMade: 1, failedReason: 'database error: connection terminated unexpectedly' }),
      attempt: 0,
      line: { level: 'WARN', message: 'Run resumed after a database error: connection terminated unexpectedly (job attempt 2)' }
    },
    {
      what: 'the same job, after another kind of failure',
      job: delivery('job-1', { attemptsMade: 2, failedReason: 'stopped executing the run: the job lock was lost' }),
      attempt: 0,
      line: { level: 'WARN', message: 'Run resumed after its job failed: stopped executing the run: the job lock was lost (job attempt 3)' }
    },
    { what: 'the same job after it stalled', job: delivery('job-1', { stalledCounter: 1 }), attempt: 1, line: { level: 'INFO', message: 'Run taken over after its worker stopped (attempt 1)' } },
    { what: 'another job', job: delivery('run-1:takeover:0'), attempt: 1, line: { level: 'INFO', message: 'Run taken over after its worker stopped (attempt 1)' } },
    { what: 'no job', job: undefined, attempt: 1, line: { level: 'INFO', message: 'Run taken over after its worker stopped (attempt 1)' } }
  ]
  for (const { what, job, attempt, line } of cases) {
    const runId = await run(workflowId, heldRun)
    t.equal(await engine.executeRun(runId, undefined, { job }), 'SUCCESS', what)
    const row = await readRun(runId)
    t.equal(row.attempt, attempt, `${what}: takeovers counted`)
    t.equal(row.claim, 2, `${what}: a new claim`)
    t.match((await readLogs(runId))[0], line, what)
  }

  const driven = await run(workflowId, heldRun)
  t.equal(await engine.executeRun(driven, undefined, { job: delivery(`${driven}:resume:pause`) }), 'SKIPPED', 'a resume job does not take over a run another delivery drives')
  let heldUntil = 0
  const hold = async (until: number): Promise<void> => { heldUntil = until }
  t.equal(await engine.executeRun(driven, undefined, { job: delivery('wake-1'), wake: true, hold }), 'HELD', 'a wake that finds the run driven is held')
  t.ok(heldUntil > Date.now() - 1000 && heldUntil - Date.now() < 1000, 'and tried again shortly')
  t.equal((await readRun(driven)).claim, 1, 'neither claimed the run')
  // Ended, so that the reconciler of a later test does not take it over.
  await db.update(runs).set({ status: 'CANCELLED', completedAt: new Date() }).where(eq(runs.id, driven))

  const spent = await run(workflowId, { ...heldRun, attempt: 3 })
  t.equal(await engine.executeRun(spent, undefined, { job: delivery('job-1', { attemptsMade: 1 }) }), 'SUCCESS', 'a retry is allowed whatever the takeovers')
  const exhausted = await run(workflowId, { ...heldRun, attempt: 3 })
  t.equal(await engine.executeRun(exhausted, undefined, { job: delivery('job-1', { stalledCounter: 1 }) }), 'FAILED', 'a fourth takeover is not')
  t.equal((await readRun(exhausted)).error, 'Run interrupted: its worker stopped 4 times')
})

t.test('database errors during steps are retries of the job, not takeovers: a run survives more of them than the takeover limit', async (t) => {
  let advances = 0
  // The first write of each of the first four nodes fails; its retry succeeds (a checkpoint after every node).
  const engine = engineWith({ db: failingDb((statement) => isAdvance(statement) && ++advances <= 8 && advances % 2 === 1), checkpointMaxNodes: 1 })
  const workflowId = await workflow(['a', 'b', 'c', 'd', 'e'].map((id, i, ids) => ({ id, type: 'set', config: { values: { id } }, ...(i < ids.length - 1 && { next: ids[i + 1] }) })))
  const runId = await run(workflowId)

  const connection = createWorkerConnection(REDIS_URL)
  const worker = new Worker<RunJobData>(WORKFLOW_RUNS, async (job, _token, signal) => await engine.executeRun(job.data.runId, signal, { job }), { connection, prefix: queuePrefix })
  const failures: string[] = []
  worker.on('failed', (_job, err) => { failures.push(err.message) })
  const completed = once(worker, 'completed')
  t.teardown(async () => {
    await worker.close()
    connection.disconnect()
  })
  await queues[WORKFLOW_RUNS].add(RUN_JOB, { runId }, { jobId: runId, attempts: 5, backoff: { type: 'fixed', delay: 50 } })
  const [job, outcome] = await completed

  t.equal(outcome, 'SUCCESS')
  t.equal(job.attemptsMade, 5, 'four failed attempts, then the one that finished')
  t.same(failures, Array(4).fill('database error: connection terminated unexpectedly'), 'the job failed with the database error, without its statement')
  const row = await readRun(runId)
  t.equal(row.status, 'SUCCESS')
  t.equal(row.attempt, 0, 'no takeover counted')
  t.same(row.result.e, { id: 'e' })
  const lines = await messages(runId)
  t.same(lines.filter((line) => line.startsWith('Run resumed after')), [2, 3, 4, 5].map((n) => `Run resumed after a database error: connection terminated unexpectedly (job attempt ${n})`))
  t.notOk(lines.some((line) => line.includes('taken over')))
})

t.test('infrastructure retries are bounded: the job\'s attempts, then takeovers by the reconciler\'s jobs, then the run fails', async (t) => {
  // A database refusing every step of this run for good (a checkpoint after every node).
  const engine = engineWith({ db: failingDb(isAdvance), checkpointMaxNodes: 1 })
  const workflowId = await workflow([{ id: 'a', type: 'set', config: { values: {} }, next: 'b' }, { id: 'b', type: 'set', config: { values: {} } }])
  const runId = await run(workflowId)

  // Quick job retries, so that the whole chain takes a second: 3 attempts per job.
  const quickQueue = new Queue(WORKFLOW_RUNS, { connection: redis, prefix: queuePrefix, defaultJobOptions: { attempts: 3, backoff: { type: 'fixed', delay: 20 } } })
  const quickQueues = { ...queues, [WORKFLOW_RUNS]: quickQueue }
  const reconciler = createReconciler({ db, queues: quickQueues, logger, engine, runningAfterMs: 0, graceMs: 0 })
  let executions = 0
  const connection = createWorkerConnection(REDIS_URL)
  const worker = new Worker<RunJobData>(WORKFLOW_RUNS, async (job, _token, signal) => {
    executions++
    return await engine.executeRun(job.data.runId, signal, { job })
  }, { connection, prefix: queuePrefix })
  t.teardown(async () => {
    await worker.close()
    connection.disconnect()
    await quickQueue.close()
  })
  await quickQueue.add(RUN_JOB, { runId }, { jobId: runId })

  const row = await waitFor(async () => {
    const found = await readRun(runId)
    if (found.status === 'FAILED') return found
    // Once no job of the run is live, the reconciler adds a takeover job (or fails the run).
    if (await quickQueue.getActiveCount() + await quickQueue.getWaitingCount() + await quickQueue.getDelayedCount() === 0) await reconciler.reconcile()
    return undefined
  }, { timeoutMs: 30_000, what: 'the run to fail' })

  t.equal(row.error, 'Run interrupted: its worker stopped 4 times')
  t.equal(row.attempt, 3)
  t.equal(executions, 12, 'the first job and three takeover jobs, three attempts each')
  const lines = await messages(runId)
  t.equal(lines.filter((line) => line.startsWith('Run resumed after a database error')).length, 8, 'two retries per job')
  t.equal(lines.filter((line) => line.startsWith('Run taken over')).length, 3)
})

t.test('a start job added again under the same id (Redis lost its data) leaves the run its first delivery drives', async (t) => {
  sink.deliveries.length = 0
  answer = (call) => call.path === '/slow' ? hold() : {}
  const engine = engineWith()
  const runId = await run(await workflow([{ id: 'hit', type: 'http_request', config: { url: `${sink.url}/slow`, timeoutMs: 30_000 } }]))

  const first = engine.executeRun(runId, undefined, { job: delivery(runId, { timestamp: 1 }) })
  await waitFor(async () => callsTo('/slow').length === 1 ? true : undefined, { what: 'the first delivery\'s call' })
  t.equal(await engine.executeRun(runId, undefined, { job: delivery(runId, { timestamp: 2 }) }), 'SKIPPED', 'the job added again does not claim the RUNNING run')
  t.equal(callsTo('/slow').length, 1, 'nor call the node again')

  releaseHeld()
  t.equal(await first, 'SUCCESS')
  const row = await readRun(runId)
  t.equal(row.attempt, 0, 'no takeover')
  t.equal(callsTo('/slow').length, 1, 'one delivery in all')
  t.notOk((await messages(runId)).some((line) => line.startsWith('Run resumed') || line.startsWith('Run taken over')))
})

t.test('two claims on one run: the stale one\'s step is refused and it stops', async (t) => {
  sink.deliveries.length = 0
  // The first call to /first is held (the stale execution's); /after is held until the end.
  answer = (call) => (call.path === '/first' && callsTo('/first').length === 1) || call.path === '/after' ? hold() : {}
  const engine = engineWith()
  const runId = await run(await workflow([
    { id: 'first', type: 'http_request', config: { url: `${sink.url}/first`, timeoutMs: 30_000 }, next: 'after' },
    { id: 'after', type: 'http_request', config: { url: `${sink.url}/after`, timeoutMs: 30_000 } }
  ]))

  const stale = engine.executeRun(runId, undefined, { job: delivery('job-1') })
  await waitFor(async () => callsTo('/first').length === 1 ? true : undefined, { what: 'the stale call' })
  t.same(await messages(runId), ['Run started', 'Node first (http_request) started', `Calling GET ${sink.url}/first (attempt 1)`], 'the attempt is in the log while it is in flight')

  // Its job stalled: the job comes back and claims the run as a new owner.
  const current = engine.executeRun(runId, undefined, { job: delivery('job-1', { stalledCounter: 1 }) })
  await waitFor(async () => callsTo('/after').length === 1 ? true : undefined, { what: 'the current execution to reach /after' })
  const [staleCall] = held.splice(0, 1)
  staleCall!()
  t.equal(await within(stale, 5000), 'SUPERSEDED', 'the stale execution stopped at its next step')
  t.equal(callsTo('/after').length, 1, 'and did not go on to the next node')
  let row = await readRun(runId)
  t.equal(row.currentNodeId, 'after', 'its step was not written')
  t.equal(row.claim, 2)

  releaseHeld()
  t.equal(await current, 'SUCCESS')
  row = await readRun(runId)
  t.equal(row.status, 'SUCCESS')
  t.equal(callsTo('/first').length, 2, 'the interrupted node ran again under the new claim')
  t.same(callsTo('/first').map((call) => call.idempotencyKey), [`${runId}:first`, `${runId}:first`], 'both deliveries carry the node\'s Idempotency-Key')
  t.equal(callsTo('/after')[0]!.idempotencyKey, `${runId}:after`)
  const lines = await messages(runId)
  t.equal(lines.filter((line) => line === `Calling GET ${sink.url}/first (attempt 1)`).length, 2, 'every delivery is in the log')
  t.equal(lines.filter((line) => line === `GET ${sink.url}/first answered 200`).length, 2, 'the stale execution\'s lines are kept: its call happened')
})

t.test('a superseded execution never starts another outside effect', async (t) => {
  sink.deliveries.length = 0
  // /flaky fails the first call (the stale execution retries it after 500 ms); /after is held.
  answer = (call) => {
    if (call.path === '/flaky' && callsTo('/flaky').length === 1) return { status: 503 }
    return call.path === '/after' ? hold() : {}
  }
  const engine = engineWith()
  const runId = await run(await workflow([
    { id: 'flaky', type: 'http_request', config: { method: 'POST', url: `${sink.url}/flaky`, retries: 3 }, next: 'after' },
    { id: 'after', type: 'http_request', config: { url: `${sink.url}/after`, timeoutMs: 30_000 } }
  ]))
  const stale = engine.executeRun(runId, undefined, { job: delivery('job-1') })
  await waitFor(async () => callsTo('/flaky').length === 1 ? true : undefined, { what: 'the first attempt' })
  const current = engine.executeRun(runId, undefined, { job: delivery(`${runId}:takeover:0`) })

  t.equal(await within(stale, 5000), 'SUPERSEDED', 'its retry was refused before it was sent')
  t.equal(callsTo('/flaky').length, 2, 'the stale first attempt and the current execution\'s; no stale retry')
  t.same(callsTo('/flaky').map((call) => call.idempotencyKey), [`${runId}:flaky`, `${runId}:flaky`])
  releaseHeld()
  t.equal(await current, 'SUCCESS')
  const lines = await messages(runId)
  t.notOk(lines.includes(`Calling POST ${sink.url}/flaky (attempt 2)`))
  t.equal(lines.filter((line) => line === `Calling POST ${sink.url}/flaky (attempt 1)`).length, 2)
})

t.test('a node in flight is aborted when another worker claims the run', async (t) => {
  sink.deliveries.length = 0
  answer = (call) => (call.path === '/slow' && callsTo('/slow').length === 1) || call.path === '/after' ? hold() : {}
  const engine = engineWith({ cancelPollMs: 50 })
  const runId = await run(await workflow([
    { id: 'slow', type: 'http_request', config: { url: `${sink.url}/slow`, timeoutMs: 30_000 }, next: 'after' },
    { id: 'after', type: 'http_request', config: { url: `${sink.url}/after`, timeoutMs: 30_000 } }
  ]))
  const stale = engine.executeRun(runId, undefined, { job: delivery('job-1') })
  await waitFor(async () => callsTo('/slow').length === 1 ? true : undefined, { what: 'the stale call' })
  const current = engine.executeRun(runId, undefined, { job: delivery(`${runId}:takeover:0`) })
  await waitFor(async () => callsTo('/after').length === 1 ? true : undefined, { what: 'the current execution to reach /after' })

  t.equal(await within(stale, 2000), 'SUPERSEDED', 'the stale call was aborted while its answer was still held')
  t.equal((await readRun(runId)).status, 'RUNNING', 'the current execution goes on')
  releaseHeld()
  t.equal(await current, 'SUCCESS')
  t.equal(callsTo('/after').length, 1)
})

t.test('Idempotency-Key: the same on every retry of the node; an author\'s own header is kept; idempotencyKey false sends none', async (t) => {
  sink.deliveries.length = 0
  answer = (call) => call.path === '/flaky' && callsTo('/flaky').length === 1 ? { status: 503 } : {}
  const engine = engineWith()
  const runId = await run(await workflow([
    { id: 'flaky', type: 'http_request', config: { method: 'POST', url: `${sink.url}/flaky`, retries: 1 }, next: 'own' },
    { id: 'own', type: 'http_request', config: { url: `${sink.url}/own`, headers: { 'Idempotency-Key': 'order-{{triggerData.order}}' } }, next: 'off' },
    { id: 'off', type: 'http_request', config: { url: `${sink.url}/off`, idempotencyKey: false }, next: 'odd id/é' },
    { id: 'odd id/é', type: 'http_request', config: { url: `${sink.url}/odd` } }
  ]), { triggerData: { order: 7 } })
  t.equal(await engine.executeRun(runId), 'SUCCESS')
  t.same(callsTo('/flaky').map((call) => call.idempotencyKey), [`${runId}:flaky`, `${runId}:flaky`])
  t.equal(callsTo('/own')[0]!.idempotencyKey, 'order-7')
  t.equal(callsTo('/off')[0]!.idempotencyKey, undefined)
  t.equal(callsTo('/odd')[0]!.idempotencyKey, `${runId}:odd%20id%2F%C3%A9`, 'a node id is percent-encoded in the header')
  const lines = await messages(runId)
  t.ok(lines.includes(`Calling POST ${sink.url}/flaky (attempt 1)`) && lines.includes(`Calling POST ${sink.url}/flaky (attempt 2)`), 'each attempt is logged')
})

t.test('a chat send is in the run\'s log before the platform is called', async (t) => {
  const seenAtSend: string[][] = []
  let runId = ''
  const engine = engineWith({
    chat: {
      async sendText (input) {
        seenAtSend.push(await messages(runId))
        return { wamid: 'wamid.1', to: input.to ?? '' }
      },
      async sendTemplate (input) {
        seenAtSend.push(await messages(runId))
        return { wamid: 'wamid.2', to: input.to ?? '' }
      },
      async sendMedia () { throw new Error('unused') },
      async sendInteractive () { throw new Error('unused') },
      async conversation () { throw new Error('unused') },
      async recentMessages () { throw new Error('unused') },
      async draftText () { throw new Error('unused') },
      async handoff () { throw new Error('unused') },
      async markRead () { throw new Error('unused') }
    }
  })
  runId = await run(await workflow([
    { id: 'text', type: 'send_chat', config: { phone: '15550001111', text: 'hi' }, next: 'template' },
    { id: 'template', type: 'send_chat_template', config: { phone: '15550001111', templateName: 'welcome' } }
  ]))
  t.equal(await engine.executeRun(runId), 'SUCCESS')
  t.equal(seenAtSend[0]!.at(-1), 'Sending chat message to 15550001111 (attempt 1)')
  t.equal(seenAtSend[1]!.at(-1), 'Sending chat template welcome to 15550001111 (attempt 1)')
})

t.test('a run cancelled while a node waits to retry: the retry is not sent', async (t) => {
  sink.deliveries.length = 0
  let runId = ''
  // The first call cancels the run (as the api would), then fails with a 503 the node would retry.
  answer = async () => {
    if (callsTo('/cancelled').length > 1) return {}
    return await db.update(runs).set({ status: 'CANCELLED', completedAt: new Date() }).where(eq(runs.id, runId)).then(() => ({ status: 503 }), () => ({ status: 500 }))
  }
  const engine = engineWith()
  runId = await run(await workflow([{ id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/cancelled`, retries: 2 } }]))
  t.equal(await engine.executeRun(runId), 'STOPPED')
  t.equal(callsTo('/cancelled').length, 1)
  t.equal((await readRun(runId)).status, 'CANCELLED')
})
