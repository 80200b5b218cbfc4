import { eq, sql } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { waitFor } from '@switchboard/testing/wait'
import { runs, users, workflowCounterDeltas, workflows } from '../src/db/schema/index.ts'
import { startRun } from '../src/runs/start.ts'
import { runStore } from '../src/engine/run-store.ts'
import { createLogger } from '../src/logger.ts'
import { createCounterFolding, foldCounterDeltas } from '../src/workflows/counters.ts'
import { workflowsRepository } from '../src/workflows/repository.ts'

const { db, queues } = await createCoreTestContext(t)

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x', role: 'member' }).returning()
const viewer = { id: owner!.id, role: owner!.role }

async function newWorkflow (name: string) {
  const [workflow] = await db.insert(workflows).values({
    userId: owner!.id, name, triggerType: 'MANUAL', isActive: true, nodes: [{ id: 'only', type: 'set', config: { values: {} } }]
  }).returning()
  return workflow!
}

/**
 * Runs `work` in a transaction that stays open until the returned `release` is called:
 * every row lock it took is held meanwhile.
 */
async function holdOpen (work: (tx: typeof db) => Promise<void>) {
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  let done!: () => void
  const worked = new Promise<void>((resolve) => { done = resolve })
  const transaction = db.transaction(async (tx) => {
    await work(tx as unknown as typeof db)
    done()
    await released
  })
  await Promise.race([worked, transaction])
  return async () => {
    release()
    await transaction
  }
}

/** `work` in a transaction that gives up on any lock it waits for longer than 200 ms. */
async function withoutWaiting (work: (tx: typeof db) => Promise<void>): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.execute(sql`set local lock_timeout = '200ms'`)
    await work(tx as unknown as typeof db)
  })
}

t.test('a run start or end never waits for another run of the same workflow', async (t) => {
  const workflow = await newWorkflow('hot')
  const ended = await startRun({ db, queues }, { workflow, triggerData: {} })

  // The first start holds its transaction open: before, it held the workflow row's lock until its commit.
  const releaseStart = await holdOpen(async (tx) => { await startRun({ db: tx, queues }, { workflow, triggerData: { first: true } }) })
  await t.resolves(withoutWaiting(async (tx) => { await startRun({ db: tx, queues }, { workflow, triggerData: { second: true } }) }),
    'a second start of the workflow commits at once')
  await t.resolves(withoutWaiting(async (tx) => { await runStore(tx).fail(ended.runId, 'ends while another start is open', { from: ['PENDING'] }) }),
    'a run end commits at once')
  await releaseStart()

  // A run end holds its transaction open; another start and a fold of the counters go ahead.
  const other = await startRun({ db, queues }, { workflow, triggerData: {} })
  const releaseEnd = await holdOpen(async (tx) => { await runStore(tx).fail(other.runId, 'ends, held open', { from: ['PENDING'] }) })
  await t.resolves(withoutWaiting(async (tx) => { await startRun({ db: tx, queues }, { workflow, triggerData: {} }) }), 'a start commits at once')
  await t.resolves(withoutWaiting(async (tx) => { await foldCounterDeltas(tx) }), 'a fold skips the held delta and commits at once')
  await releaseEnd()

  const [detail] = [await workflowsRepository(db).findDetail(viewer, workflow.id)]
  t.match(detail, { runCount: 5, failureCount: 2, successCount: 0 }, 'every start and end counted once')
})

t.test('reads are exact before and after the fold, and a fold loses nothing', async (t) => {
  const workflow = await newWorkflow('counted')
  const repository = workflowsRepository(db)
  const read = async () => {
    const detail = await repository.findDetail(viewer, workflow.id)
    const listed = (await repository.list(viewer, { limit: 100, offset: 0 })).find(({ id }) => id === workflow.id)
    const { runCount, successCount, failureCount, lastRunAt } = detail!
    t.same(listed && { runCount: listed.runCount, successCount: listed.successCount, failureCount: listed.failureCount, lastRunAt: listed.lastRunAt },
      { runCount, successCount, failureCount, lastRunAt }, 'the list says what the detail says')
    return { runCount, successCount, failureCount, lastRunAt }
  }
  t.same(await read(), { runCount: 0, successCount: 0, failureCount: 0, lastRunAt: null }, 'a workflow that never ran')

  const started = []
  for (let i = 0; i < 3; i++) started.push(await startRun({ db, queues }, { workflow, triggerData: { i } }))
  await runStore(db).fail(started[0]!.runId, 'failed', { from: ['PENDING'] })
  const newest = (await db.select({ createdAt: runs.createdAt }).from(runs).where(eq(runs.id, started[2]!.runId)))[0]!.createdAt
  const expected = { runCount: 3, successCount: 0, failureCount: 1, lastRunAt: newest }

  const [row] = await db.select().from(workflows).where(eq(workflows.id, workflow.id))
  t.match(row, { runCount: 0, failureCount: 0, lastRunAt: null }, 'the workflow row was not written')
  t.same(await read(), expected, 'exact before the fold')

  t.ok(await foldCounterDeltas(db, 2) > 0, 'a small batch folds some deltas')
  t.same(await read(), expected, 'exact halfway through')
  while (await foldCounterDeltas(db) > 0);
  t.same(await db.select().from(workflowCounterDeltas).where(eq(workflowCounterDeltas.workflowId, workflow.id)), [], 'every delta folded')
  const [folded] = await db.select().from(workflows).where(eq(workflows.id, workflow.id))
  t.match(folded, expected, 'the row holds them now')
  t.same(await read(), expected, 'exact after the fold')

  // Folded and unfolded together.
  await startRun({ db, queues }, { workflow, triggerData: {} })
  t.match(await read(), { runCount: 4, failureCount: 1 }, 'a new start adds to the folded row')
})

t.test('the worker\'s loop folds every delta, in batches, until none is left', async (t) => {
  const workflow = await newWorkflow('looped')
  for (let i = 0; i < 3; i++) await startRun({ db, queues }, { workflow, triggerData: { i } })
  const folding = createCounterFolding({ db, logger: createLogger('silent', 'counters-test'), intervalMs: 20 })
  folding.start()
  t.teardown(folding.stop)
  await waitFor(async () => (await db.select().from(workflowCounterDeltas)).length === 0 ? true : undefined, { what: 'the deltas to be folded' })
  await folding.stop()
  const [row] = await db.select().from(workflows).where(eq(workflows.id, workflow.id))
  t.equal(row!.runCount, 3, 'the row holds the runs')
})
