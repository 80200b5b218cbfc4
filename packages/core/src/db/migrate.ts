import { fileURLToPath } from 'node:url'
import { readMigrationFiles, type MigrationMeta } from 'drizzle-orm/migrator'
import postgres from 'postgres'

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url))

/** A database that cannot be reached or created: the message is the one line an operator needs. */
export class DatabaseSetupError extends Error {
  override name = 'DatabaseSetupError'
}

const quiet = { max: 1, onnotice: () => {}, connect_timeout: 10 }

function codeOf (err: unknown): string | undefined {
  return (err as { code?: string }).code
}

/** Where a URL points, without its credentials, for messages. */
function describe (url: URL): string {
  return `${url.hostname}:${url.port || 5432}${url.pathname}`
}

/** How long a server that says it is starting up (57P03) is waited for: a fresh server's first checkpoint, a restart's recovery. */
const STARTING_UP_WAIT_MS = 60_000

async function databaseExists (url: URL): Promise<boolean> {
  const deadline = Date.now() + STARTING_UP_WAIT_MS
  for (;;) {
    const sql = postgres(url.toString(), quiet)
    try {
      await sql`select 1`
      return true
    } catch (err) {
      // 3D000: the server answered, and the database is not there.
      if (codeOf(err) === '3D000') return false
      // 57P03: the server listens but does not take connections yet ("the database system is starting up").
      if (codeOf(err) === '57P03' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250))
        continue
      }
      throw new DatabaseSetupError(`Cannot connect to the database at ${describe(url)}: ${(err as Error).message}`, { cause: err })
    } finally {
      await sql.end()
    }
  }
}

/**
 * Creates the database named in the URL when it does not exist yet (first start on a
 * developer machine). The target is tried first, so an installation whose user may
 * connect only to its own database (production) never touches the maintenance database;
 * only a missing database is created through it, when the user is allowed to.
 */
export async function ensureDatabase (url: string, { maintenanceDatabase = 'postgres' } = {}): Promise<'exists' | 'created'> {
  const target = new URL(url)
  if (await databaseExists(target)) return 'exists'
  const name = decodeURIComponent(target.pathname.slice(1))
  const user = decodeURIComponent(target.username) || 'the configured user'
  const maintenance = new URL(url)
  maintenance.pathname = `/${maintenanceDatabase}`
  const sql = postgres(maintenance.toString(), quiet)
  try {
    await sql.unsafe(`create database "${name.replaceAll('"', '""')}"`)
    return 'created'
  } catch (err) {
    // 42P04: created meanwhile by another process.
    if (codeOf(err) === '42P04') return 'exists'
    // 42501: insufficient privilege (no CREATEDB).
    if (codeOf(err) === '42501') {
      throw new DatabaseSetupError(`Database "${name}" does not exist at ${describe(target)} and ${user} may not create it: create it (owned by ${user}) and run the migration again`, { cause: err })
    }
    throw new DatabaseSetupError(`Database "${name}" does not exist at ${describe(target)} and could not be created through the "${maintenanceDatabase}" database: ${(err as Error).message}`, { cause: err })
  } finally {
    await sql.end()
  }
}

/** How long a migration waits for locks (README, Deploy: Upgrades): DATABASE_MIGRATION_LOCK_TIMEOUT_MS and DATABASE_MIGRATION_LOCK_WAIT_MS. */
export interface MigrationWaits {
  /** A statement's wait for a table lock (`lock_timeout`): past it the migration is rolled back and tried again, so that traffic queued behind it is not blocked for long. */
  lockTimeoutMs: number
  /** Tries of the whole migration when a lock was not had in time, a second apart, doubling. */
  attempts: number
  /** How long another process's migration is waited for (the advisory lock), before giving up with who holds it. */
  migrationWaitMs: number
}

export const DEFAULT_MIGRATION_WAITS: MigrationWaits = { lockTimeoutMs: 5_000, attempts: 5, migrationWaitMs: 600_000 }

