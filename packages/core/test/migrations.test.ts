import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect, createServer, type AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import t from 'tap'
import { BASE_DATABASE_URL, createTestDatabase, dropDatabase } from '@switchboard/testing/database'
import { spawnTied } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { Teardown } from '@switchboard/testing/teardown'
import { DatabaseSetupError, ensureDatabase, migrateDatabase } from '../src/db/migrate.ts'
import { blockingIndexViolations, lockViolations, readLock, readMigrations } from '../src/db/migration-lock.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

t.test('the migrations folder keeps every released migration as it was locked', async (t) => {
  const migrations = readMigrations()
  const lock = readLock()
  t.same(lockViolations(migrations, lock), [], 'released migrations are unchanged and every migration is locked')
  t.equal(lock[0]?.tag, '0000_init', 'the baseline is the first migration')
})

t.test('changing, renumbering or adding a migration without locking it is reported', async (t) => {
  const lock = [{ tag: '0000_init', when: 1, sha256: 'a' }, { tag: '0001_next', when: 2, sha256: 'b' }]
  t.same(lockViolations(lock, lock), [])
  t.match(lockViolations([{ ...lock[0]!, sha256: 'changed' }, lock[1]!], lock), [/released migration 0000_init\.sql was changed/])
  t.match(lockViolations([{ ...lock[0]!, when: 5 }, lock[1]!], lock), [/0000_init has a new journal timestamp/])
  t.match(lockViolations([lock[0]!], lock), [/0001_next must stay number 1 in the journal \(found nothing\)/])
  t.match(lockViolations([...lock, { tag: '0002_new', when: 3, sha256: 'c' }], lock), [/0002_new is not in migrations\.lock\.json/])
})

function urlFor (database: string, user?: string): string {
  const url = new URL(BASE_DATABASE_URL)
  url.pathname = `/${database}`
  if (user !== undefined) url.username = user
  return url.toString()
}

/** A login role without CREATEDB, as a production database user usually is. */
async function limitedRole (t: Teardown): Promise<string> {
  const role = `sbtest_limited_${randomBytes(4).toString('hex')}`
  const admin = postgres(BASE_DATABASE_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create role "${role}" login nocreatedb`)
  t.teardown(async () => {
    await admin.unsafe(`drop role if exists "${role}"`)
    await admin.end()
  })
  return role
}

t.test('an existing database is used without touching the maintenance database', async (t) => {
  const database = await createTestDatabase()
  t.teardown(database.drop)
  t.equal(await ensureDatabase(database.url, { maintenanceDatabase: 'no_such_maintenance_database' }), 'exists')
})

t.test('a missing database is created when the user may', async (t) => {
  const name = `switchboard_test_${randomBytes(6).toString('hex')}`
  t.teardown(() => dropDatabase(name))
  t.equal(await ensureDatabase(urlFor(name)), 'created')
  t.equal(await ensureDatabase(urlFor(name)), 'exists')
})

t.test('processes that migrate one database at the same time take turns', async (t) => {
  const name = `switchboard_test_${randomBytes(6).toString('hex')}`
  t.teardown(() => dropDatabase(name))
  await ensureDatabase(urlFor(name))
  const results = await Promise.allSettled([1, 2, 3].map(async () => { await migrateDatabase(urlFor(name)) }))
  t.same(results.map((result) => result.status), ['fulfilled', 'fulfilled', 'fulfilled'])
  const sql = postgres(urlFor(name), { max: 1, onnotice: () => {} })
  t.teardown(() => sql.end())
  const [applied] = await sql`select count(*)::int as count from drizzle.__drizzle_migrations`
  t.equal(applied!.count, readMigrations().length, 'each migration applied once')
})

t.test('a missing database the user may not create is one clear error', async (t) => {
  const role = await limitedRole(t)
  const name = `switchboard_test_${randomBytes(6).toString('hex')}`
  const err = await ensureDatabase(urlFor(name, role)).catch((err: unknown) => err)
  t.type(err, DatabaseSetupError)
  t.match((err as Error).message, new RegExp(`^Database "${name}" does not exist at 127\\.0\\.0\\.1:5432/${name} and ${role} may not create it: create it \\(owned by ${role}\\) and run the migration again$`))

  const unreachable = await ensureDatabase('postgres://someone:secret@127.0.0.1:1/switchboard').catch((err: unknown) => err)
  t.type(unreachable, DatabaseSetupError)
  t.match((unreachable as Error).message, /^Cannot connect to the database at 127\.0\.0\.1:1\/switchboard: /)
  t.notMatch((unreachable as Error).message, /secret/, 'the password is never printed')
})

/** `db:migrate` (the image's migrate command) as a process of its own. */
async function runMigrateCommand (env: NodeJS.ProcessEnv): Promise<{ code: number | null, output: string }> {
  const child = spawnTied(process.execPath, ['--conditions=@switchboard/source', '--import=tsx', 'packages/core/src/bin/migrate.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const [code] = await once(child, 'exit') as [number | null]
  return { code, output }
}

t.test('the migrate command migrates a database its user owns, and stops with one line when it cannot create one', async (t) => {
  const role = await limitedRole(t)
  const owned = `switchboard_test_${randomBytes(6).toString('hex')}`
  const admin = postgres(BASE_DATABASE_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${owned}" owner "${role}"`)
  await admin.end()
  t.teardown(() => dropDatabase(owned))

  const migrate = async (databaseUrl: string): Promise<{ code: number | null, output: string }> =>
    await runMigrateCommand({ ...process.env, NODE_ENV: 'production', DATABASE_URL: databaseUrl, JWT_SECRET: 'x'.repeat(40), ENCRYPTION_KEY: randomBytes(32).toString('base64'), ADMIN_PASSWORD: 'not-the-default', CHAT_APP_SECRET: 'app-secret' })

  const ok = await migrate(urlFor(owned, role))
  t.equal(ok.code, 0, ok.output)
  t.match(ok.output, /database migrated/)

  const missing = `switchboard_test_${randomBytes(6).toString('hex')}`
  const refused = await migrate(urlFor(missing, role))
  t.equal(refused.code, 1)
  const lines = refused.output.trim().split('\n')
  t.equal(lines.length, 1, 'one line')
  t.match(JSON.parse(lines[0]!), { level: 50, msg: `Database "${missing}" does not exist at 127.0.0.1:5432/${missing} and ${role} may not create it: create it (owned by ${role}) and run the migration again` })
})

