import t from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { createTestDatabase } from '@switchboard/testing/database'
import { createLogger } from '../src/logger.ts'
import { createRetention, type RetentionOptions } from '../src/retention/retention.ts'

const testDatabase = await createTestDatabase()
// Two workers: each its own pool, as two processes would have.
const first = createDatabase(testDatabase.url, { max: 2 })
const second = createDatabase(testDatabase.url, { max: 2 })
const sql = first.sql
t.teardown(async () => {
  await Promise.all([first.close(), second.close()])
  await testDatabase.drop()
})
const logger = createLogger('silent', 'retention-test')
const settings = { runDays: 30, rawBodyHours: 72 }

const [owner] = await sql<Array<{ id: string }>>`insert into users (id, email, password_hash) values ('owner', 'owner@example.com', 'x') returning id`

/** A workflow whose counters say it made `runCount` runs. */
async function workflow (id: string, runCount: number): Promise<string> {
  await sql`insert into workflows (id, user_id, name, trigger_type, is_active, run_count, success_count, failure_count)
    values (${id}, ${owner!.id}, ${id}, 'WEBHOOK', true, ${runCount}, ${runCount}, 0)`
  return id
}

/** `count` runs `ageHours` old, each with two log lines and a raw body. */
async function runs (workflowId: string, prefix: string, count: number, ageHours: number, status = 'SUCCESS'): Promise<void> {
  await sql`insert into runs (id, workflow_id, user_id, status, queue, workflow_version, raw_body, created_at)
    select ${prefix} || '-' || n, ${workflowId}, ${owner!.id}, ${status}, 'workflow-runs', 1, '\\x7b7d'::bytea,
      now() - make_interval(hours => ${ageHours}) - make_interval(secs => n)
    from generate_series(1, ${count}) as n`
  await sql`insert into run_logs (run_id, message) select id, 'line' from runs, generate_series(1, 2) where id like ${prefix + '-%'}`
}

const ids = async (prefix: string): Promise<number> => (await sql`select count(*)::int as n from runs where id like ${prefix + '-%'}`)[0]!.n
const logsOf = async (prefix: string): Promise<number> => (await sql`select count(*)::int as n from run_logs where run_id like ${prefix + '-%'}`)[0]!.n
const bodiesOf = async (prefix: string): Promise<number> => (await sql`select count(*)::int as n from runs where id like ${prefix + '-%'} and raw_body is not null`)[0]!.n
const counters = async () => await sql`select id, run_count, success_count, failure_count, last_run_at from workflows order by id`