/** The advisory lock migrations take turns with. */
const MIGRATION_LOCK_KEY = 'switchboard:migrations'

/** The other sessions of the database in an open transaction, oldest first, as a message names them. */
async function openTransactions (sql: postgres.Sql): Promise<string> {
  const rows = await sql<Array<{ pid: number, state: string, seconds: number, query: string }>>`
    select pid, state, extract(epoch from now() - xact_start)::int as seconds, left(query, 120) as query
    from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and xact_start is not null
    order by xact_start limit 3`
  if (rows.length === 0) return 'no transaction is open now'
  return rows.map((row) => `pid ${row.pid} (${row.state} for ${row.seconds} s: ${row.query})`).join(', ')
}

/** Waits for the migration lock at most `waitMs`, then names the session holding it. */
async function takeMigrationLock (sql: postgres.Sql, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs
  for (let pause = 100; ; pause = Math.min(pause * 2, 2_000)) {
    const [row] = await sql<Array<{ taken: boolean }>>`select pg_try_advisory_lock(hashtext(${MIGRATION_LOCK_KEY})) as taken`
    if (row?.taken === true) return
    if (Date.now() >= deadline) {
      const [holder] = await sql<Array<{ pid: number, application: string, seconds: number }>>`
        select a.pid, a.application_name as application, extract(epoch from now() - a.backend_start)::int as seconds
        from pg_locks l join pg_stat_activity a on a.pid = l.pid
        where l.locktype = 'advisory' and l.granted and l.objsubid = 1
          and ((l.classid::bigint << 32) | l.objid::bigint) = hashtext(${MIGRATION_LOCK_KEY})::bigint`
      const who = holder === undefined ? 'another process' : `pid ${holder.pid}${holder.application === '' ? '' : ` (${holder.application})`}, connected ${holder.seconds} s ago`
      throw new DatabaseSetupError(`Another migration is running (${who}): waited ${Math.round(waitMs / 1000)} s for it (DATABASE_MIGRATION_LOCK_WAIT_MS); run this one again once it ended`)
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, Math.max(0, deadline - Date.now()))))
  }
}

/**
 * An index built without blocking the table's writes (docs/operations.md, Upgrades). PostgreSQL
 * refuses it inside a transaction, so a migration holding one holds nothing else
 * (`packages/core/test/migrations.test.ts` checks the released ones) and is applied on its own.
 */
const CONCURRENT_INDEX = /^\s*create\s+(?:unique\s+)?index\s+concurrently\s+if\s+not\s+exists\s+"([^"]+)"/i

/** The index a statement builds concurrently, or undefined for any other statement. */
export function concurrentIndexOf (statement: string): string | undefined {
  return CONCURRENT_INDEX.exec(statement)?.[1]
}

const isConcurrent = (migration: MigrationMeta): boolean => migration.sql.some((statement) => concurrentIndexOf(statement) !== undefined)

/** drizzle's own record of applied migrations, kept as its migrator keeps it, so either may read it. */
async function appliedUntil (sql: postgres.Sql): Promise<number> {
  await sql`create schema if not exists drizzle`
  await sql`create table if not exists drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`
  const [last] = await sql<Array<{ createdAt: string }>>`select created_at as "createdAt" from drizzle.__drizzle_migrations order by created_at desc limit 1`
  return last === undefined ? -Infinity : Number(last.createdAt)
}

async function record (sql: postgres.Sql | postgres.TransactionSql, migration: MigrationMeta): Promise<void> {
  await sql`insert into drizzle.__drizzle_migrations (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`
}

/**
 * Builds a migration's indexes concurrently, each waiting up to `waitMs` for the transactions
 * that started before it (the build blocks no write meanwhile, so it may wait as long as another
 * migration is waited for). A build that failed earlier left its index INVALID: it is dropped and
 * built again. The migration is recorded once every index is valid, so a failure is retried by
 * the next migration run.
 */