t.test('DATABASE_MIGRATION_URL is what the migrate command uses, and then all it needs', async (t) => {
  const role = await limitedRole(t)
  const owned = `switchboard_test_${randomBytes(6).toString('hex')}`
  const admin = postgres(BASE_DATABASE_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${owned}" owner "${role}"`)
  await admin.end()
  t.teardown(() => dropDatabase(owned))

  // Production mode without a single secret, and a DATABASE_URL nothing answers: only the
  // migration URL is read (what the Kubernetes Job gives it: the Secret switchboard-migration).
  const env = { PATH: process.env.PATH, NODE_ENV: 'production', DATABASE_URL: 'postgres://app@127.0.0.1:1/nowhere' }
  const migrated = await runMigrateCommand({ ...env, DATABASE_MIGRATION_URL: urlFor(owned, role) })
  t.equal(migrated.code, 0, migrated.output)
  t.match(migrated.output, /database migrated/)
  const sql = postgres(urlFor(owned), { max: 1, onnotice: () => {} })
  t.teardown(() => sql.end())
  const [applied] = await sql`select count(*)::int as count from drizzle.__drizzle_migrations`
  t.equal(applied!.count, readMigrations().length, 'the migration URL\'s database was migrated')

  const refused = await runMigrateCommand({ ...env, DATABASE_MIGRATION_URL: 'mysql://root@127.0.0.1/switchboard' })
  t.not(refused.code, 0)
  t.match(refused.output, /DATABASE_MIGRATION_URL must be a postgres:\/\/ or postgresql:\/\/ URL/)
})

/** The ErrorResponse a PostgreSQL server sends while it starts up, whatever the client asked. */
function startingUpResponse (): Buffer {
  const fields = Buffer.from('SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0')
  const head = Buffer.alloc(5)
  head.write('E')
  head.writeInt32BE(fields.length + 4, 1)
  return Buffer.concat([head, fields])
}

t.test('a server that is still starting up (57P03) is waited for, not reported as unreachable', async (t) => {
  const real = new URL(BASE_DATABASE_URL)
  let startingUp = true
  let refused = 0
  // In front of the real server: answers "starting up" at first, then forwards.
  const proxy = createServer((client) => {
    if (startingUp) {
      refused += 1
      client.once('data', () => { client.end(startingUpResponse()) })
      return
    }
    const upstream = connect(Number(real.port || 5432), real.hostname)
    client.pipe(upstream).pipe(client)
    client.on('error', () => { upstream.destroy() })
    upstream.on('error', () => { client.destroy() })
  })
  proxy.listen(0, '127.0.0.1')
  await once(proxy, 'listening')
  t.teardown(() => { proxy.close() })
  setTimeout(() => { startingUp = false }, 1_500)

  const through = new URL(BASE_DATABASE_URL)
  through.port = String((proxy.address() as AddressInfo).port)
  t.equal(await ensureDatabase(through.toString()), 'exists')
  t.ok(refused > 1, `asked again after "starting up" (${refused} refusals)`)
})

/** An empty database of the test's own (a test database is migrated already), dropped after the test's connections closed. */
async function bareDatabase (t: Teardown): Promise<string> {
  const name = `switchboard_test_${randomBytes(6).toString('hex')}`
  await ensureDatabase(urlFor(name))
  t.teardown(() => dropDatabase(name))
  return urlFor(name)
}

/** A folder of migrations: one per statement, in order, journaled as drizzle-kit writes them. */
function migrationsFolder (t: Teardown, statements: string[]): string {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-migrations-'))
  t.teardown(() => { rmSync(folder, { recursive: true, force: true }) })
  mkdirSync(join(folder, 'meta'))
  const entries = statements.map((statement, idx) => {
    const tag = `${String(idx).padStart(4, '0')}_step`
    writeFileSync(join(folder, `${tag}.sql`), statement)
    return { idx, version: '7', when: idx + 1, tag, breakpoints: true }
  })
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify({ version: '7', dialect: 'postgresql', entries }))
  return folder
}

