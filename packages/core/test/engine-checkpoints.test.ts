import { asc, eq, sql, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { createTestEngine } from '@switchboard/testing/engine'
import { waitFor } from '@switchboard/testing/wait'
import type { Db } from '../src/db/client.ts'
import { runLogs, runs, users, workflows, type WorkflowNode } from '../src/db/schema/index.ts'
import type { NodeDependencies } from '../src/engine/types.ts'
import { WORKFLOW_RUNS } from '../src/queues/catalog.ts'

/**
 * Pure nodes run in memory between checkpoints (issue 13): a long pure chain
 * costs a few statements, a run taken over between checkpoints re-runs pure
 * nodes only, and the run's log keeps every line in order.
 */

const { db, queues } = await createCoreTestContext(t)

/** The local http sink: the paths it was called at, in order. */
const sink = await startDeliverySink(t)
const calls = (): string[] => sink.deliveries.map((delivery) => delivery.path)

const dialect = new PgDialect()
/** The database as the engine sees it: `onStatement` sees each statement first and may hold it (a promise that never settles). */
function watchedDb (onStatement: (statement: string) => Promise<void> | undefined): Db {
  return new Proxy(db, {
    get (target, property, receiver) {
      if (property !== 'execute') return Reflect.get(target, property, receiver)
      return async (query: SQL) => {
        await onStatement(dialect.sqlToQuery(query).sql)
        return await target.execute(query)
      }
    }
  })
}

const engineWith = (options: { db?: Db, checkpointMaxNodes?: number, code?: NodeDependencies['code'] } = {}) => createTestEngine(t, {
  db: options.db ?? db,
  queues,
  nodes: { code: options.code },
  cancelPollMs: 60_000,
  checkpointMaxNodes: options.checkpointMaxNodes
})

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()
async function workflow (nodes: WorkflowNode[]): Promise<string> {
  const [row] = await db.insert(workflows).values({ userId: owner!.id, name: 'wf', triggerType: 'MANUAL', isActive: true, nodes }).returning()
  return row!.id
}
async function run (workflowId: string): Promise<string> {
  const [row] = await db.insert(runs).values({ workflowId, userId: owner!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData: { n: 1 } }).returning()
  return row!.id
}
const readRun = async (id: string) => (await db.select().from(runs).where(eq(runs.id, id)))[0]!
const messages = async (id: string) => (await db.select().from(runLogs).where(eq(runLogs.runId, id)).orderBy(asc(runLogs.id))).map((line) => line.message)

/** A chain of `count` condition nodes, each going on to the next through `then`. */
const conditionChain = (count: number): WorkflowNode[] => Array.from({ length: count }, (_, i) => ({
  id: `c${i}`,
  type: 'condition',
  config: { field: 'triggerData.n', operator: 'equals', value: 1, ...(i < count - 1 && { then: `c${i + 1}` }) }
}))

/** The node lines of a node, in the order the engine writes them. */
const nodeLines = (id: string, type: string, next?: string): RegExp[] => [
  new RegExp(`^Node ${id} \\(${type}\\) started$`),
  new RegExp(`^Node ${id} completed in \\d+ms$`),
  ...(next === undefined ? [] : [new RegExp(`^Continuing with ${next}$`)])
]

t.test('a 400-node condition chain takes a statement per checkpoint, not per node, and logs every node in order', async (t) => {
  const statements: string[] = []
  const engine = engineWith({ db: watchedDb((statement) => { statements.push(statement); return undefined }) })
  const runId = await run(await workflow(conditionChain(400)))

  const began = performance.now()
  t.equal(await engine.executeRun(runId), 'SUCCESS')
  t.comment(`400 nodes in ${Math.round(performance.now() - began)} ms`)
  // The claim, a checkpoint every 100 nodes (or 200 ms on a slow machine), the end.
  t.ok(statements.length >= 5 && statements.length <= 25, `${statements.length} statements for 400 nodes`)
  const row = await readRun(runId)
  t.equal(row.status, 'SUCCESS')
  t.equal(Object.keys(row.result as object).filter((key) => key.startsWith('c')).length, 400, 'every node output stored')
  t.match((row.result as Record<string, unknown>).c399, { matched: true })
  const lines = await messages(runId)
  const expected = conditionChain(400).flatMap((node, i) => nodeLines(node.id, 'condition', i < 399 ? `c${i + 1}` : undefined))
  t.equal(lines[0], 'Run started')
  t.match(lines.slice(1, -1), expected, 'node lines in execution order')
  t.match(lines.at(-1), /^Run succeeded in \d+ms$/)
})

t.test('a run whose worker dies between checkpoints is taken over from the last one: pure nodes run again, each outside effect once', async (t) => {
  sink.deliveries.length = 0
  const nodes: WorkflowNode[] = [
    { id: 'before', type: 'set', config: { values: { step: 'before' } }, next: 'first' },
    { id: 'first', type: 'http_request', config: { url: `${sink.url}/first` }, next: 'p1' },
    { id: 'p1', type: 'set', config: { values: { step: 'p1' } }, next: 'p2' },
    { id: 'p2', type: 'condition', config: { field: 'p1.step', operator: 'equals', value: 'p1', then: 'p3' } },
    { id: 'p3', type: 'set', config: { values: { step: '{{p1.step}}-p3' } }, next: 'second' },
    { id: 'second', type: 'http_request', config: { url: `${sink.url}/second` }, next: 'after' },
    { id: 'after', type: 'set', config: { values: { step: 'after' } } }
  ]
  const runId = await run(await workflow(nodes))

  // The worker dies when it is about to write the checkpoint before `second` (the second one before an effect
  // that folds in pure nodes; the first folds in `before`): that statement never reaches Postgres.
  let died = false
  let folded = 0
  let endDeadExecution = (): void => {}
  const dying = engineWith({
    db: watchedDb((statement) => {
      if (!statement.includes('for share') || !statement.includes('update runs') || ++folded !== 2) return undefined
      died = true
      // Held until the test is done; then its execution ends too (its node's claim poll would keep the process alive).
      return new Promise<void>((resolve, reject) => { endDeadExecution = () => { reject(new Error('the worker died')) } })
    })
  })
  const dead = dying.executeRun(runId).catch(() => 'died')
  await waitFor(async () => died ? true : undefined, { what: 'the worker to die' })
  const stored = await readRun(runId)
  t.ok(died, 'the worker died before the second effect')
  t.equal(stored.status, 'RUNNING')
  t.equal(stored.currentNodeId, 'p1', 'the last checkpoint: after the first effect')
  t.notOk('p3' in (stored.result as object), 'pure nodes since the checkpoint were not written')
  t.same(calls(), ['/first'])

  t.equal(await engineWith().executeRun(runId), 'SUCCESS', 'taken over by another worker')
  t.same(calls(), ['/first', '/second'], 'each outside effect delivered once')
  const row = await readRun(runId)
  t.same((row.result as Record<string, unknown>).p3, { step: 'p1-p3' })
  t.same((row.result as Record<string, unknown>).after, { step: 'after' })
  const lines = await messages(runId)
  t.match(lines, [
    'Run started',
    ...nodeLines('before', 'set'),
    /^Node first \(http_request\) started$/,
    `Calling GET ${sink.url}/first (attempt 1)`,
    `GET ${sink.url}/first answered 200`,
    /^Node first completed in \d+ms$/,
    'Run taken over after its worker stopped (attempt 1)',
    ...nodeLines('p1', 'set'),
    ...nodeLines('p2', 'condition', 'p3'),
    ...nodeLines('p3', 'set'),
    /^Node second \(http_request\) started$/,
    `Calling GET ${sink.url}/second (attempt 1)`,
    `GET ${sink.url}/second answered 200`,
    /^Node second completed in \d+ms$/,
    ...nodeLines('after', 'set'),
    /^Run succeeded in \d+ms$/
  ], 'the dead worker\'s pure nodes are not in the log; the log is in order')
  t.equal(lines.length, 22)
  endDeadExecution()
  t.equal(await dead, 'died')
})

t.test('a run cancelled during a long pure chain stops at its next checkpoint', async (t) => {
  const runId = await run(await workflow(conditionChain(400)))
  let checkpoints = 0
  const engine = engineWith({
    checkpointMaxNodes: 10,
    db: watchedDb(async (statement) => {
      if (!statement.includes('current_node_id = $') || ++checkpoints !== 1) return
      await db.update(runs).set({ status: 'CANCELLED', completedAt: new Date() }).where(eq(runs.id, runId))
    })
  })

  t.equal(await engine.executeRun(runId), 'STOPPED')
  const row = await readRun(runId)
  t.equal(row.status, 'CANCELLED')
  // The cancel came as the first checkpoint was written: that checkpoint was refused, no later node ran, and the
  // pure nodes it held are not logged (nor stored): the log and the result end at the last checkpoint.
  const lines = await messages(runId)
  t.same(lines.filter((line) => /^Node c\d+ /.test(line)), [], 'no node line: none acted on the outside world')
  t.same(Object.keys(row.result as object).filter((key) => key.startsWith('c')), [], 'no node output either')
})

t.test('a long pure chain lets the process\'s other work run while it executes', async (t) => {
  const runId = await run(await workflow(conditionChain(1000)))
  const engine = engineWith({ checkpointMaxNodes: 100_000 })
  let ticks = 0
  const ticker = setInterval(() => { ticks++ }, 1)
  const began = performance.now()
  const outcome = await engine.executeRun(runId)
  const took = performance.now() - began
  clearInterval(ticker)
  t.equal(outcome, 'SUCCESS')
  t.ok(ticks >= Math.floor(took / 50), `${ticks} timer ticks in ${Math.round(took)} ms`)
})

/** A start's job, first delivery: what lets the engine claim a run of pure nodes only with its end. */
const startJob = { queueName: WORKFLOW_RUNS, id: 'job-1', attemptsMade: 0, stalledCounter: 0, timestamp: 0 }

/** An engine that cancels `runId` just before the first statement containing `marker` reaches Postgres. */
function engineCancellingBefore (runId: string, marker: string) {
  let cancelled = false
  const engine = engineWith({
    db: watchedDb(async (statement) => {
      if (cancelled || !statement.includes(marker)) return
      cancelled = true
      await db.update(runs).set({ status: 'CANCELLED', completedAt: new Date() }).where(eq(runs.id, runId))
    })
  })
  return { engine, cancelled: () => cancelled }
}

t.test('a run of pure nodes only is claimed with its end: one read and one write', async (t) => {
  const statements: string[] = []
  const engine = engineWith({ db: watchedDb((statement) => { statements.push(statement); return undefined }) })
  const nodes: WorkflowNode[] = [
    { id: 'first', type: 'set', config: { values: { greeting: 'hello {{triggerData.n}}' } }, next: 'check' },
    { id: 'check', type: 'condition', config: { field: 'first.greeting', operator: 'equals', value: 'hello 1', then: 'last' } },
    { id: 'last', type: 'set', config: { values: { done: true } } }
  ]
  const runId = await run(await workflow(nodes))

  t.equal(await engine.executeRun(runId, undefined, { job: startJob, requestId: 'req-1' }), 'SUCCESS')
  t.equal(statements.length, 2, 'the read of the run and the statement that claims and ends it')
  t.match(statements[0], /^\s*select runs\.id/)
  t.match(statements[1], /update runs set status = 'SUCCESS', claim = runs\.claim \+ 1/)
  const row = await readRun(runId)
  t.equal(row.status, 'SUCCESS')
  t.equal(row.claim, 1, 'the claim was taken, fencing any other execution')
  t.equal(row.claimOwner, `${WORKFLOW_RUNS}/job-1/0/0`)
  t.same(row.result, { triggerData: { n: 1 }, first: { greeting: 'hello 1' }, check: { matched: true, field: 'first.greeting', value: 'hello 1', next: 'last' }, last: { done: true } })
  t.ok(row.startedAt !== null && row.completedAt !== null && row.startedAt <= row.completedAt, 'started before it completed')
  t.ok(row.durationMs !== null && row.durationMs >= 0)
  t.match(await messages(runId), [
    'Run started',
    'Request id: req-1',
    ...nodeLines('first', 'set'),
    ...nodeLines('check', 'condition', 'last'),
    ...nodeLines('last', 'set'),
    /^Run succeeded in \d+ms$/
  ])
  t.equal((await messages(runId)).length, 10, 'each line once')
  const [deltas] = await db.execute<{ successes: number }>(sql`select coalesce(sum(successes), 0)::int as successes from workflow_counter_deltas where run_id = ${runId}`)
  t.equal(deltas!.successes, 1, 'counted once as succeeded')
})

t.test('a run of pure nodes that fails is claimed with what its nodes did, then fails: no node runs again', async (t) => {
  const statements: string[] = []
  const engine = engineWith({ db: watchedDb((statement) => { statements.push(statement); return undefined }) })
  const runId = await run(await workflow([
    { id: 'first', type: 'set', config: { values: { a: 1 } }, next: 'missing' }
  ]))

  t.equal(await engine.executeRun(runId, undefined, { job: startJob }), 'FAILED')
  const row = await readRun(runId)
  t.equal(row.status, 'FAILED')
  t.equal(row.error, 'Node not found: missing')
  t.equal(row.claim, 1, 'one claim')
  t.match(await messages(runId), ['Run started', ...nodeLines('first', 'set'), 'Run failed: Node not found: missing'])
  t.equal((await messages(runId)).filter((line) => line.startsWith('Node first (set) started')).length, 1, 'the node ran once')
  t.equal(statements.length, 3, 'the read, the claim with what the node did, the failure')
  t.notOk(statements.some((statement) => statement.includes("case status when 'PENDING' then 'start'")), 'not handed back to the usual claim, which ran the nodes again')
  t.notOk(statements.some((statement) => statement.includes("set status = 'SUCCESS'")), 'no end was written before the claim')
})

t.test('a run cancelled while its pure nodes ran in memory stays cancelled', async (t) => {
  const runId = await run(await workflow([{ id: 'only', type: 'set', config: { values: { a: 1 } } }]))
  const { engine, cancelled } = engineCancellingBefore(runId, "update runs set status = 'SUCCESS', claim")

  t.equal(await engine.executeRun(runId, undefined, { job: startJob }), 'SKIPPED')
  t.ok(cancelled(), 'the cancel came between the read and the end')
  const row = await readRun(runId)
  t.equal(row.status, 'CANCELLED')
  t.same(row.result, {}, 'nothing of the execution written')
  t.same(await messages(runId), [], 'no line written')
  const [deltas] = await db.execute<{ successes: number }>(sql`select coalesce(sum(successes), 0)::int as successes from workflow_counter_deltas where run_id = ${runId}`)
  t.equal(deltas!.successes, 0, 'not counted as a success')
})

t.test('a run with a wait node or a slot limit is claimed before its first node', async (t) => {
  const claimedFirst = async (nodes: WorkflowNode[], outcome: string, maxConcurrentRuns?: number): Promise<boolean> => {
    const statements: string[] = []
    const engine = engineWith({ db: watchedDb((statement) => { statements.push(statement); return undefined }) })
    const workflowId = await workflow(nodes)
    if (maxConcurrentRuns !== undefined) await db.update(workflows).set({ maxConcurrentRuns }).where(eq(workflows.id, workflowId))
    const runId = await run(workflowId)
    t.equal(await engine.executeRun(runId, undefined, { job: startJob, hold: async () => {} }), outcome)
    return statements.some((statement) => statement.includes("case status when 'PENDING' then 'start'"))
  }
  t.ok(await claimedFirst([{ id: 'pause', type: 'wait', config: { seconds: 60 } }], 'WAITING'), 'wait')
  t.ok(await claimedFirst([{ id: 'only', type: 'set', config: { values: { a: 1 } } }], 'SUCCESS', 5), 'maxConcurrentRuns')
  t.notOk(await claimedFirst([{ id: 'only', type: 'set', config: { values: { a: 1 } } }], 'SUCCESS'), 'a pure node alone is not claimed first')
})

t.test('runs of pure nodes started together share their read and their end: two statements for ten runs', async (t) => {
  const statements: string[] = []
  let cancelledRunId: string | undefined
  const engine = engineWith({
    db: watchedDb(async (statement) => {
      statements.push(statement)
      // One of the ten is cancelled between the shared read and the shared end: only it is left out.
      if (cancelledRunId !== undefined && statement.includes("update runs set status = 'SUCCESS', claim")) {
        await db.update(runs).set({ status: 'CANCELLED', completedAt: new Date() }).where(eq(runs.id, cancelledRunId))
        cancelledRunId = undefined
      }
    })
  })
  const workflowId = await workflow([
    { id: 'first', type: 'set', config: { values: { n: '{{triggerData.n}}' } }, next: 'last' },
    { id: 'last', type: 'set', config: { values: { done: true } } }
  ])
  const runIds = await Promise.all(Array.from({ length: 10 }, async () => await run(workflowId)))
  cancelledRunId = runIds[4]

  const outcomes = await Promise.all(runIds.map(async (runId, i) => await engine.executeRun(runId, undefined, { job: { ...startJob, id: `job-${i}` } })))
  t.same(outcomes, runIds.map((_runId, i) => i === 4 ? 'SKIPPED' : 'SUCCESS'), 'the cancelled run is skipped, the others end')
  const reads = statements.filter((statement) => /^\s*select runs\.id/.test(statement))
  const ends = statements.filter((statement) => statement.includes("update runs set status = 'SUCCESS', claim"))
  t.equal(reads.length, 1, 'one read for the ten')
  t.equal(ends.length, 1, 'one end for the ten')
  for (const [i, runId] of runIds.entries()) {
    const row = await readRun(runId)
    if (i === 4) {
      t.equal(row.status, 'CANCELLED')
      t.same(await messages(runId), [], 'nothing written for the cancelled run')
      continue
    }
    t.equal(row.status, 'SUCCESS')
    t.equal(row.claimOwner, `${WORKFLOW_RUNS}/job-${i}/0/0`, 'each run its own claim owner')
    t.match(await messages(runId), ['Run started', ...nodeLines('first', 'set', undefined), ...nodeLines('last', 'set'), /^Run succeeded in \d+ms$/], 'its own lines, in order')
  }
})

t.test('a run whose first outside effect comes after pure nodes is claimed by the checkpoint before that effect', async (t) => {
  sink.deliveries.length = 0
  const statements: string[] = []
  const engine = engineWith({ db: watchedDb((statement) => { statements.push(statement); return undefined }) })
  const runId = await run(await workflow([
    { id: 'first', type: 'set', config: { values: { path: 'claimed-by-checkpoint' } }, next: 'call' },
    { id: 'call', type: 'http_request', config: { url: `${sink.url}/{{first.path}}` }, next: 'last' },
    { id: 'last', type: 'set', config: { values: { done: true } } }
  ]))

  t.equal(await engine.executeRun(runId, undefined, { job: startJob }), 'SUCCESS')
  t.same(calls(), ['/claimed-by-checkpoint'], 'the effect happened once')
  t.notOk(statements.some((statement) => statement.includes("case status when 'PENDING' then 'start'")), 'no claim statement of its own')
  t.equal(statements.length, 3, 'the read, the claim with the checkpoint before the call, the end (only pure nodes after the call: its checkpoint is the end)')
  const row = await readRun(runId)
  t.equal(row.status, 'SUCCESS')
  t.equal(row.claim, 1)
  t.equal(row.attempt, 0)
  t.ok(row.startedAt !== null && row.completedAt !== null && row.startedAt <= row.completedAt)
  t.match(row.result, { triggerData: { n: 1 }, first: { path: 'claimed-by-checkpoint' }, call: { status: 200 }, last: { done: true } })
  const lines = await messages(runId)
  t.match(lines, [
    'Run started',
    ...nodeLines('first', 'set'),
    /^Node call \(http_request\) started$/,
    /^Calling .*claimed-by-checkpoint \(attempt 1\)$/,
    /^GET .*claimed-by-checkpoint answered 200$/,
    /^Node call completed in \d+ms$/,
    ...nodeLines('last', 'set'),
    /^Run succeeded in \d+ms$/
  ])
  t.equal(lines.filter((line) => line === 'Run started').length, 1)
})

t.test('an outside effect followed by another is checkpointed after it, before the pure nodes between them', async (t) => {
  sink.deliveries.length = 0
  const statements: string[] = []
  const engine = engineWith({ db: watchedDb((statement) => { statements.push(statement); return undefined }) })
  const runId = await run(await workflow([
    { id: 'first', type: 'http_request', config: { url: `${sink.url}/first-effect` }, next: 'between' },
    { id: 'between', type: 'set', config: { values: { a: 1 } }, next: 'second' },
    { id: 'second', type: 'http_request', config: { url: `${sink.url}/second-effect` } }
  ]))

  t.equal(await engine.executeRun(runId, undefined, { job: startJob }), 'SUCCESS')
  t.same(calls(), ['/first-effect', '/second-effect'])
  t.equal(statements.length, 5, 'the read, the claim before the first call, the checkpoint after it, the checkpoint before the second, the end')
})

t.test('a run cancelled before its first outside effect is not called out for', async (t) => {
  sink.deliveries.length = 0
  const runId = await run(await workflow([
    { id: 'first', type: 'set', config: { values: { a: 1 } }, next: 'call' },
    { id: 'call', type: 'http_request', config: { url: `${sink.url}/never` } }
  ]))
  const { engine, cancelled } = engineCancellingBefore(runId, "update runs set status = 'RUNNING', claim = runs.claim + 1")

  t.equal(await engine.executeRun(runId, undefined, { job: startJob }), 'SKIPPED')
  t.ok(cancelled(), 'the cancel came between the read and the claim')
  t.same(calls(), [], 'no call made')
  t.equal((await readRun(runId)).status, 'CANCELLED')
  t.same(await messages(runId), [])
})

t.test('a run executed unclaimed whose pure chain outlasts a checkpoint\'s 200 ms is claimed by that checkpoint: no node runs twice', async (t) => {
  const statements: string[] = []
  const executed: number[] = []
  // A code node that takes 250 ms of its sandbox, counting its executions.
  const slowCode = {
    run: async (_code: string, input: unknown) => {
      await new Promise((resolve) => setTimeout(resolve, 250))
      executed.push((input as { triggerData: { n: number } }).triggerData.n)
      return { ok: true as const, output: executed.length, logs: [] }
    }
  }
  const engine = engineWith({ db: watchedDb((statement) => { statements.push(statement); return undefined }), code: slowCode })
  const runId = await run(await workflow([
    { id: 'slow', type: 'code', config: { code: 'return 1' }, next: 'after' },
    { id: 'after', type: 'set', config: { values: { done: '{{slow}}' } } }
  ]))

  t.equal(await engine.executeRun(runId, undefined, { job: startJob }), 'SUCCESS')
  t.same(executed, [1], 'the code ran once')
  t.notOk(statements.some((statement) => statement.includes("case status when 'PENDING' then 'start'")), 'no claim statement of its own')
  t.equal(statements.length, 3, 'the read, the claim with the checkpoint after the slow node, the end')
  const row = await readRun(runId)
  t.equal(row.status, 'SUCCESS')
  t.equal(row.claim, 1, 'claimed once, by the checkpoint')
  t.match(row.result, { slow: 1, after: { done: 1 } })
  t.equal((await messages(runId)).filter((line) => line === 'Run started').length, 1)
})

t.test('a node of a run executed unclaimed that is retried claims the run before its retry: each attempt runs once', async (t) => {
  const statements: string[] = []
  let attempts = 0
  // The first attempt outlasts its timeoutMs (a time-out may pass: retried), the second is quick.
  const flakyCode = {
    run: async () => {
      attempts++
      if (attempts === 1) await new Promise((resolve) => setTimeout(resolve, 150))
      return { ok: true as const, output: attempts, logs: [] }
    }
  }
  const engine = engineWith({ db: watchedDb((statement) => { statements.push(statement); return undefined }), code: flakyCode })
  const runId = await run(await workflow([
    { id: 'flaky', type: 'code', config: { code: 'return 1', timeoutMs: 50, retry: { attempts: 2, backoffMs: 10 } } }
  ]))

  t.equal(await engine.executeRun(runId, undefined, { job: startJob }), 'SUCCESS')
  t.equal(attempts, 2, 'two attempts, none run again')
  t.notOk(statements.some((statement) => statement.includes("case status when 'PENDING' then 'start'")), 'not handed back to the usual claim')
  const row = await readRun(runId)
  t.equal(row.claim, 1)
  t.match(row.result, { flaky: 2 })
  t.match((await messages(runId)).join('\n'), /Timed out after 50ms; retrying in 10ms \(1 of 1\)/)
})

t.test('a node that suspends again and again adds a timer job each time (a wake may be lost: the timer finds the children)', async (t) => {
  const engine = engineWith()
  const child = await workflow([{ id: 'only', type: 'set', config: { values: {} } }])
  const runId = await run(await workflow([{ id: 'call', type: 'run_workflow', config: { workflowId: child } }]))
  t.equal(await engine.executeRun(runId), 'WAITING')
  const timers = async () => (await queues[WORKFLOW_RUNS].getDelayed()).map((job) => job.id ?? '').filter((id) => id.startsWith(`${runId}:resume:call`))
  t.equal((await timers()).length, 1, 'the timer of the first suspension')
  const first = (await timers())[0]!
  await (await queues[WORKFLOW_RUNS].getJob(first))!.remove()
  t.equal(await engine.executeRun(runId), 'WAITING', 'woken before its child ended, it waits again')
  t.equal((await timers()).length, 1, 'with a timer again')
})
