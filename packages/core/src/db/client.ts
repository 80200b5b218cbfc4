import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import postgres, { type Sql } from 'postgres'
import type { DatabasePoolMode } from '../config.ts'
import { insideRecordingSpan, tracingOn } from '../observability/tracing.ts'
import * as schema from './schema/index.ts'
import { serverAttributes, traceStatement, traceTransaction } from './statement-spans.ts'

export type Db = PostgresJsDatabase<typeof schema>
/** A database handle or an open transaction: repositories accept either. */
export type DbOrTx = Db | Parameters<Parameters<Db['transaction']>[0]>[0]

export interface Database {
  db: Db
  sql: Sql
  /**
   * Where LISTENs go: the client of `listenUrl` when given, else `sql`. postgres.js listens on one
   * connection of its own per client, whatever the channels.
   */
  listener: Sql
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
   * Sent as startup parameters in session mode only: a transaction-mode pooler refuses them or
   * ignores them, and the limits then come from the role (docs/operations.md, PgBouncer).
   */
  statementTimeoutMs?: number
  /** @defaultValue 'session' */
  poolMode?: DatabasePoolMode
  /** A server or a session-mode pool for LISTEN (DATABASE_LISTEN_URL), which hears nothing through a transaction-mode pooler. */
  listenUrl?: string
}

/**
 * postgres.js waits (0.5–1) × min(3^failures / 100, 20) seconds before it tries a failed
 * connection again, so after an outage of a minute it would keep refusing work for up to 20 s
 * once the server is back. A second at most: the server is retried soon after it returns.
 */
const MAX_RECONNECT_DELAY_SECONDS = 1
const reconnectDelay = (failures: number): number => (0.5 + Math.random() / 2) * Math.min(3 ** failures / 100, MAX_RECONNECT_DELAY_SECONDS)

/** Statement texts a process prepares at most: the code writes a bounded number of them, this bounds what it cannot foresee. */
const MAX_PREPARED_TEXTS = 500
/** Distinct texts remembered while counting how often each runs. */
const MAX_COUNTED_TEXTS = 5000

type TransactionBody = (handle: object) => unknown

/**
 * The client drizzle queries through: postgres.js's, with two changes.
 *
 * drizzle runs every query through postgres.js's `unsafe()`, which does not prepare
 * (drizzle-orm#6096), and an unprepared query with parameters costs two round trips: Parse and
 * Describe, then Bind and Execute. A text seen a second time is prepared instead (each
 * connection then describes it once and runs it in one round trip). Texts are written by the
 * code, never by a caller (values are parameters), so few of them repeat; MAX_PREPARED_TEXTS
 * bounds the statements each server connection may keep, whatever a list's length does to a text.
 * Behind a transaction-mode pooler (`prepareRepeated` false) nothing is prepared.
 *
 * While tracing is on, each statement made inside a recording span is a span, and each such
 * transaction one its statements' spans are children of (statement-spans.ts); while it is off,
 * each call checks one boolean more.
 */
function clientForDrizzle (client: Sql, prepareRepeated: boolean): Sql {
  const seen = new Set<string>()
  const prepared = new Set<string>()
  const shouldPrepare = (text: string): boolean => {
    if (!prepareRepeated) return false
    if (prepared.has(text)) return true
    if (!seen.has(text)) {
      if (seen.size >= MAX_COUNTED_TEXTS) seen.clear()
      seen.add(text)
      return false
    }
    if (prepared.size >= MAX_PREPARED_TEXTS) return false
    prepared.add(text)
    return true
  }
  const server = serverAttributes(client.options)
  const wrap = <T extends object>(target: T): T => new Proxy(target, {
    get (object, property, receiver) {
      const value = Reflect.get(object, property, receiver) as unknown
      if (typeof value !== 'function') return value
      if (property === 'unsafe') {
        return (text: string, params?: unknown[], options: { prepare?: boolean } = {}) => {
          const statement = value.call(object, text, params, { ...options, prepare: options.prepare === true || shouldPrepare(text) }) as PromiseLike<unknown>
          if (tracingOn && insideRecordingSpan()) traceStatement(statement, text, server)
          return statement
        }
      }
      // A transaction's (and a savepoint's) own handle runs drizzle's queries inside it.
      if (property === 'begin' || property === 'savepoint') {
        return (...args: unknown[]) => {
          if (!tracingOn || property === 'savepoint' || !insideRecordingSpan()) {
            return value.apply(object, args.map((arg) => typeof arg === 'function' ? (handle: object) => (arg as TransactionBody)(wrap(handle)) : arg))
          }
          return traceTransaction(server, async (enter) => await value.apply(object, args.map((arg) => typeof arg === 'function'
            ? (handle: object) => enter(() => (arg as TransactionBody)(wrap(handle)))
            : arg)))
        }
      }
      return value
    }
  })
  return wrap(client)
}

export function createDatabase (url: string, options: DatabaseOptions = {}): Database {
  // Behind a transaction-mode pooler a statement prepared in one transaction is missing from the
  // next one's server connection, and session settings sent at connect are refused: neither is used.
  const transactionMode = options.poolMode === 'transaction'
  const timeouts = options.statementTimeoutMs === undefined || transactionMode
    ? {}
    : { statement_timeout: options.statementTimeoutMs, idle_in_transaction_session_timeout: options.statementTimeoutMs }
  const common = {
    connect_timeout: (options.connectTimeoutMs ?? 2000) / 1000,
    backoff: reconnectDelay,
    onnotice: () => {}
  }
  const sql = postgres(url, {
    ...common,
    max: options.max ?? 10,
    idle_timeout: options.idleTimeoutSeconds ?? 60,
    prepare: !transactionMode,
    connection: { application_name: 'switchboard', ...timeouts }
  })
  const listener = options.listenUrl === undefined ? sql : postgres(options.listenUrl, { ...common, max: 1, connection: { application_name: 'switchboard' } })
  const db = drizzle(clientForDrizzle(sql, !transactionMode), { schema })
  return {
    db,
    sql,
    listener,
    close: async () => { await Promise.all([sql.end({ timeout: 5 }), ...(listener === sql ? [] : [listener.end({ timeout: 5 })])]) }
  }
}
