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
  /** A connection attempt gives up after this (postgres.js waits 30 s). @defaultValue 2000 */
  connectTimeoutMs?: number
  /** An unused connection is closed after this, so that none goes stale behind a failover. @defaultValue 60 */
  idleTimeoutSeconds?: number
  /**
   * When set, the server ends any statement of these connections running longer, and any
   * transaction left idle this long (statement_timeout, idle_in_transaction_session_timeout).
   */
  statementTimeoutMs?: number
}

/**
 * postgres.js waits (0.5–1) × min(3^failures / 100, 20) seconds before it tries a failed
 * connection again, so after an outage of a minute it would keep refusing work for up to 20 s
 * once the server is back. A second at most: the server is retried soon after it returns.
 */
const MAX_RECONNECT_DELAY_SECONDS = 1
const reconnectDelay = (failures: number): number => (0.5 + Math.random() / 2) * Math.min(3 ** failures / 100, MAX_RECONNECT_DELAY_SECONDS)

export function createDatabase (url: string, options: DatabaseOptions = {}): Database {
  const timeouts = options.statementTimeoutMs === undefined
    ? {}
    : { statement_timeout: options.statementTimeoutMs, idle_in_transaction_session_timeout: options.statementTimeoutMs }
  const sql = postgres(url, {
    max: options.max ?? 10,
    connect_timeout: (options.connectTimeoutMs ?? 2000) / 1000,
    idle_timeout: options.idleTimeoutSeconds ?? 60,
    backoff: reconnectDelay,
    onnotice: () => {},
    connection: { application_name: 'switchboard', ...timeouts }
  })
  const db = drizzle(sql, { schema })
  return { db, sql, close: async () => { await sql.end({ timeout: 5 }) } }
}
