import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import postgres, { type Sql } from 'postgres'
import * as schema from './schema/index.ts'

export type Db = PostgresJsDatabase<typeof schema>
/** A database handle or an open transaction: repositories accept either. */
export type DbOrTx = Db | Parameters<Parameters<Db['transaction']>[0]>[0]

export interface Database {
  db: Db
  sql: Sql
  close: () => Promise<void>
}

interface DatabaseOptions {
  max?: number
}

export function createDatabase (url: string, options: DatabaseOptions = {}): Database {
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connection: { application_name: 'switchboard' }
  })
  const db = drizzle(sql, { schema })
  return { db, sql, close: async () => { await sql.end({ timeout: 5 }) } }
}
