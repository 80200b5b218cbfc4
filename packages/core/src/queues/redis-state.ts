import type { RedisConnection } from './connections.ts'
import { isStoreUnavailable } from '../errors.ts'
import type { Logger } from '../logger.ts'

/** The same error from the same source is logged at most once in this time. */
const REPEAT_INTERVAL_MS = 60_000
/** Distinct errors remembered for the repeat check; beyond, the oldest are forgotten. */
const MAX_REMEMBERED_ERRORS = 100

interface ErrorEmitter {
  on: (event: 'error', listener: (err: Error) => void) => unknown
}

export interface RedisStateLog {
  /**
   * Follows a connection: one line when Redis becomes unavailable (whichever watched
   * connection notices first), one when every watched connection is ready again; the
   * reconnection attempts in between are counted, not logged.
   */
  watch: (connection: RedisConnection, name: string) => void
  /**
   * Logs the `error` events of a BullMQ Queue or Worker (without a listener, BullMQ prints each
   * one as a stack trace): connection errors while Redis is known to be away are counted, other
   * errors (a script that failed, a lost lock) are logged once per minute per source and message.
   */
  listen: (emitter: ErrorEmitter, source: Record<string, string>) => void
  /** Called each time Redis is available again after having been lost for `downMs` (the reconciler runs a pass). */
  onAvailable: (listener: (downMs: number) => void) => void
  /** Shutdown: the connections closing now are not an outage. */
  close: () => void
}

const summary = (err: Error): { message: string, code?: string } => {
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' ? { message: err.message, code } : { message: err.message }
}

/** One structured line per change of Redis's availability, instead of a line (or a stack trace) per failed reconnection. */
export function createRedisStateLog (logger: Pick<Logger, 'info' | 'warn' | 'error'>): RedisStateLog {
  const down = new Set<string>()
  const listeners: Array<(downMs: number) => void> = []
  const lastLogged = new Map<string, { at: number, repeated: number }>()
  let downSince = 0
  let suppressed = 0
  let closing = false

  function lost (name: string, err?: Error): void {
    if (closing) return
    if (down.size > 0) {
      down.add(name)
      suppressed++
      return
    }
    down.add(name)
    downSince = Date.now()
    suppressed = 0
    logger.warn({ connection: name, ...(err !== undefined && { error: summary(err) }) }, 'redis unavailable')
  }

  function ready (name: string): void {
    if (closing || !down.delete(name) || down.size > 0) return
    const downMs = Date.now() - downSince
    logger.info({ connection: name, downMs, errorsSuppressed: suppressed }, 'redis available again')
    for (const listener of listeners) listener(downMs)
  }

  function logRateLimited (err: Error, source: Record<string, string>): void {
    const key = `${JSON.stringify(source)} ${err.message}`
    const previous = lastLogged.get(key)
    const now = Date.now()
    if (previous !== undefined && now - previous.at < REPEAT_INTERVAL_MS) {
      previous.repeated++
      return
    }
    if (lastLogged.size >= MAX_REMEMBERED_ERRORS) lastLogged.delete(lastLogged.keys().next().value!)
    lastLogged.set(key, { at: now, repeated: 0 })
    logger.error({ ...source, err, repeated: previous?.repeated ?? 0 }, 'queue error')
  }

  return {
    watch (connection, name) {
      connection.on('error', (err: Error) => { lost(name, err) })
      connection.on('close', () => { lost(name) })
      connection.on('ready', () => { ready(name) })
    },
    listen (emitter, source) {
      emitter.on('error', (err) => {
        if (closing) return
        if (down.size > 0 && isStoreUnavailable(err)) {
          suppressed++
          return
        }
        logRateLimited(err, source)
      })
    },
    onAvailable (listener) {
      listeners.push(listener)
    },
    close () {
      closing = true
    }
  }
}