t.test('two workers delete what is due, in batches, and nothing else', async (t) => {
  const hooks = await workflow('hooks', 1000)
  await runs(hooks, 'expired', 57, 31 * 24)
  await runs(hooks, 'expired-waiting', 3, 31 * 24, 'WAITING')
  await runs(hooks, 'stale-body', 23, 100)
  await runs(hooks, 'stale-body-running', 2, 100, 'RUNNING')
  await runs(hooks, 'fresh', 5, 1)
  await runs(hooks, 'fresh-failed', 4, 1, 'FAILED')
  await sql`insert into idempotency_keys (workflow_id, key, run_id, created_at) values (${hooks}, 'old', 'expired-1', now() - interval '31 days')`
  await sql`insert into conversations (id, phone_number_id, phone) values ('conversation', 'pn', '15550000000')`
  await sql`insert into messages (id, conversation_id, direction, content, created_at)
    values ('message', 'conversation', 'inbound', 'hello', now() - interval '400 days')`
  // Outbox events: dispatched and old (deleted), undispatched and old (kept: still to deliver), recent.
  await sql`insert into events (id, name, user_id, payload, created_at, dispatched_at)
    select 'event-' || n, 'workflow.run.failed', ${owner!.id}, '{}'::jsonb, now() - make_interval(days => case when n <= 12 then 31 else 1 end),
      case when n in (1, 2) then null else now() end
    from generate_series(1, 15) as n`
  // Subscription deliveries: finished and old (deleted, with their attempts), pending and old (kept: still to send), recent.
  await sql`insert into event_subscriptions (id, user_id, url, events, secret_encrypted) values ('subscription', ${owner!.id}, 'https://hooks.example.com/', '{workflow.run.failed}', 'x')`
  await sql`insert into event_deliveries (id, subscription_id, event_id, event_name, payload, status, created_at)
    select 'delivery-' || n, 'subscription', 'event-' || n, 'workflow.run.failed', '{}'::jsonb, case when n in (1, 2) then 'pending' else 'succeeded' end,
      now() - make_interval(days => case when n <= 12 then 31 else 1 end)
    from generate_series(1, 15) as n`
  await sql`insert into event_delivery_attempts (id, delivery_id, latency_ms) select 'attempt-' || id, id, 5 from event_deliveries`
  await sql`insert into agent_memories (workflow_id, node_id, key, turns, updated_at)
    select ${hooks}, 'agent', 'customer-' || n, '[]'::jsonb, now() - make_interval(days => case when n <= 9 then 31 else 1 end)
    from generate_series(1, 12) as n`
  const before = await counters()

  const options: Omit<RetentionOptions, 'db'> = { logger, ...settings, batchSize: 7 }
  const reports = await Promise.all([
    createRetention({ db: first.db, ...options }).purge(),
    createRetention({ db: second.db, ...options }).purge()
  ])

  t.equal(reports[0]!.expiredRuns + reports[1]!.expiredRuns, 57, 'each expired run deleted once, by one worker or the other')
  t.equal(await ids('expired'), 3, 'only the unfinished ones of that age are left')
  t.equal(await ids('expired-waiting'), 3, 'an unfinished run is never deleted')
  t.equal(await logsOf('expired'), 6, 'the deleted runs\' log lines went with them')
  t.equal((await sql`select count(*)::int as n from idempotency_keys`)[0]!.n, 0, 'and their keys')

  t.equal(reports[0]!.rawBodies + reports[1]!.rawBodies, 23)
  t.equal(await ids('stale-body'), 25, 'runs past the body retention are kept')
  t.equal(await bodiesOf('stale-body'), 2, 'only the unfinished ones keep their body')
  t.equal(await logsOf('stale-body'), 50)
  t.equal(await bodiesOf('fresh'), 9, 'recent runs keep their bodies')
  t.equal(await ids('fresh'), 9)

  t.same(await counters(), before, 'workflow counters are left as they were')
  t.equal((await sql`select count(*)::int as n from messages`)[0]!.n, 1, 'chat messages are kept')
  t.equal(reports[0]!.expiredEvents + reports[1]!.expiredEvents, 10, 'dispatched events past the run retention deleted once')
  t.same((await sql`select id from events order by id`).map((row) => row.id), ['event-1', 'event-13', 'event-14', 'event-15', 'event-2'], 'undispatched and recent events kept')

  t.equal(reports[0]!.expiredDeliveries + reports[1]!.expiredDeliveries, 10, 'finished deliveries past the run retention deleted once')
  t.same((await sql`select id from event_deliveries order by id`).map((row) => row.id), ['delivery-1', 'delivery-13', 'delivery-14', 'delivery-15', 'delivery-2'], 'pending and recent deliveries kept')
  t.equal((await sql`select count(*)::int as n from event_delivery_attempts`)[0]!.n, 5, 'the deleted deliveries\' attempts went with them')

  t.equal(reports[0]!.expiredAgentMemories + reports[1]!.expiredAgentMemories, 9, 'agent memories no run used for the run retention deleted once')
  t.same((await sql`select key from agent_memories order by key`).map((row) => row.key), ['customer-10', 'customer-11', 'customer-12'], 'recent memories kept')

  const again = await createRetention({ db: first.db, ...options }).purge()
  t.same(again, { rawBodies: 0, expiredRuns: 0, excessRuns: 0, expiredEvents: 0, expiredAudit: 0, expiredDeliveries: 0, expiredAgentMemories: 0 }, 'a second pass finds nothing')
})