t.test('a transaction holding a table the migration changes: tries within lock_timeout, then one error naming it; nothing changed', async (t) => {
  const url = await bareDatabase(t)
  await migrateDatabase(url, migrationsFolder(t, ['create table lock_probe (id int)']))
  const blocker = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => blocker.end({ timeout: 1 }))
  const reserved = await blocker.reserve()
  const [{ pid }] = await reserved<Array<{ pid: number }>>`select pg_backend_pid() as pid`
  await reserved`begin`
  await reserved`select * from lock_probe`
  const both = migrationsFolder(t, ['create table lock_probe (id int)', 'alter table lock_probe add column c int'])

  const started = Date.now()
  const err = await migrateDatabase(url, both, { lockTimeoutMs: 200, attempts: 2, migrationWaitMs: 1_000 }).catch((err: unknown) => err)
  const tookMs = Date.now() - started
  t.type(err, DatabaseSetupError)
  t.match((err as Error).message, new RegExp(`^The migration could not take a table's lock within 200 ms in 2 tries \\(DATABASE_MIGRATION_LOCK_TIMEOUT_MS\\), and changed nothing: .*pid ${pid} \\(idle in transaction for \\d+ s: select \\* from lock_probe\\)`))
  t.ok(tookMs < 10_000, `gave up in ${tookMs} ms`)
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => sql.end())
  t.same(await sql`select column_name from information_schema.columns where table_name = 'lock_probe' order by column_name`, [{ column_name: 'id' }], 'the column was not added')

  await reserved`commit`
  reserved.release()
  await migrateDatabase(url, both, { lockTimeoutMs: 200, attempts: 2, migrationWaitMs: 1_000 })
  t.same((await sql`select column_name from information_schema.columns where table_name = 'lock_probe' order by column_name`).map((row) => row.column_name), ['c', 'id'], 'applied once the transaction ended')
})

t.test('another migration still running: waited for within its bound, then one error naming it', async (t) => {
  const url = await bareDatabase(t)
  const holder = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: 'the-other-migration' } })
  t.teardown(() => holder.end({ timeout: 1 }))
  await holder`select pg_advisory_lock(hashtext('switchboard:migrations'))`
  const [{ pid }] = await holder<Array<{ pid: number }>>`select pg_backend_pid() as pid`
  const started = Date.now()
  const err = await migrateDatabase(url, migrationsFolder(t, ['create table lock_probe (id int)']), { lockTimeoutMs: 200, attempts: 1, migrationWaitMs: 700 }).catch((err: unknown) => err)
  t.type(err, DatabaseSetupError)
  t.match((err as Error).message, new RegExp(`^Another migration is running \\(pid ${pid} \\(the-other-migration\\), connected \\d+ s ago\\): waited 1 s for it \\(DATABASE_MIGRATION_LOCK_WAIT_MS\\)`))
  t.ok(Date.now() - started >= 700, 'it waited its bound')
  await holder`select pg_advisory_unlock(hashtext('switchboard:migrations'))`
  await migrateDatabase(url, migrationsFolder(t, ['create table lock_probe (id int)']), { lockTimeoutMs: 200, attempts: 1, migrationWaitMs: 700 })
  t.pass('migrates once the other has ended')
})

