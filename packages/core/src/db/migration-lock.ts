import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { MIGRATIONS_FOLDER } from './migrate.ts'

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
