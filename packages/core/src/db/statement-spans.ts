import { context, SpanKind, trace, type Attributes } from '@opentelemetry/api'
import { withoutValues } from '../logger.ts'
import { endSpan, startSpan } from '../observability/tracing.ts'

/**
 * The attributes every span of a pool's statements carries (OpenTelemetry's database
 * conventions): the server and database they go to. Built once per pool, not per statement.
 */
export function serverAttributes ({ host, port, database }: { host: string[], port: number[], database: string }): Attributes {
  return { 'db.system.name': 'postgresql', 'db.namespace': database, 'server.address': host[0], 'server.port': port[0] }
}

/** The statement's first keyword: its operation (`select`, `insert`, `with`…). */
const OPERATION = /^\s*([a-z]+)/i
/**
 * The first table it names (quoted, as drizzle writes it, or not, as our SQL does), not a function
 * (`from unnest(…)`): a cheap guess for a join or a subquery, exact for one table.
 */
const TABLE = /\b(?:from|into|update)\s+"?([a-z_]\w*)"?(?![\w(])/i

/**
 * A CLIENT span for one statement, from its call to its answer (waiting for a connection
 * included), named `<OPERATION> <table>`. The text is drizzle's, with `$1`… for its values, which
 * never reach the span (README, Operations: Traces). Call only while `tracingOn`, inside a recording span.
 */
export function traceStatement (statement: PromiseLike<unknown>, text: string, server: Attributes): void {
  const operation = OPERATION.exec(text)?.[1]?.toUpperCase() ?? 'QUERY'
  // A WITH's first name is one of its own.
  const table = operation === 'WITH' ? undefined : TABLE.exec(text)?.[1]
  const span = startSpan(table === undefined ? operation : `${operation} ${table}`, {
    ...server,
    'db.operation.name': operation,
    ...(table !== undefined && { 'db.collection.name': table }),
    'db.query.text': text
  }, context.active(), SpanKind.CLIENT)
  // A data exception quotes the value it refused: the span keeps what the logs keep (logger.ts).
  statement.then(() => { span.end() }, (error: unknown) => { endSpan(span, error instanceof Error ? withoutValues(error) : error) })
}

/**
 * Runs a transaction under a `transaction` span (`run` enters its context around the
 * transaction's body), so that its statements' spans are its children; the span ends when the
 * transaction does, committed or rolled back with the error. INTERNAL, not CLIENT: its statements
 * are the calls to the server. Call only while `tracingOn`.
 */
export async function traceTransaction<T> (server: Attributes, run: (enter: <R>(body: () => R) => R) => Promise<T>): Promise<T> {
  const span = startSpan('transaction', server)
  const inside = trace.setSpan(context.active(), span)
  try {
    const result = await run((body) => context.with(inside, body))
    span.end()
    return result
  } catch (error) {
    endSpan(span, error instanceof Error ? withoutValues(error) : error)
    throw error
  }
}
