import { sql } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { runs, users, workflows } from '../src/db/schema/index.ts'
import { eventWaits, matchListens } from '../src/engine/event-waits.ts'
import { someoneListens } from '../src/events/outbox.ts'
import { listensToOf } from '../src/workflows/listens-to.ts'

/**
 * The statements of event waits (engine/event-waits.ts; README, Events and waits): which event a
 * wait takes whoever sees it first (the dispatch or the wait's own look when it opens), that its
 * timeout and an event race on one row, and the probe that stores events for a run about to wait.
 */
const { db } = await createCoreTestContext(t)
const waits = eventWaits(db)
const [owner] = await db.insert(users).values({ email: 'waits@example.com', passwordHash: 'x' }).returning()
const userId = owner!.id
const [workflow] = await db.insert(workflows).values({ userId, name: 'w', triggerType: 'MANUAL', nodes: [] }).returning()

let runs_ = 0
async function newRun (): Promise<string> {
  const id = `run-${++runs_}`
  await db.insert(runs).values({ id, workflowId: workflow!.id, userId, queue: 'workflow-runs', workflowVersion: 1, status: 'RUNNING' })
  return id
}
let events_ = 0
async function storeEvent (name: string, payload: unknown, createdAt = new Date()): Promise<string> {
  const id = `event-${++events_}`
  await db.execute(sql`insert into events (id, name, user_id, payload, created_at) values (${id}, ${name}, ${userId}, ${JSON.stringify(payload)}::jsonb, ${createdAt.toISOString()}::timestamptz)`)
  return id
}
const match = [{ path: ['order', 'id'], value: '7' }]

t.test('an event committed after the node started, before its wait was written, is taken when the wait opens', async (t) => {
  const runId = await newRun()
  const since = new Date(Date.now() - 1000)
  await storeEvent('order.paid', { order: { id: '7' } }, new Date(since.getTime() - 10))
  const eventId = await storeEvent('order.paid', { order: { id: 7, total: 3 } }, new Date(since.getTime() + 10))
  await storeEvent('order.paid', { order: { id: '7' } }, new Date(since.getTime() + 20))
  const wait = await waits.open({ runId, nodeId: 'paid', userId, event: 'order.paid', match, since, expiresAt: new Date(Date.now() + 60_000) })
  t.equal(wait.event?.id, eventId, 'the first matching event since the node started (a number equals its text); not one before')
  t.same(wait.event?.payload, { order: { id: 7, total: 3 } })
  t.notOk(wait.timedOut)
  const again = await waits.open({ runId, nodeId: 'paid', userId, event: 'order.paid', match, since: new Date(), expiresAt: new Date(Date.now() + 60_000) })
  t.equal(again.event?.id, eventId, 'opening again (the node ran again after a crash) changes nothing')
})

t.test('the dispatch of a later event sets the wait once; the timeout then changes nothing', async (t) => {
  const runId = await newRun()
  const opened = await waits.open({ runId, nodeId: 'paid', userId, event: 'order.paid', match: [{ path: ['order', 'id'], value: '8' }], since: new Date(), expiresAt: new Date(Date.now() - 1) })
  t.equal(opened.event, null)
  const other = await storeEvent('order.paid', { order: { id: '9' } })
  t.same(await db.transaction(async (tx) => await matchListens(tx, [other])), [], 'another order reaches nothing')
  const first = await storeEvent('order.paid', { order: { id: '8' } })
  const second = await storeEvent('order.paid', { order: { id: '8' } })
  const reached = await db.transaction(async (tx) => await matchListens(tx, [first, second]))
  t.same(reached, [{ runId, kind: 'wait', queue: 'workflow-runs' }], 'one wait, reached once')
  t.same(await db.transaction(async (tx) => await matchListens(tx, [second])), [], 'a wait that has its event takes no other')
  const after = await waits.timeOut(runId, 'paid')
  t.equal(after?.event?.id, first, 'the oldest of the two')
  t.notOk(after?.timedOut, 'the event won the row: the timeout changed nothing')
})

t.test('a wait past its time without an event times out, and a later event finds it closed', async (t) => {
  const runId = await newRun()
  await waits.open({ runId, nodeId: 'paid', userId, event: 'order.paid', match: [{ path: ['order', 'id'], value: '10' }], since: new Date(), expiresAt: new Date(Date.now() - 1) })
  t.ok((await waits.timeOut(runId, 'paid'))?.timedOut)
  const late = await storeEvent('order.paid', { order: { id: '10' } })
  t.same(await db.transaction(async (tx) => await matchListens(tx, [late])), [])
  t.equal((await waits.get(runId, 'paid'))?.event, null)
})

t.test('waits and workflows naming an event count as listeners', async (t) => {
  const listens = async (name: string): Promise<boolean> => {
    const [row] = await db.execute<{ listens: boolean }>(sql`select ${someoneListens(name, sql`${userId}::text`, 'none')} as listens`)
    return row!.listens
  }
  t.notOk(await listens('invoice.sent'))
  await db.update(workflows).set({ listensTo: listensToOf([{ id: 'w', type: 'wait_for_event', config: { event: 'invoice.sent' } }], [{ event: 'invoice.voided' }]) })
  t.ok(await listens('invoice.sent'), 'a workflow whose wait names it')
  t.ok(await listens('invoice.voided'), 'a workflow whose cancelOn names it')
  await db.update(workflows).set({ listensTo: [] })
  t.notOk(await listens('order.shipped'))
  await waits.open({ runId: await newRun(), nodeId: 'shipped', userId, event: 'order.shipped', match: [], since: new Date(), expiresAt: new Date(Date.now() + 60_000) })
  t.ok(await listens('order.shipped'), 'an open wait of a run')
})