t.test('an index built concurrently lets writes go on while it waits for older transactions, and is applied alone', async (t) => {
  const url = await bareDatabase(t)
  const table = ['create table "index_probe" (id int, k int)', 'insert into "index_probe" select n, n from generate_series(1, 1000) n']
  await migrateDatabase(url, migrationsFolder(t, [table.join(';\n--> statement-breakpoint\n')]))
  const older = postgres(url, { max: 1, onnotice: () => {} })
  const writer = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await Promise.all([older.end({ timeout: 1 }), writer.end({ timeout: 1 })]) })
  const reserved = await older.reserve()
  await reserved`begin`
  await reserved`insert into index_probe values (0, 0)`

  const folder = migrationsFolder(t, [table.join(';\n--> statement-breakpoint\n'), 'create index concurrently if not exists "index_probe_k" on "index_probe" (k)', 'create table "after_probe" (id int)'])
  let migrated = false
  const migration = migrateDatabase(url, folder, { lockTimeoutMs: 200, attempts: 1, migrationWaitMs: 20_000 }).then(() => { migrated = true })
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => sql.end())
  await waitFor(async () => (await sql`select 1 from pg_stat_activity where query ilike 'create index concurrently%' and wait_event_type = 'Lock'`).length === 1 ? true : undefined, { what: 'the build waiting for the older transaction' })
  await writer`insert into index_probe values (1001, 1001)`
  t.notOk(migrated, 'a write went through while the build waited for the older transaction')
  await reserved`commit`
  reserved.release()
  await migration
  t.same(await sql`select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'index_probe_k'`, [{ valid: true }])
  t.same(await sql`select count(*)::int as count from drizzle.__drizzle_migrations`, [{ count: 3 }], 'the migrations after it applied too')
})

t.test('a concurrent build that failed is recorded as not applied; the next run drops its invalid index and builds it again', async (t) => {
  const url = await bareDatabase(t)
  const folder = migrationsFolder(t, [
    'create table "unique_probe" (k int);\n--> statement-breakpoint\ninsert into "unique_probe" values (1), (1)',
    'create unique index concurrently if not exists "unique_probe_k" on "unique_probe" (k)'
  ])
  await t.rejects(migrateDatabase(url, folder), /could not create unique index "unique_probe_k"/)
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => sql.end())
  const validity = async () => sql`select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'unique_probe_k'`
  t.same(await validity(), [{ valid: false }], 'the failed build left an invalid index')
  t.same(await sql`select count(*)::int as count from drizzle.__drizzle_migrations`, [{ count: 1 }])
  await sql`delete from unique_probe where ctid = (select max(ctid) from unique_probe)`
  await migrateDatabase(url, folder)
  t.same(await validity(), [{ valid: true }], 'built again, valid')
  await t.rejects(sql`insert into unique_probe values (1)`, /duplicate key/, 'and it holds')
})

t.test('a migration that would stop a table\'s writes while it builds an index is refused before release', async (t) => {
  t.same(blockingIndexViolations(), [], 'the released migrations build none')
  const folder = migrationsFolder(t, [
    'create table "orders" (id int);\n--> statement-breakpoint\ncreate index "orders_id" on "orders" (id)',
    'create index "orders_late" on "orders" (id)',
    'create index concurrently if not exists "orders_c" on "orders" (id);\n--> statement-breakpoint\nalter table "orders" add column n int',
    'create index concurrently "orders_unnamed" on "orders" (id)'
  ])
  t.match(blockingIndexViolations(folder, null), [
    /^migration 0001_step builds index "orders_late" on "orders" in its transaction/,
    /^migration 0002_step builds an index concurrently beside other statements/,
    /^migration 0003_step builds an index concurrently without naming it as CREATE INDEX CONCURRENTLY IF NOT EXISTS/
  ])
  t.equal(blockingIndexViolations(folder, null).length, 3, 'an index on a table its own migration creates is fine')
})
