import { eq, inArray } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { idempotencyKeys, runs, users, workflows } from '../src/db/schema/index.ts'
import type { DbOrTx } from '../src/db/client.ts'
import { WORKFLOW_RUNS, type Queues } from '../src/queues/catalog.ts'
import { createGroupStarter, GROUP_START_DEFAULTS } from '../src/runs/group-start.ts'
import type { RunTarget, StartDeadline } from '../src/runs/start.ts'
import { Deadline } from '../src/timeout.ts'

const { db, queues } = await createCoreTestContext(t)

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()
const [row] = await db.insert(workflows).values({ userId: owner.id, name: 'w', triggerType: 'WEBHOOK', isActive: true, nodes: [{ id: 's', type: 'set', config: { values: {} } }] }).returning()
const workflow: RunTarget = { id: row.id, userId: row.userId, triggerType: row.triggerType }

const limits = (ms = 3000): StartDeadline => ({ deadline: Deadline.after(ms), settleBy: Date.now() + 5000 })

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
    workflow, triggerData: { seq }, requestId: `request-${seq}`, limits: limits()
  })))
  t.equal(new Set(started.map(({ runId }) => runId)).size, 200, 'a run each')
  t.ok(started.every(({ created }) => created))
  // The first start goes out alone at the end of its turn; the other 199 arrived in the same turn.
  t.ok(counting.transactions() <= 2, `${counting.transactions()} transactions for 200 starts`)
  t.ok(counted.addBulks() <= 2, `${counted.addBulks()} addBulk calls for 200 starts`)
  const stored = await db.select().from(runs).where(inArray(runs.id, started.map(({ runId }) => runId)))
  t.same(stored.map(({ triggerData }) => (triggerData as { seq: number }).seq).sort((a, b) => a - b), Array.from({ length: 200 }, (_, i) => i), 'each run has its own triggerData')
  for (const [seq, { runId }] of started.entries()) {
    const job = await queues[WORKFLOW_RUNS].getJob(runId)
    t.same(job?.data, { runId, requestId: `request-${seq}` }, 'each job carries its own request id')
    if (seq > 3) break
  }
})

t.test('a group bounds its runs and bytes', async (t) => {
  const counting = countingDb()
  const starter = createGroupStarter({ db: counting.db, queues }, { ...GROUP_START_DEFAULTS, maxRuns: 10, maxBytes: 100_000, maxInFlight: 1 })
  await Promise.all(Array.from({ length: 30 }, async (_, seq) => await starter.start({ workflow, triggerData: { seq }, limits: limits() })))
  t.ok(counting.transactions() >= 3, `30 starts at most 10 a group: ${counting.transactions()} groups`)
  const before = counting.transactions()
  const rawBody = Buffer.alloc(40_000, 'a')
  await Promise.all(Array.from({ length: 3 }, async () => await starter.start({ workflow, triggerData: {}, rawBody, limits: limits() })))
  t.equal(counting.transactions() - before, 3, 'three 80 kB starts in groups of at most 100 kB: one a group')
})

t.test('one Idempotency-Key twice in a group is one run; keys of other requests are their own', async (t) => {
  const starter = createGroupStarter({ db, queues })
  const [first, second, other] = await Promise.all([
    starter.start({ workflow, triggerData: { n: 1 }, idempotencyKey: 'same', limits: limits() }),
    starter.start({ workflow, triggerData: { n: 2 }, idempotencyKey: 'same', limits: limits() }),
    starter.start({ workflow, triggerData: { n: 3 }, idempotencyKey: 'other', limits: limits() })
  ])
  t.equal(first!.runId, second!.runId, 'the same run for the same key')
  t.ok(first!.created)
  t.notOk(second!.created, 'the second start created nothing')
  t.not(other!.runId, first!.runId)
  const keys = await db.select().from(idempotencyKeys).where(eq(idempotencyKeys.workflowId, workflow.id))
  t.same(keys.map(({ key, runId }) => [key, runId]).sort(), [['other', other!.runId], ['same', first!.runId]].sort())
  const again = await starter.start({ workflow, triggerData: {}, idempotencyKey: 'same', limits: limits() })
  t.same(again, { runId: first!.runId, created: false }, 'a later group finds the stored key')
})

t.test('a member whose deadline has passed is refused alone; the rest of its group is stored', async (t) => {
  const starter = createGroupStarter({ db, queues })
  const [late, onTime] = await Promise.allSettled([
    starter.start({ workflow, triggerData: { late: true }, limits: limits(500) }),
    starter.start({ workflow, triggerData: { late: false }, limits: limits() })
  ])
  t.equal(late.status, 'rejected')
  t.match((late as PromiseRejectedResult).reason, { code: 'SERVICE_UNAVAILABLE' })
  t.equal(onTime.status, 'fulfilled')
  const [stored] = await db.select().from(runs).where(eq(runs.id, (onTime as PromiseFulfilledResult<{ runId: string }>).value.runId))
  t.same(stored?.triggerData, { late: false })
})

t.test('when the queue refuses a group, every member gets the error and none of its runs is left', async (t) => {
  const counted = countingQueues()
  const starter = createGroupStarter({ db, queues: counted.queues })
  const before = (await db.select({ id: runs.id }).from(runs)).length
  counted.fail(true)
  const outcomes = await Promise.allSettled(Array.from({ length: 20 }, async (_, seq) => await starter.start({
    workflow, triggerData: { seq }, idempotencyKey: `failing-${seq}`, limits: limits()
  })))
  t.ok(outcomes.every(({ status }) => status === 'rejected'), 'all 20 refused')
  t.equal((await db.select({ id: runs.id }).from(runs)).length, before, 'no run left behind')
  t.equal((await db.select().from(idempotencyKeys).where(inArray(idempotencyKeys.key, outcomes.map((_, seq) => `failing-${seq}`)))).length, 0, 'no key left behind')
  counted.fail(false)
  const retried = await starter.start({ workflow, triggerData: {}, idempotencyKey: 'failing-0', limits: limits() })
  t.ok(retried.created, 'the sender\'s retry creates the run')
})
