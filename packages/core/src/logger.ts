import { context, trace } from '@opentelemetry/api'
import { DrizzleQueryError } from 'drizzle-orm'
import { pino, stdSerializers, type DestinationStream, type Logger, type LoggerOptions } from 'pino'
import { logFieldsOf, tracingOn } from './observability/tracing.ts'

export type { Logger, LoggerOptions }

/** Paths pino blanks out wherever they appear in a log line. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-hub-signature-256"]',
  'headers.authorization',
  '*.password',
  '*.currentPassword',
  '*.newPassword',
  '*.accessToken',
  '*.token',
  'password',
  'accessToken',
  'token'
]

/**
 * Error properties that hold a statement's values: postgres.js `parameters` and `args`
 * (enumerable in its debug mode), Drizzle's `params`, and Postgres' `detail`
 * (`Failing row contains (…)`, `Key (email)=(…)`), `where` (`JSON data, line 1: …`) and
 * `internal_query`; webhook headers, payloads and tokens are such values. Also Node's
 * `rawPacket` on HTTP parser errors: the bytes received, Authorization header included.
 */
const VALUE_KEYS = new Set(['parameters', 'args', 'params', 'detail', 'where', 'internal_query', 'rawPacket'])

/** Causes and nested errors kept at most (a cause may be circular); deeper ones are left out. */
const MAX_ERROR_DEPTH = 10

const isErrorLike = (value: unknown): value is Error =>
  typeof value === 'object' && value !== null && typeof (value as Error).message === 'string'

/** A Postgres data exception (SQLSTATE class 22) quotes the value it refused: `invalid input syntax for type integer: "…"`. */
const isDataException = (error: Error): boolean => {
  const { code, severity } = error as { code?: unknown, severity?: unknown }
  return typeof severity === 'string' && typeof code === 'string' && code.startsWith('22')
}

function messageWithoutValues (error: Error): string {
  // Drizzle appends the values to the statement: `Failed query: <sql>\nparams: <values>`.
  if (error instanceof DrizzleQueryError) return error.message.replace(/\nparams: [\s\S]*$/, '')
  if (isDataException(error)) return error.message.replace(/"[\s\S]*"/, '"[redacted]"')
  return error.message
}

/**
 * A copy of `error` (same class, so the logged `type` stays) without the statement values a
 * database error carries, in its message and stack, its properties, its causes and nested errors.
 * The SQL text (placeholders, not values), the SQLSTATE code and constraint names stay.
 */
export function withoutValues (error: Error, depth = 0): Error {
  const clean = (value: unknown): unknown => {
    if (!isErrorLike(value)) return value
    return depth < MAX_ERROR_DEPTH ? withoutValues(value, depth + 1) : undefined
  }
  // Defined rather than assigned: a class may have a getter without setter for any of them.
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Error
  const define = (key: string, value: unknown, enumerable: boolean): void => {
    Object.defineProperty(copy, key, { value, enumerable, writable: true, configurable: true })
  }
  const source = error as unknown as Record<string, unknown>
  for (const key in error) {
    if (!VALUE_KEYS.has(key) && key !== 'cause' && key !== 'errors') define(key, clean(source[key]), true)
  }
  const message = messageWithoutValues(error)
  define('message', message, false)
  define('stack', error.stack?.replace(error.message, () => message), false)
  const enumerable = (key: string): boolean => Object.prototype.propertyIsEnumerable.call(error, key)
  if (source.cause !== undefined) define('cause', clean(source.cause), enumerable('cause'))
  if (Array.isArray(source.errors)) define('errors', source.errors.map(clean), enumerable('errors'))
  return copy
}

/**
 * pino's error serializer, which folds causes into the message and stack only; the fields of
 * each cause (a Postgres error's SQLSTATE `code`, `constraint_name`) are kept under `cause`.
 */
function serializeClean (error: Error): Record<string, unknown> {
  const serialized = stdSerializers.err(error) as unknown as Record<string, unknown>
  if (isErrorLike(error.cause)) {
    const { message, stack, ...fields } = serializeClean(error.cause)
    serialized.cause = fields
  }
  return serialized
}

/** pino's error serializer on a copy of the error without the statement values it carries. */
function serializeError (error: unknown): unknown {
  return isErrorLike(error) ? serializeClean(withoutValues(error)) : error
}

/**
 * While tracing is on, a line written inside a span names it (`trace_id`, `span_id`, as
 * OpenTelemetry's log data model calls them), so that a line leads to its trace and back (README,
 * Operations: Traces); off, this is one boolean read per line.
 */
function spanOfLine (): Record<string, string> {
  if (!tracingOn) return {}
  const span = trace.getSpan(context.active())
  return span === undefined ? {} : logFieldsOf(span)
}

export function loggerOptions (level: string, name: string): LoggerOptions {
  return {
    name,
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: serializeError },
    mixin: spanOfLine
  }
}

export function createLogger (level: string, name: string, destination?: DestinationStream): Logger {
  return destination === undefined ? pino(loggerOptions(level, name)) : pino(loggerOptions(level, name), destination)
}