async function buildConcurrently (sql: postgres.Sql, migration: MigrationMeta, waitMs: number, lockTimeoutMs: number): Promise<void> {
  await sql`select set_config('lock_timeout', ${`${waitMs}ms`}, false)`
  try {
    for (const statement of migration.sql) {
      const index = concurrentIndexOf(statement)
      const [existing] = await sql<Array<{ valid: boolean }>>`
        select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
        where c.relname = ${index ?? ''} and c.relnamespace = current_schema()::regnamespace`
      if (existing?.valid === false) await sql.unsafe(`drop index concurrently if exists "${index!}"`)
      await sql.unsafe(statement).catch(async (err: unknown) => {
        if (codeOf(err) !== '55P03') throw err
        throw new DatabaseSetupError(`The index "${index!}" could not be built: transactions older than its build still ran after ${Math.round(waitMs / 1000)} s (DATABASE_MIGRATION_LOCK_WAIT_MS). Open transactions: ${await openTransactions(sql)}. The migrations before it are applied; run the migration again once they ended`, { cause: err })
      })
    }
    await record(sql, migration)
  } finally {
    await sql`select set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, false)`
  }
}

/**
 * Applies the migrations not applied yet, in order: consecutive ones in one transaction (all or
 * none of them), one that builds its indexes concurrently on its own, outside any.
 */
async function applyMigrations (sql: postgres.Sql, migrations: MigrationMeta[], waits: MigrationWaits, applied: { count: number }): Promise<void> {
  const after = await appliedUntil(sql)
  const pending = migrations.filter((migration) => migration.folderMillis > after)
  while (pending.length > 0) {
    if (isConcurrent(pending[0]!)) {
      await buildConcurrently(sql, pending.shift()!, waits.migrationWaitMs, waits.lockTimeoutMs)
      applied.count++
      continue
    }
    const end = pending.findIndex(isConcurrent)
    const batch = pending.splice(0, end === -1 ? pending.length : end)
    await sql.begin(async (tx) => {
      for (const migration of batch) {
        for (const statement of migration.sql) await tx.unsafe(statement)
        await record(tx, migration)
      }
    })
    applied.count += batch.length
  }
}

/**
 * Applies the migrations of `folder` (default: the released ones) that the database has not
 * seen. Processes that start together (a Job and init containers, several pods) migrate one
 * at a time: the session lock is held on the pool's single connection until it closes, and is
 * waited for at most `migrationWaitMs`. Each statement waits for a table lock at most
 * `lockTimeoutMs` (`lock_timeout`): a long transaction holding a table the migration changes
 * makes it roll back and try again, rather than queue every query of that table behind it; the
 * last failure names the open transactions.
 */
export async function migrateDatabase (url: string, folder = MIGRATIONS_FOLDER, waits: MigrationWaits = DEFAULT_MIGRATION_WAITS): Promise<void> {
  const migrations = readMigrationFiles({ migrationsFolder: folder })
  const sql = postgres(url, { ...quiet, connection: { lock_timeout: waits.lockTimeoutMs, application_name: 'switchboard-migrate' } })
  try {
    await takeMigrationLock(sql, waits.migrationWaitMs)
    const applied = { count: 0 }
    for (let attempt = 1; ; attempt++) {
      try {
        await applyMigrations(sql, migrations, waits, applied)
        return
      } catch (err) {
        // 55P03: lock_not_available, the lock_timeout passed.
        if (codeOf(err) !== '55P03') throw err
        if (attempt >= waits.attempts) {
          throw new DatabaseSetupError(`The migration could not take a table's lock within ${waits.lockTimeoutMs} ms in ${waits.attempts} tries (DATABASE_MIGRATION_LOCK_TIMEOUT_MS), and changed nothing${applied.count === 0 ? '' : ` after the ${applied.count} migrations it applied`}: a transaction holds a table it changes. Open transactions: ${await openTransactions(sql)}. End them, or migrate at a quieter time`, { cause: err })
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000 * 2 ** (attempt - 1)))
      }
    }
  } finally {
    await sql.end()
  }
}
