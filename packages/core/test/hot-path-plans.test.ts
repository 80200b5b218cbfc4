import { sql } from 'drizzle-orm'
import t from 'tap'
import { createTestDatabase } from '@switchboard/testing/database'
import { createDatabase } from '../src/db/client.ts'
import { users, workflows } from '../src/db/schema/index.ts'
import { insertRuns, type RunTarget } from '../src/runs/start.ts'
import { runStore } from '../src/runs/steps.ts'

// A process keeps its prepared statements' plans for as long as it lives (autovacuum's ANALYZE makes
// them again, after a tenth of a large table changed). Plans made while few runs waited, then kept
// while a backlog grew, read the whole backlog on every start (docs/decisions.md, "Fewer writes
// per run"): here every plan is generic, made on a table of finished runs, and never made again
// while runs wait.
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

/** Rows of `runs` read so far by sequential and index scans, this connection's included (flushed at its next transaction's end). */
async function runsRead (): Promise<number> {
  await db.execute(sql`select pg_stat_force_next_flush()`)
  const [stats] = await db.execute<{ read: number }>(sql`select (seq_tup_read + coalesce(idx_tup_fetch, 0))::int as read from pg_stat_user_tables where relname = 'runs'`)
  return stats!.read
}

t.test('starting, reading and ending runs reads only those runs, however many others wait', async (t) => {
  await db.execute(sql`
    insert into runs (id, workflow_id, user_id, queue, workflow_version, status, trigger_data)
    select 'ended' || n, ${workflow.id}, ${workflow.userId}, 'workflow-runs', 1, 'SUCCESS', '{}'::jsonb from generate_series(1, 20000) as n`)
  await db.execute(sql`analyze runs`)
  // Each statement twice: the second prepares it, with its plan.
  await hotPath()
  await hotPath()
  // A backlog: runs stored and not started yet.
  await db.execute(sql`
    insert into runs (id, workflow_id, user_id, queue, workflow_version, trigger_data)
    select 'waiting' || n, ${workflow.id}, ${workflow.userId}, 'workflow-runs', 1, '{}'::jsonb from generate_series(1, 20000) as n`)
  const before = await runsRead()
  for (let i = 0; i < 3; i++) await hotPath()
  const read = await runsRead() - before
  t.ok(read < 200, `a few rows read for 15 runs, not the backlog (${read})`)
  const [{ ended }] = await db.execute<{ ended: number }>(sql`select count(*)::int as ended from runs where status = 'SUCCESS' and id not like 'ended%'`)
  t.equal(ended, 25, 'and every run started was read and ended')
})
