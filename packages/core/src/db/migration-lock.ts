import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { concurrentIndexOf, MIGRATIONS_FOLDER } from './migrate.ts'

/**
 * Migrations are append-only: once a migration is released, installations have applied it
 * and will never apply it again, so changing its file (or its journal timestamp, which
 * drizzle compares to decide what is new) would leave them on a schema the code does not
 * expect. The lock records each migration's tag, timestamp and content hash; a test
 * compares the folder with it.
 */
export const MIGRATION_LOCK_FILE = fileURLToPath(new URL('../../migrations.lock.json', import.meta.url))

interface LockedMigration { tag: string, when: number, sha256: string }

interface Journal { entries: Array<{ idx: number, tag: string, when: number }> }

/** The migrations of the folder in the order drizzle applies them, with their hashes. */
export function readMigrations (folder = MIGRATIONS_FOLDER): LockedMigration[] {
  const journal = JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as Journal
  return journal.entries.map(({ tag, when }) => ({
    tag,
    when,
    sha256: createHash('sha256').update(readFileSync(join(folder, `${tag}.sql`))).digest('hex')
  }))
}

export function readLock (file = MIGRATION_LOCK_FILE): LockedMigration[] {
  return (JSON.parse(readFileSync(file, 'utf8')) as { migrations: LockedMigration[] }).migrations
}

/**
 * What breaks the append-only rule, one line each: a locked migration that changed, moved
 * or disappeared, and a migration that is not locked yet (run `pnpm db:lock` after review).
 */
export function lockViolations (migrations: LockedMigration[], lock: LockedMigration[]): string[] {
  const problems: string[] = []
  lock.forEach((locked, index) => {
    const current = migrations[index]
    if (current === undefined || current.tag !== locked.tag) {
      problems.push(`released migration ${locked.tag} must stay number ${index} in the journal (found ${current?.tag ?? 'nothing'}): add a new migration instead`)
    } else if (current.sha256 !== locked.sha256) {
      problems.push(`released migration ${locked.tag}.sql was changed: restore it and add a new migration instead`)
    } else if (current.when !== locked.when) {
      problems.push(`released migration ${locked.tag} has a new journal timestamp: restore "when": ${locked.when}`)
    }
  })
  for (const migration of migrations.slice(lock.length)) {
    problems.push(`migration ${migration.tag} is not in migrations.lock.json: review it, then run \`pnpm db:lock\``)
  }
  return problems
}

/** The last migration released before indexes on existing tables had to be built concurrently; those before it stay as released. */
const LAST_BLOCKING_INDEX_MIGRATION = '0032_agent_memories'

const TABLE_CREATED = /create\s+table\s+(?:if\s+not\s+exists\s+)?"([^"]+)"/gi
const INDEX_BUILT = /create\s+(?:unique\s+)?index\s+(concurrently\s+)?(?:if\s+not\s+exists\s+)?"([^"]+)"\s+on\s+(?:only\s+)?"([^"]+)"/gi

/**
 * What would lock a table against writes while an upgrade runs, one line each (docs/operations.md,
 * Upgrades): an index on a table an earlier migration created, built in the migration's
 * transaction; and a migration that builds an index concurrently beside other statements, which
 * cannot share its transaction-less run.
 */
export function blockingIndexViolations (folder = MIGRATIONS_FOLDER, checkedAfter: string | null = LAST_BLOCKING_INDEX_MIGRATION): string[] {
  const problems: string[] = []
  const tables = new Set<string>()
  let checked = checkedAfter === null
  for (const { tag } of readMigrations(folder)) {
    const text = readFileSync(join(folder, `${tag}.sql`), 'utf8')
    const created = new Set([...text.matchAll(TABLE_CREATED)].map((match) => match[1]!))
    const indexes = [...text.matchAll(INDEX_BUILT)]
    if (checked) {
      const statements = text.split('--> statement-breakpoint').filter((statement) => statement.trim() !== '')
      const concurrent = statements.filter((statement) => concurrentIndexOf(statement) !== undefined)
      for (const [, concurrently, index, table] of indexes) {
        if (concurrently === undefined && tables.has(table!) && !created.has(table!)) {
          problems.push(`migration ${tag} builds index "${index!}" on "${table!}" in its transaction, which stops writes to the table meanwhile: build it with CREATE INDEX CONCURRENTLY IF NOT EXISTS in a migration of its own`)
        }
      }
      if (indexes.filter(([, concurrently]) => concurrently !== undefined).length > concurrent.length) {
        problems.push(`migration ${tag} builds an index concurrently without naming it as CREATE INDEX CONCURRENTLY IF NOT EXISTS "name", the form the migration runner applies outside a transaction`)
      }
      if (concurrent.length > 0 && concurrent.length < statements.length) {
        problems.push(`migration ${tag} builds an index concurrently beside other statements: give the concurrent builds a migration of their own`)
      }
    }
    for (const table of created) tables.add(table)
    if (tag === LAST_BLOCKING_INDEX_MIGRATION) checked = true
  }
  return problems
}
