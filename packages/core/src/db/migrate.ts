import { fileURLToPath } from 'node:url'
import { drizzle } from 'drizzle-orm/postgres-js'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
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

/**
 * Applies the migrations of `folder` (default: the released ones) that the database has not
 * seen. Processes that start together (a Job and init containers, several pods) migrate one
 * at a time: the session lock is held on the pool's single connection until it closes.
 */
export async function migrateDatabase (url: string, folder = MIGRATIONS_FOLDER): Promise<void> {
  const sql = postgres(url, quiet)
  try {
    await sql`select pg_advisory_lock(hashtext('switchboard:migrations'))`
    await migrate(drizzle(sql), { migrationsFolder: folder })
  } finally {
    await sql.end()
  }
}
