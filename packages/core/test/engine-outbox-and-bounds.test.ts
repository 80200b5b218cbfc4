import { asc, eq, sql, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { createTestEngine } from '@switchboard/testing/engine'
import type { Db } from '../src/db/client.ts'
import { events, runLogs, runs, users, workflows, type WorkflowNode } from '../src/db/schema/index.ts'
import type { CredentialResolver } from '../src/engine/types.ts'
import { createLogger } from '../src/logger.ts'
import { WORKFLOW_RUNS } from '../src/queues/catalog.ts'
import { createReconciler } from '../src/engine/reconciler.ts'
import { runsRepository } from '../src/runs/repository.ts'
import { dispatchEvents, lostEventsDispatch } from '../src/triggers/event.ts'

/**
 * The engine's defects of "Accepted means committed" (docs/decisions.md): workflow.run.failed
 * written with the failure (an outbox), shared in-memory ends bounded in bytes, no node line
 * after a cancel, and a pure chain's time bound counting its own work only.
 */

const { db, queues } = await createCoreTestContext(t)
const logger = createLogger('silent', 'engine-outbox-test')
const eventDeps = { db, queues, logger, eventFanoutMax: 100 }

const dialect = new PgDialect()
/** `db` with the parameters of every statement measured: the largest, in bytes of text. */
function measuredDb (): { db: Db, largest: () => number } {
  let largest = 0
  const measured = new Proxy(db, {
    get (target, property, receiver) {
      if (property !== 'execute') return Reflect.get(target, property, receiver)
      return async (query: SQL) => {
        const { params } = dialect.sqlToQuery(query)
        largest = Math.max(largest, params.reduce<number>((bytes, param) => bytes + String(param).length, 0))
        return await target.execute(query)
      }
    }
  })
  return { db: measured, largest: () => largest }
}

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()
async function workflow (nodes: WorkflowNode[], values: Partial<typeof workflows.$inferInsert> = {}): Promise<string> {
  const [row] = await db.insert(workflows).values({ userId: owner!.id, name: 'wf', triggerType: 'MANUAL', isActive: true, nodes, ...values }).returning()
  return row!.id
}
async function run (workflowId: string, triggerData: Record<string, unknown> = { n: 1 }): Promise<string> {
  const [row] = await db.insert(runs).values({ workflowId, userId: owner!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData }).returning()
  return row!.id
}
const firstDelivery = (id: string) => ({ queueName: WORKFLOW_RUNS, id, attemptsMade: 0, stalledCounter: 0, timestamp: 0 })
const setChain = (count: number, values: Record<string, unknown> = { n: '{{triggerData.n}}' }): WorkflowNode[] =>
  Array.from({ length: count }, (_, i) => ({ id: `s${i}`, type: 'set', config: { values }, ...(i < count - 1 && { next: `s${i + 1}` }) }))

t.test('workflow.run.failed is written with the failure: a dispatch that never happened is done by the reconciler, once', async (t) => {
  const listener = await workflow([{ id: 'noop', type: 'set', config: { values: {} } }], { triggerType: 'EVENT', triggerConfig: { eventName: 'workflow.run.failed' } })
  // The dispatch right after the failure is lost (a crash, a store away): before, so was the event.
  const engine = createTestEngine(t, { db, queues, dispatchEvents: async () => { throw new Error('Connection is closed.') } })
  const failing = await workflow([{ id: 'boom', type: 'nope' }])
  const runId = await run(failing)
  t.equal(await engine.executeRun(runId), 'FAILED')
  const [event] = await db.select().from(events).where(sql`${events.payload}->>'runId' = ${runId}`)
  t.match(event, { name: 'workflow.run.failed', userId: owner!.id, dispatchedAt: null, payload: { runId, workflowId: failing, error: 'Unknown node type: nope' } }, 'the event is stored with the failure')
  t.same(await db.select().from(runs).where(eq(runs.workflowId, listener)), [], 'no listener run yet')

  const reconciler = createReconciler({ db, queues, logger, engine, graceMs: 0, restore: { schedulers: async () => 0, chatDeliveries: async () => 0, events: lostEventsDispatch(eventDeps, 0), assistantTurns: async () => 0, broadcasts: async () => 0, eventDeliveries: async () => 0, knowledgeSources: async () => 0 } })
  const [first, second] = await Promise.all([reconciler.reconcile(), dispatchEvents(eventDeps, { ids: [event!.id] })])
  t.equal(first.eventsDispatched + second, 1, 'dispatched once, by one of two dispatchers at the same time')
  const started = await db.select().from(runs).where(eq(runs.workflowId, listener))
  t.equal(started.length, 1, 'the listener started once')
  t.same(started[0]!.triggerData, { runId, workflowId: failing, error: 'Unknown node type: nope' })
  t.ok(await queues[WORKFLOW_RUNS].getJob(started[0]!.id), 'its job is queued')
  t.equal((await reconciler.reconcile()).eventsDispatched, 0, 'nothing left to dispatch')
})

t.test('in-memory ends that share a statement stay within 8 MiB, however large each run is', async (t) => {
  const measured = measuredDb()
  const engine = createTestEngine(t, { db: measured.db, queues })
  // Each run's one node outputs 0.6 MB (its trigger's text, as is: quick, so the 20 runs end in one turn): before, one 12 MB statement.
  const workflowId = await workflow(setChain(1, { big: '{{triggerData.big}}' }))
  const runIds = await Promise.all(Array.from({ length: 20 }, async () => await run(workflowId, { big: 'x'.repeat(600_000) })))
  const outcomes = await Promise.all(runIds.map(async (runId, i) => await engine.executeRun(runId, undefined, { job: firstDelivery(`big-${i}`) })))
  t.ok(outcomes.every((outcome) => outcome === 'SUCCESS'), 'every run succeeded')
  t.ok(measured.largest() <= 8 * 1024 * 1024, `largest statement ${(measured.largest() / 1024 / 1024).toFixed(1)} MiB`)
})

t.test('a run cancelled during a pure chain writes no node line after its cancel', async (t) => {
  const workflowId = await workflow(setChain(150))
  const runId = await run(workflowId)
  // The run is cancelled while node s10 starts (its credentials are looked up); s10 … s99 run in memory after it.
  const cancelAt: CredentialResolver = {
    forNode: async (_userId, node) => {
      if (node.id === 's10') await runsRepository(db).cancel(runId, { id: owner!.id, role: 'admin' })
      return { redact: (value) => value }
    }
  }
  const engine = createTestEngine(t, { db, queues, credentials: cancelAt, checkpointMaxNodes: 100 })
  t.equal(await engine.executeRun(runId), 'STOPPED', 'the checkpoint after the cancel is refused')
  const lines = (await db.select().from(runLogs).where(eq(runLogs.runId, runId)).orderBy(asc(runLogs.id))).map((line) => line.message)
  const cancelled = lines.indexOf('Run cancelled')
  t.ok(cancelled > 0, 'the cancel is logged')
  t.same(lines.slice(cancelled + 1), [], 'nothing after it')
  t.equal((await db.select().from(runs).where(eq(runs.id, runId)))[0]!.status, 'CANCELLED')
})

t.test('50 concurrent 100-node chains run each node once: yielding to each other is not work', async (t) => {
  const executions = new Map<string, number>()
  const counting: CredentialResolver = {
    forNode: async (_userId, node) => {
      executions.set(node.id, (executions.get(node.id) ?? 0) + 1)
      return { redact: (value) => value }
    }
  }
  const engine = createTestEngine(t, { db, queues, credentials: counting })
  const workflowId = await workflow(setChain(100))
  const runIds = await Promise.all(Array.from({ length: 50 }, async () => await run(workflowId)))
  const began = performance.now()
  const outcomes = await Promise.all(runIds.map(async (runId, i) => await engine.executeRun(runId, undefined, { job: firstDelivery(`chain-${i}`) })))
  t.comment(`50 × 100 nodes in ${Math.round(performance.now() - began)} ms`)
  t.ok(outcomes.every((outcome) => outcome === 'SUCCESS'))
  t.same([...executions.values()].filter((count) => count !== 50), [], 'each node executed once per run (50 runs), none again after a hand-back')
  const started = await db.select({ count: sql<number>`count(*)::int` }).from(runLogs).where(sql`${runLogs.runId} in (select id from runs where workflow_id = ${workflowId}) and ${runLogs.message} like 'Node % started'`)
  t.equal(started[0]!.count, 5000, 'and logged once')
})
