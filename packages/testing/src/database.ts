import { createHash, randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { MIGRATIONS_FOLDER, migrateDatabase } from '@switchboard/core/db'

export const BASE_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

function urlFor (database: string): string {
  const url = new URL(BASE_DATABASE_URL)
  url.pathname = `/${database}`
  return url.toString()
}

/** The template's name changes with the migrations, so a stale template is never used. */
function templateName (): string {
  const hash = createHash('sha256')
  for (const file of readdirSync(MIGRATIONS_FOLDER, { recursive: true }).map(String).sort()) {
    if (file.endsWith('.sql') || file.endsWith('.json')) hash.update(file).update(readFileSync(join(MIGRATIONS_FOLDER, file)))
  }
  return `switchboard_tpl_${hash.digest('hex').slice(0, 12)}`
}

async function ensureTemplate (admin: postgres.Sql, name: string): Promise<void> {
  // Test files start in parallel: one of them migrates the template, the others wait on the lock.
  // `admin` holds a single connection, so the session lock and unlock share it.
  await admin`select pg_advisory_lock(hashtext(${name}))`
  try {
    const [exists] = await admin`select 1 from pg_database where datname = ${name}`
    if (exists !== undefined) return
    const building = `${name}_building`
    await admin.unsafe(`drop database if exists "${building}" with (force)`)
    await admin.unsafe(`create database "${building}"`)
    await migrateDatabase(urlFor(building))
    await admin.unsafe(`alter database "${building}" rename to "${name}"`)
  } finally {
    await admin`select pg_advisory_unlock(hashtext(${name}))`
  }
}

export interface TestDatabase {
  url: string
  name: string
  drop: () => Promise<void>
}

/** A fresh database for one test file, cloned from a migrated template. */
export async function createTestDatabase (): Promise<TestDatabase> {
  const admin = postgres(BASE_DATABASE_URL, { max: 1, onnotice: () => {} })
  try {
    const template = templateName()
    await ensureTemplate(admin, template)
    const name = `switchboard_test_${randomBytes(6).toString('hex')}`
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.unsafe(`create database "${name}" template "${template}"`)
        break
      } catch (err) {
        // 55006: the template is briefly in use by a concurrent clone.
        if ((err as { code?: string }).code !== '55006' || attempt > 20) throw err
        await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200))
      }
    }
    return {
      url: urlFor(name),
      name,
      drop: async () => { await dropDatabase(name) }
    }
  } finally {
    await admin.end()
  }
}

/** Drops a database of the test server, closing its connections first. */
export async function dropDatabase (name: string): Promise<void> {
  const sql = postgres(BASE_DATABASE_URL, { max: 1, onnotice: () => {} })
  try {
    await sql.unsafe(`drop database if exists "${name.replaceAll('"', '""')}" with (force)`)
  } finally {
    await sql.end()
  }
}

export function uniqueQueuePrefix (): string {
  return `sbtest-${randomBytes(6).toString('hex')}`
}
