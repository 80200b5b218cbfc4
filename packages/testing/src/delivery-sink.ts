import { once } from 'node:events'
import { createServer, type IncomingMessage } from 'node:http'
import type { Teardown } from './teardown.ts'

/** One request an http_request node made to the sink. */
export interface Delivery {
  /** The path, e.g. `/slow/hit/17`: tests put the node and the run's identity there with templates. */
  path: string
  /** The `Idempotency-Key` header, when the node sent one. */
  idempotencyKey: string | undefined
  /** The W3C `traceparent` header, when the node sent one. */
  traceparent: string | undefined
  receivedAt: number
  /** False while the sink holds the answer back, and for good when the caller went away first. */
  answered: boolean
  /** When the answer was sent. */
  answeredAt?: number
}

export interface DeliverySink {
  url: string
  deliveries: Delivery[]
  /** Deliveries received but not answered yet (the caller is waiting for them). */
  inFlight: () => number
  /** The most deliveries in flight at once so far. */
  maxInFlight: () => number
  /** Answers every request `held` holds, and from now on answers those paths like any other. */
  release: () => void
}

interface SinkOptions {
  /** How long to hold the answer to a request for `path` (default: answer at once). */
  delayMs?: (path: string) => number
  /** Requests for these paths are not answered until `release` (a receiver that hangs). */
  held?: (path: string) => boolean
}

/**
 * A local HTTP receiver for http_request nodes: records every request it gets and answers
 * 200 `{"ok":true}`, after `delayMs` when a test wants a slow receiver, or only once released
 * when it wants one that hangs (`held`). Counting what it
 * received per run and node is how fault tests see duplicated side effects.
 */
export async function startDeliverySink (t: Teardown, options: SinkOptions = {}): Promise<DeliverySink> {
  const deliveries: Delivery[] = []
  let inFlight = 0
  let maxInFlight = 0
  let holding = options.held !== undefined
  const heldAnswers: Array<() => void> = []
  const server = createServer((req: IncomingMessage, res) => {
    const delivery: Delivery = {
      path: req.url ?? '',
      idempotencyKey: typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined,
      traceparent: typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined,
      receivedAt: Date.now(),
      answered: false
    }
    deliveries.push(delivery)
    maxInFlight = Math.max(maxInFlight, ++inFlight)
    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      inFlight--
    }
    res.on('close', finish)
    req.resume()
    const answer = (): void => {
      if (res.destroyed) return
      delivery.answered = true
      delivery.answeredAt = Date.now()
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
      finish()
    }
    if (holding && options.held?.(delivery.path) === true) heldAnswers.push(answer)
    else setTimeout(answer, options.delayMs?.(delivery.path) ?? 0)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    deliveries,
    inFlight: () => inFlight,
    maxInFlight: () => maxInFlight,
    release: () => {
      holding = false
      for (const answer of heldAnswers.splice(0)) answer()
    }
  }
}