t.test('a pass stops after maxBatches batches and the next one goes on', async (t) => {
  const hooks = await workflow('batched', 40)
  await runs(hooks, 'batched', 40, 40 * 24)
  const retention = createRetention({ db: first.db, logger, ...settings, batchSize: 10, maxBatches: 2 })
  t.equal((await retention.purge()).expiredRuns, 20)
  t.equal(await ids('batched'), 20)
  t.equal((await retention.purge()).expiredRuns, 20)
  t.equal(await ids('batched'), 0)
})

t.test('a run locked by someone else is skipped, not waited for', async (t) => {
  const hooks = await workflow('locked', 3)
  await runs(hooks, 'locked', 3, 40 * 24)
  const holder = createDatabase(testDatabase.url, { max: 1 })
  t.teardown(async () => { await holder.close() })
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  let locked!: () => void
  const isLocked = new Promise<void>((resolve) => { locked = resolve })
  const transaction = holder.sql.begin(async (tx) => {
    await tx`select id from runs where id = 'locked-1' for update`
    locked()
    await released
  })
  await isLocked
  const started = Date.now()
  const report = await createRetention({ db: first.db, logger, ...settings }).purge()
  t.ok(Date.now() - started < 5000, 'the pass did not wait for the lock')
  t.equal(report.expiredRuns, 2)
  release()
  await transaction
  t.equal((await createRetention({ db: second.db, logger, ...settings }).purge()).expiredRuns, 1, 'taken by the next pass')
})

t.test('RUN_RETENTION_MAX_PER_WORKFLOW keeps the newest finished runs of each workflow', async (t) => {
  // Alone: the runs earlier tests kept are not part of this count.
  await sql`delete from workflows`
  const busy = await workflow('busy', 12)
  const quiet = await workflow('quiet', 2)
  await runs(busy, 'busy', 10, 2)
  await runs(busy, 'busy-running', 2, 3, 'RUNNING')
  await runs(quiet, 'quiet', 2, 2)
  const options = { logger, ...settings, maxRunsPerWorkflow: 3, batchSize: 2 }
  const reports = await Promise.all([
    createRetention({ db: first.db, ...options }).purge(),
    createRetention({ db: second.db, ...options }).purge()
  ])
  t.equal(reports[0]!.excessRuns + reports[1]!.excessRuns, 7)
  // busy-1 is the newest (created now - 2h - 1s).
  t.same((await sql`select id from runs where workflow_id = ${busy} and status = 'SUCCESS' order by id`).map((row) => row.id), ['busy-1', 'busy-2', 'busy-3'])
  t.equal(await ids('busy-running'), 2, 'unfinished runs are kept and not counted')
  t.equal(await ids('quiet'), 2)
})

t.test('AUDIT_RETENTION_DAYS: audit rows older are deleted once, by two workers in batches; 0 keeps them all', async (t) => {
  await sql`insert into audit_log (id, created_at, actor_type, action)
    select 'audit-' || n, now() - make_interval(days => case when n <= 17 then 400 else 300 end), 'anonymous', 'auth.login_failed'
    from generate_series(1, 20) as n`
  const audited = async (): Promise<number> => (await sql`select count(*)::int as n from audit_log where id like 'audit-%'`)[0]!.n

  t.equal((await createRetention({ db: first.db, logger, ...settings, auditDays: 0 }).purge()).expiredAudit, 0, '0: kept for ever')
  t.equal((await createRetention({ db: first.db, logger, ...settings }).purge()).expiredAudit, 0, 'unset: kept for ever')
  t.equal(await audited(), 20)

  const options = { logger, ...settings, auditDays: 365, batchSize: 4 }
  const reports = await Promise.all([
    createRetention({ db: first.db, ...options }).purge(),
    createRetention({ db: second.db, ...options }).purge()
  ])
  t.equal(reports[0]!.expiredAudit + reports[1]!.expiredAudit, 17, 'each row past the retention deleted once')
  t.equal(await audited(), 3, 'the rows within it kept')
})
