/**
 * Retention in the real worker processes: two workers share the deletion of what is due,
 * each run deleted once, and nothing that is not due is touched.
 */
import postgres from 'postgres'
import t from 'tap'
import { createTestDatabase } from '@switchboard/testing/database'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const EXPIRED = 1800

const database = await createTestDatabase()
const sql = postgres(database.url, { max: 1, onnotice: () => {} })
t.teardown(async () => { await sql.end() })

await sql`insert into users (id, email, password_hash) values ('owner', 'owner@example.com', 'x')`
await sql`insert into workflows (id, user_id, name, trigger_type, is_active, run_count, success_count)
  values ('hooks', 'owner', 'hooks', 'WEBHOOK', true, ${EXPIRED + 20}, ${EXPIRED + 20})`
// Finished runs only: the worker's reconciler would resume unfinished ones (packages/core/test/retention.test.ts keeps those).
const seed = async (prefix: string, count: number, age: string): Promise<void> => {
  await sql`insert into runs (id, workflow_id, user_id, status, queue, workflow_version, raw_body, created_at)
    select ${prefix} || n, 'hooks', 'owner', 'SUCCESS', 'workflow-runs', 1, '\\x7b7d'::bytea, now() - ${age}::interval
    from generate_series(1, ${count}) as n`
  await sql`insert into run_logs (run_id, message) select id, 'line' from runs where id like ${prefix + '%'}`
}
await seed('expired-', EXPIRED, '40 days')
await seed('body-', 10, '5 days')
await seed('fresh-', 5, '1 hour')

// Both workers start their first pass within seconds.
const stack = await startStack(t, { database, workers: 2 })

/** `select count(*)::int as n …` of fixed test text. */
const count = async (query: string): Promise<number> => (await sql.unsafe<Array<{ n: number }>>(query))[0]!.n

t.test('two worker processes delete what is due, once, and nothing else', async (t) => {
  await waitFor(async () => await count("select count(*)::int as n from runs where id like 'expired-%'") === 0 ? true : undefined, { timeoutMs: 30_000, what: 'expired runs deleted' })
  await waitFor(async () => await count("select count(*)::int as n from runs where raw_body is not null and id like 'body-%'") === 0 ? true : undefined, { what: 'raw bodies cleared' })

  // A pass logs its report once it has ended, after its deletions are visible: wait for the lines to arrive.
  const reported = (): number => stack.workers
    .flatMap((worker) => worker.output().split('\n').filter((line) => line.includes('"retention pass"')).map((line) => JSON.parse(line) as { expiredRuns: number }))
    .reduce((sum, report) => sum + report.expiredRuns, 0)
  await waitFor(async () => reported() >= EXPIRED ? true : undefined, { what: 'the workers to report their retention passes' })
  t.equal(reported(), EXPIRED, 'every expired run deleted exactly once across the workers')
  t.equal(await count("select count(*)::int as n from run_logs where run_id like 'expired-%'"), 0, 'with their log lines')
  t.equal(await count("select count(*)::int as n from runs where id like 'body-%'"), 10, 'runs past the body retention kept')
  t.equal(await count("select count(*)::int as n from runs where id like 'fresh-%' and raw_body is not null"), 5, 'recent runs untouched')
  t.same(await sql`select run_count, success_count from workflows where id = 'hooks'`, [{ run_count: EXPIRED + 20, success_count: EXPIRED + 20 }], 'counters as they were')
})
