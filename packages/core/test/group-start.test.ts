import { eq, inArray, sql } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { idempotencyKeys, runs, users, workflows } from '../src/db/schema/index.ts'
import type { DbOrTx } from '../src/db/client.ts'
import { WORKFLOW_RUNS, type Queues } from '../src/queues/catalog.ts'
import { createGroupStarter, GROUP_START_DEFAULTS } from '../src/runs/group-start.ts'
import { exactCounters } from '../src/workflows/counters.ts'
import type { RunTarget } from '../src/runs/start.ts'
import { Deadline } from '../src/timeout.ts'

const { db, queues } = await createCoreTestContext(t)

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()
const [row] = await db.insert(workflows).values({ userId: owner.id, name: 'w', triggerType: 'WEBHOOK', isActive: true, nodes: [{ id: 's', type: 'set', config: { values: {} } }] }).returning()
const workflow: RunTarget = { id: row.id, userId: row.userId, triggerType: row.triggerType }

const within = (ms = 3000): Deadline => Deadline.after(ms)

/** `db` with its transactions counted: each group is one transaction. */
function countingDb (): { db: DbOrTx, transactions: () => number } {
  let transactions = 0
  const counted = new Proxy(db, {
    get (target, property, receiver) {
      if (property === 'transaction') {
        return async (...args: Parameters<typeof db.transaction>) => {
          transactions++
          return await target.transaction(...args)
        }
      }
      return Reflect.get(target, property, receiver) as unknown
    }
  })
  return { db: counted, transactions: () => transactions }
}

/** `queues` with its addBulk calls counted and, while `failing`, refused. */
function countingQueues (): { queues: Queues, addBulks: () => number, fail: (on: boolean) => void } {
  let addBulks = 0
  let failing = false
  const queue = queues[WORKFLOW_RUNS]
  const addBulk = queue.addBulk.bind(queue)
  const wrapped = new Proxy(queue, {
    get (target, property, receiver) {
      if (property === 'addBulk') {
        return async (...args: Parameters<typeof addBulk>) => {
          addBulks++
          if (failing) throw new Error('Connection is closed.')
          return await addBulk(...args)
        }
      }
      return Reflect.get(target, property, receiver) as unknown
    }
  })
  return { queues: { ...queues, [WORKFLOW_RUNS]: wrapped }, addBulks: () => addBulks, fail: (on) => { failing = on } }
}

t.test('starts that arrive together are written by one transaction and queued by one addBulk, each answered with its own run', async (t) => {
  const counting = countingDb()
  const counted = countingQueues()
  const starter = createGroupStarter({ db: counting.db, queues: counted.queues })
  const started = await Promise.all(Array.from({ length: 200 }, async (_, seq) => await starter.start({
    workflow, triggerData: { seq }, requestId: `request-${seq}`, deadline: within()
  })))
  await starter.drain(1000)
  t.equal(new Set(started.map(({ runId }) => runId)).size, 200, 'a run each')
  t.ok(started.every(({ created }) => created))
  // The first start goes out alone at the end of its turn; the other 199 arrived in the same turn.
  t.ok(counting.transactions() <= 2, `${counting.transactions()} transactions for 200 starts`)
  t.ok(counted.addBulks() <= 2, `${counted.addBulks()} addBulk calls for 200 starts`)
  const stored = await db.select().from(runs).where(inArray(runs.id, started.map(({ runId }) => runId)))
  t.same(stored.map(({ triggerData }) => (triggerData as { seq: number }).seq).sort((a, b) => a - b), Array.from({ length: 200 }, (_, i) => i), 'each run has its own triggerData')
  for (const [seq, { runId }] of started.entries()) {
    const job = await queues[WORKFLOW_RUNS].getJob(runId)
    t.same(job?.data, { runId, userId: workflow.userId, requestId: `request-${seq}` }, 'each job carries its own request id')
    if (seq > 3) break
  }
})

