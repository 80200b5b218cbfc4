import t from 'tap'
import { eq } from 'drizzle-orm'
import { createTestDatabase } from '@switchboard/testing/database'
import type { Viewer } from '../src/users/viewer.ts'
import { createDatabase, type DbOrTx } from '../src/db/client.ts'
import { users, workflows, type Workflow } from '../src/db/schema/index.ts'
import { createWorkflowService, type ScheduleSync } from '../src/workflows/service.ts'

/** These workflows have no code nodes: nothing is compiled. */
const tools = { code: { check: async () => { throw new Error('unused') } } }

const testDatabase = await createTestDatabase()
const { db, close } = createDatabase(testDatabase.url, { max: 4 })
t.teardown(async () => {
  await close()
  await testDatabase.drop()
})

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x', role: 'member' }).returning()
const viewer: Viewer = { id: owner!.id, role: 'member' }

/** Records each hook call and what the transaction it runs in can see. */
function recordingSync (fail = false) {
  const calls: Array<{ hook: string, workflowId: string, visible: boolean, isActive?: boolean }> = []
  const visible = async (tx: DbOrTx, id: string): Promise<boolean> =>
    (await tx.select({ id: workflows.id }).from(workflows).where(eq(workflows.id, id))).length > 0
  const sync: ScheduleSync = {
    async onSaved (workflow: Workflow, tx: DbOrTx) {
      calls.push({ hook: 'saved', workflowId: workflow.id, visible: await visible(tx, workflow.id), isActive: workflow.isActive })
      if (fail) throw new Error('scheduler unavailable')
    },
    async onDeleted (deleted, tx: DbOrTx) {
      calls.push({ hook: 'deleted', workflowId: deleted.id, visible: await visible(tx, deleted.id) })
      if (fail) throw new Error('scheduler unavailable')
    }
  }
  return { sync, calls }
}

t.test('the schedule hooks run in the saving transaction with the stored workflow', async (t) => {
  const { sync, calls } = recordingSync()
  const service = createWorkflowService({ db, tools, scheduleSync: sync })
  const created = await service.create(viewer, { name: 'Nightly', triggerType: 'CRON', triggerConfig: { cronExpression: '0 3 * * *' }, isActive: true })
  await service.update(viewer, created.id, { isActive: false })
  await service.update(viewer, created.id, {})
  await service.delete(viewer, created.id)
  t.same(calls, [
    { hook: 'saved', workflowId: created.id, visible: true, isActive: true },
    { hook: 'saved', workflowId: created.id, visible: true, isActive: false },
    { hook: 'deleted', workflowId: created.id, visible: false }
  ], 'an empty change saves nothing and calls no hook')
})

t.test('a failing hook undoes the change', async (t) => {
  const working = createWorkflowService({ db, tools })
  const kept = await working.create(viewer, { name: 'Kept', triggerType: 'MANUAL' })

  const { sync } = recordingSync(true)
  const failing = createWorkflowService({ db, tools, scheduleSync: sync })
  await t.rejects(failing.create(viewer, { name: 'Never stored', triggerType: 'CRON', triggerConfig: { cronExpression: '* * * * *' } }), { message: 'scheduler unavailable' })
  t.same(await db.select({ id: workflows.id }).from(workflows).where(eq(workflows.name, 'Never stored')), [])

  await t.rejects(failing.update(viewer, kept.id, { name: 'Renamed' }), { message: 'scheduler unavailable' })
  await t.rejects(failing.delete(viewer, kept.id), { message: 'scheduler unavailable' })
  const [row] = await db.select({ name: workflows.name }).from(workflows).where(eq(workflows.id, kept.id))
  t.same(row, { name: 'Kept' }, 'neither renamed nor deleted')
})
