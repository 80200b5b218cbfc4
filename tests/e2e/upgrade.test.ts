/**
 * Upgrades keep data: a database made with the baseline migration holds data, then the
 * migrations of the journal are applied one at a time, as successive releases would
 * apply them; after each one the data is still there, and after the last one the real
 * api and worker use it (the admin made at the baseline logs in, its workflow runs).
 * With only the baseline released this checks the baseline itself; every later
 * migration is exercised here as soon as it is added.
 */
import { randomBytes } from 'node:crypto'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createId } from '@paralleldrive/cuid2'
import postgres from 'postgres'
import t from 'tap'
import { hashPassword } from '@switchboard/core/users'
import { ensureDatabase, migrateDatabase, MIGRATIONS_FOLDER } from '@switchboard/core/db'
import { BASE_DATABASE_URL, dropDatabase } from '@switchboard/testing/database'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { startStack } from '@switchboard/testing/processes'

const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: Array<{ tag: string }> }

/** The migrations folder as the release that shipped the first `count` migrations had it. */
function releaseFolder (count: number): string {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-release-'))
  mkdirSync(join(folder, 'meta'))
  const entries = journal.entries.slice(0, count)
  for (const { tag } of entries) copyFileSync(join(MIGRATIONS_FOLDER, `${tag}.sql`), join(folder, `${tag}.sql`))
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries }))
  return folder
}

const name = `switchboard_test_upgrade_${randomBytes(6).toString('hex')}`
const url = new URL(BASE_DATABASE_URL)
url.pathname = `/${name}`
const databaseUrl = url.toString()
await ensureDatabase(databaseUrl)
const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
let stackOwnsDatabase = false
t.teardown(async () => {
  await sql.end()
  if (!stackOwnsDatabase) await dropDatabase(name)
})

// Written with the baseline's columns only: the baseline never changes, so neither does this.
const baselinePassword = 'password-set-at-the-baseline'
const seed = { userId: createId(), workflowId: createId(), runId: createId() }

t.test('data written at the baseline survives every migration, applied one release at a time', async (t) => {
  for (let count = 1; count <= journal.entries.length; count++) {
    const folder = releaseFolder(count)
    await migrateDatabase(databaseUrl, folder)
    rmSync(folder, { recursive: true })
    const tag = journal.entries[count - 1]!.tag
    if (count === 1) {
      await sql`insert into users (id, email, password_hash, role) values (${seed.userId}, ${TEST_ADMIN.email}, ${await hashPassword(baselinePassword)}, 'admin')`
      await sql`insert into workflows (id, user_id, name, trigger_type, is_active, nodes, run_count, success_count, last_run_at)
        values (${seed.workflowId}, ${seed.userId}, 'made at the baseline', 'MANUAL', true,
          ${sql.json([{ id: 'greet', type: 'set', config: { values: { greeting: 'hello {{triggerData.name}}' } } }])}, 1, 1, now())`
      await sql`insert into runs (id, workflow_id, user_id, status, queue, trigger_data, result, started_at, completed_at, duration_ms)
        values (${seed.runId}, ${seed.workflowId}, ${seed.userId}, 'SUCCESS', 'workflow-runs', ${sql.json({ name: 'before' })},
          ${sql.json({ triggerData: { name: 'before' }, greet: { greeting: 'hello before' } })}, now(), now(), 3)`
      await sql`insert into run_logs (run_id, level, message) values (${seed.runId}, 'INFO', 'Run succeeded in 3ms')`
    }
    const [workflow] = await sql`select name, run_count, success_count from workflows where id = ${seed.workflowId}`
    const [run] = await sql`select status, result from runs where id = ${seed.runId}`
    const logs = await sql`select message from run_logs where run_id = ${seed.runId}`
    t.same(workflow, { name: 'made at the baseline', run_count: 1, success_count: 1 }, `workflow after ${tag}`)
    t.match(run, { status: 'SUCCESS', result: { greet: { greeting: 'hello before' } } }, `run after ${tag}`)
    t.same(logs.map((log) => log.message), ['Run succeeded in 3ms'], `run logs after ${tag}`)
  }
  const applied = await sql`select count(*)::int as count from drizzle.__drizzle_migrations`
  t.equal(applied[0]!.count, journal.entries.length, 'every migration of the journal is recorded as applied')
})

t.test('after the upgrade the api and the worker work with the old data', async (t) => {
  stackOwnsDatabase = true
  const stack = await startStack(t, { database: { name, url: databaseUrl, drop: async () => { await dropDatabase(name) } } })

  const refused = await stack.call('POST', '/api/auth/login', { body: TEST_ADMIN })
  t.equal(refused.status, 401, 'the admin is the one made at the baseline, not a new one')
  const login = await stack.call('POST', '/api/auth/login', { body: { email: TEST_ADMIN.email, password: baselinePassword } })
  t.equal(login.status, 200)
  const token = login.body.token as string

  const oldRun = await stack.call('GET', `/api/automation/runs/${seed.runId}`, { token })
  t.match(oldRun.body, { id: seed.runId, status: 'SUCCESS', result: { greet: { greeting: 'hello before' } }, logs: [{ message: 'Run succeeded in 3ms' }] })
  t.equal(oldRun.body.workflowVersion, 1, 'runs from before versions are on version 1')
  const versions = await stack.call('GET', `/api/automation/workflows/${seed.workflowId}/versions/1`, { token })
  t.match(versions.body, { version: 1, createdBy: null, nodes: [{ id: 'greet' }] }, 'version 1 is the definition as it stood')

  const fired = await stack.call('POST', `/api/automation/workflows/${seed.workflowId}/fire`, { token, body: { name: 'after' } })
  t.equal(fired.status, 202)
  const run = await stack.client.runReaching(token, fired.body.runId, ['SUCCESS', 'FAILED'])
  t.match(run, { status: 'SUCCESS', result: { greet: { greeting: 'hello after' } } })
  const workflow = await stack.call('GET', `/api/automation/workflows/${seed.workflowId}`, { token })
  t.match(workflow.body, { runCount: 2, successCount: 2 })
})