t.test('a group bounds its runs and bytes', async (t) => {
  const counting = countingDb()
  const starter = createGroupStarter({ db: counting.db, queues }, { ...GROUP_START_DEFAULTS, maxRuns: 10, maxBytes: 100_000, maxInFlight: 1 })
  await Promise.all(Array.from({ length: 30 }, async (_, seq) => await starter.start({ workflow, triggerData: { seq }, deadline: within() })))
  t.ok(counting.transactions() >= 3, `30 starts at most 10 a group: ${counting.transactions()} groups`)
  const before = counting.transactions()
  const rawBody = Buffer.alloc(40_000, 'a')
  await Promise.all(Array.from({ length: 3 }, async () => await starter.start({ workflow, triggerData: {}, rawBody, deadline: within() })))
  t.equal(counting.transactions() - before, 3, 'three 80 kB starts in groups of at most 100 kB: one a group')
})

t.test('one Idempotency-Key twice in a group is one run; keys of other requests are their own', async (t) => {
  const starter = createGroupStarter({ db, queues })
  const [first, second, other] = await Promise.all([
    starter.start({ workflow, triggerData: { n: 1 }, idempotencyKey: 'same', deadline: within() }),
    starter.start({ workflow, triggerData: { n: 2 }, idempotencyKey: 'same', deadline: within() }),
    starter.start({ workflow, triggerData: { n: 3 }, idempotencyKey: 'other', deadline: within() })
  ])
  t.equal(first!.runId, second!.runId, 'the same run for the same key')
  t.ok(first!.created)
  t.notOk(second!.created, 'the second start created nothing')
  t.not(other!.runId, first!.runId)
  const keys = await db.select().from(idempotencyKeys).where(eq(idempotencyKeys.workflowId, workflow.id))
  t.same(keys.map(({ key, runId }) => [key, runId]).sort(), [['other', other!.runId], ['same', first!.runId]].sort())
  const again = await starter.start({ workflow, triggerData: {}, idempotencyKey: 'same', deadline: within() })
  t.same(again, { runId: first!.runId, created: false }, 'a later group finds the stored key')
})

t.test('a member whose deadline has passed is refused alone; the rest of its group is stored', async (t) => {
  const starter = createGroupStarter({ db, queues })
  const [late, onTime] = await Promise.allSettled([
    starter.start({ workflow, triggerData: { late: true }, deadline: within(200) }),
    starter.start({ workflow, triggerData: { late: false }, deadline: within() })
  ])
  t.equal(late.status, 'rejected')
  t.match((late as PromiseRejectedResult).reason, { code: 'SERVICE_UNAVAILABLE' })
  t.equal(onTime.status, 'fulfilled')
  const [stored] = await db.select().from(runs).where(eq(runs.id, (onTime as PromiseFulfilledResult<{ runId: string }>).value.runId))
  t.same(stored?.triggerData, { late: false })
})

t.test('when the queue refuses a group, every member is answered with its committed run, left PENDING for the reconciler', async (t) => {
  const counted = countingQueues()
  const starter = createGroupStarter({ db, queues: counted.queues })
  counted.fail(true)
  const started = await Promise.all(Array.from({ length: 20 }, async (_, seq) => await starter.start({
    workflow, triggerData: { seq }, idempotencyKey: `unqueued-${seq}`, deadline: within()
  })))
  await starter.drain(1000)
  counted.fail(false)
  const stored = await db.select().from(runs).where(inArray(runs.id, started.map(({ runId }) => runId)))
  t.equal(stored.length, 20, 'every run is stored')
  t.ok(stored.every(({ status }) => status === 'PENDING'))
  t.same(await Promise.all(started.map(async ({ runId }) => await queues[WORKFLOW_RUNS].getJob(runId))), started.map(() => undefined), 'no job was queued')
  const again = await starter.start({ workflow, triggerData: {}, idempotencyKey: 'unqueued-0', deadline: within() })
  t.same(again, { runId: started[0]!.runId, created: false }, 'a retry with the key gets the stored run')
})

