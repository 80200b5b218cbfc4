import { sql } from 'drizzle-orm'
import t from 'tap'
import { createTestDatabase } from '@switchboard/testing/database'
import { createDatabase } from '../src/db/client.ts'
import { users, workflows } from '../src/db/schema/index.ts'
import { insertRuns, type RunTarget } from '../src/runs/start.ts'
import { runStore } from '../src/engine/run-store.ts'

// A process keeps its prepared statements' plans for as long as it lives. A plan made while `runs`
// was small, then kept while it grew, scanned the whole table on every start (docs/decisions.md,
// "Fewer writes per run"): here every plan is generic and made on a small table, autovacuum never
// re-plans, and the table then grows before the hot path's statements run again.
const testDatabase = await createTestDatabase()
const database = createDatabase(`${testDatabase.url}?plan_cache_mode=force_generic_plan`, { max: 1 })
const { db } = database
t.teardown(async () => {
  await database.close()
  await testDatabase.drop()
})

await db.execute(sql`alter table runs set (autovacuum_enabled = false)`)
const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()
const [row] = await db.insert(workflows).values({ userId: owner!.id, name: 'w', triggerType: 'WEBHOOK', isActive: true, nodes: [] }).returning()
const workflow: RunTarget = { id: row!.id, userId: row!.userId, triggerType: row!.triggerType }
const store = runStore(db)

/** Starts runs as a webhook group does, reads them as their jobs do and ends them as all-pure runs do. */
async function hotPath (): Promise<void> {
  const { created } = await insertRuns(db, { runs: Array.from({ length: 5 }, (_, n) => ({ workflow, triggerData: { n }, rawBody: Buffer.from(`{"n":${n}}`) })) })
  const read = await store.peekStarts(created.map(({ runId }) => runId))
  await store.startAndSucceed([...read.values()].map((run) => ({
    runId: run.id, claim: run.claim, ownerId: undefined, startedAt: new Date(), elapsedMs: 0, outputs: {}, lines: []
  })))
}

/** Sequential scans of `runs` so far, this connection's included (flushed at its next transaction's end). */
async function runsScans (): Promise<number> {
  await db.execute(sql`select pg_stat_force_next_flush()`)
  const [stats] = await db.execute<{ scans: number }>(sql`select seq_scan::int as scans from pg_stat_user_tables where relname = 'runs'`)
  return stats!.scans
}

t.test('starting, reading and ending runs never scans the runs table, whatever plan a connection keeps', async (t) => {
  // Each statement twice on the small table: the second prepares it, with its plan.
  await hotPath()
  await hotPath()
  await db.execute(sql`
    insert into runs (id, workflow_id, user_id, queue, workflow_version, status, trigger_data)
    select 'seeded' || n, ${workflow.id}, ${workflow.userId}, 'workflow-runs', 1, 'SUCCESS', '{}'::jsonb from generate_series(1, 20000) as n`)
  const before = await runsScans()
  for (let i = 0; i < 3; i++) await hotPath()
  t.equal(await runsScans() - before, 0, 'no sequential scan of runs')
  const [{ ended }] = await db.execute<{ ended: number }>(sql`select count(*)::int as ended from runs where status = 'SUCCESS' and id not like 'seeded%'`)
  t.equal(ended, 25, 'and every run started was read and ended')
})
