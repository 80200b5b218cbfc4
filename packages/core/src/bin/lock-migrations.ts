/**
 * `pnpm db:lock`: appends the migrations that are not locked yet to migrations.lock.json.
 * It never rewrites a locked entry: a changed released migration stays an error, and it locks
 * no migration that would stop a table's writes while it builds an index.
 */
import { writeFileSync } from 'node:fs'
import { blockingIndexViolations, lockViolations, MIGRATION_LOCK_FILE, readLock, readMigrations } from '../db/migration-lock.ts'

const migrations = readMigrations()
const lock = readLock()
const broken = [...lockViolations(migrations.slice(0, lock.length), lock), ...blockingIndexViolations()]
if (broken.length > 0) {
  process.stderr.write(`${broken.join('\n')}\n`)
  process.exit(1)
}
const added = migrations.slice(lock.length)
writeFileSync(MIGRATION_LOCK_FILE, `${JSON.stringify({
  $comment: 'Released migrations: never edit, reorder or remove one; add a new migration (pnpm db:generate) and lock it (pnpm db:lock).',
  migrations
}, null, 2)}\n`)
process.stdout.write(added.length === 0 ? 'nothing new to lock\n' : `locked ${added.map((m) => m.tag).join(', ')}\n`)