t.test('a member near its deadline is answered on time alone; the rest of its group commits (defect: it failed all of them)', async (t) => {
  // A held key makes the group's insert wait 1.3 s for a lock, longer than the straggler has (1,005 ms:
  // before, a request deadline kept 1 s for the enqueue, so the group got its last 5 ms and failed whole).
  const held = db.transaction(async (tx) => {
    await tx.insert(idempotencyKeys).values({ workflowId: workflow.id, key: 'held', runId: (await tx.insert(runs).values({ workflowId: workflow.id, userId: workflow.userId, queue: WORKFLOW_RUNS, workflowVersion: 1 }).returning())[0]!.id })
    await new Promise((resolve) => setTimeout(resolve, 1300))
    tx.rollback()
  }).catch(() => {})
  await new Promise((resolve) => setTimeout(resolve, 50))
  const starter = createGroupStarter({ db, queues })
  const sentAt = Date.now()
  const straggler = starter.start({ workflow, triggerData: { straggler: true }, deadline: within(1005) })
    .then(() => 'accepted', (err: unknown) => ({ err, ms: Date.now() - sentAt }))
  const healthy = Array.from({ length: 50 }, async (_, seq) => await starter.start({
    workflow, triggerData: { seq }, ...(seq === 0 && { idempotencyKey: 'held' }), deadline: within(3000)
  }))
  const outcomes = await Promise.allSettled(healthy)
  const refused = await straggler
  await held
  t.equal(outcomes.filter(({ status }) => status === 'fulfilled').length, 50, 'every healthy member is accepted')
  t.match(refused, { err: { code: 'SERVICE_UNAVAILABLE' } }, 'the straggler is refused')
  t.ok(typeof refused === 'object' && refused.ms < 1005 + 100, `answered by its own deadline (${typeof refused === 'object' ? refused.ms : '?'} ms)`)
  const stragglerRuns = await db.select({ id: runs.id }).from(runs).where(sql`${runs.triggerData}->>'straggler' = 'true'`)
  t.same(stragglerRuns, [], 'and leaves no run: it was taken out before the COMMIT')
  // Its group's starts were counted in one delta with it; what is counted now is the runs kept.
  const [counted] = await db.select({ runCount: exactCounters.runCount }).from(workflows).where(eq(workflows.id, workflow.id))
  const [stored] = await db.select({ count: sql<number>`count(*)::int` }).from(runs).where(eq(runs.workflowId, workflow.id))
  t.equal(counted!.runCount, stored!.count, 'the workflow counts the runs kept, not the one taken out')
})

t.test('a start waiting for a group to go out is answered at its deadline, not when the groups ahead of it end', async (t) => {
  // One group at a time, and it waits 1.5 s for a lock: the start behind it has 600 ms.
  const held = db.transaction(async (tx) => {
    await tx.insert(idempotencyKeys).values({ workflowId: workflow.id, key: 'held-ahead', runId: (await tx.insert(runs).values({ workflowId: workflow.id, userId: workflow.userId, queue: WORKFLOW_RUNS, workflowVersion: 1 }).returning())[0]!.id })
    await new Promise((resolve) => setTimeout(resolve, 1500))
    tx.rollback()
  }).catch(() => {})
  await new Promise((resolve) => setTimeout(resolve, 50))
  const starter = createGroupStarter({ db, queues }, { ...GROUP_START_DEFAULTS, maxInFlight: 1 })
  const ahead = starter.start({ workflow, triggerData: {}, idempotencyKey: 'held-ahead', deadline: within(3000) })
  await new Promise((resolve) => setImmediate(resolve))
  const sentAt = Date.now()
  const behind = await starter.start({ workflow, triggerData: { behind: true }, deadline: within(600) }).then(() => 'accepted', (err: unknown) => ({ err, ms: Date.now() - sentAt }))
  t.match(behind, { err: { code: 'SERVICE_UNAVAILABLE' } })
  t.ok(typeof behind === 'object' && behind.ms < 600 + 100, `answered by its deadline (${typeof behind === 'object' ? behind.ms : '?'} ms)`)
  t.ok((await ahead).created, 'the group ahead commits once the lock is free')
  await held
  t.same(await db.select({ id: runs.id }).from(runs).where(sql`${runs.triggerData}->>'behind' = 'true'`), [], 'the start behind left no run')
})
