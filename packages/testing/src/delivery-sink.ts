import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http'
import type { Teardown } from './teardown.ts'

/** One request the sink received: an http_request node's call, a subscription's delivery. */
export interface Delivery {
  method: string
  /** The path, e.g. `/slow/hit/17`: tests put the node and the run's identity there with templates. */
  path: string
  headers: IncomingHttpHeaders
  /** The body as sent (UTF-8), empty when there was none. */
  body: string
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

/**
 * How the sink answers one request. Without a body, a 2xx answers `{"ok":true}` as JSON and any
 * other status nothing: `{ status: 503 }` is a bare failure, `{ status: 302, headers: { location } }`
 * a redirect.
 */
export interface SinkAnswer {
  /** @defaultValue 200 */
  status?: number
  headers?: OutgoingHttpHeaders
  body?: string | Buffer
}

interface SinkOptions {
  /**
   * The answer to each request, asked once its body is in; a promise holds the answer until it
   * settles (a receiver that does something first, or one the test releases itself).
   */
  answer?: (delivery: Delivery) => SinkAnswer | Promise<SinkAnswer>
  /** How long to hold the answer to a request for `path` (default: answer at once). */
  delayMs?: (path: string) => number
  /** Requests for these paths are not answered until `release` (a receiver that hangs). */
  held?: (path: string) => boolean
}

/**
 * A local HTTP receiver for what the system sends out (http_request nodes, subscriptions,
 * webhooks): records every request it gets with its headers and body and answers 200
 * `{"ok":true}`, or what `answer` says; after `delayMs` when a test wants a slow receiver, or
 * only once released when it wants one that hangs (`held`). Counting what it received per run
 * and node is how fault tests see duplicated side effects.
 */
export async function startDeliverySink (t: Teardown, options: SinkOptions = {}): Promise<DeliverySink> {
  const deliveries: Delivery[] = []
  let inFlight = 0
  let maxInFlight = 0
  let holding = options.held !== undefined
  const heldAnswers: Array<() => void> = []
  const server = createServer((req, res) => {
    const delivery: Delivery = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: '',
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
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => { chunks.push(chunk) })
    const answer = (): void => {
      Promise.resolve(options.answer?.(delivery) ?? {}).then(({ status = 200, headers = {}, body }) => {
        if (res.destroyed) return
        delivery.answered = true
        delivery.answeredAt = Date.now()
        if (body === undefined && status >= 200 && status < 300) res.writeHead(status, { 'content-type': 'application/json', ...headers }).end('{"ok":true}')
        else res.writeHead(status, headers).end(body)
        finish()
      }, (err: Error) => { res.destroy(err) })
    }
    req.on('end', () => {
      delivery.body = Buffer.concat(chunks).toString()
      const delayMs = options.delayMs?.(delivery.path) ?? 0
      if (holding && options.held?.(delivery.path) === true) heldAnswers.push(answer)
      else if (delayMs === 0) answer()
      // Unref'd: a slow answer still pending at the end of a test does not keep its process up.
      else setTimeout(answer, delayMs).unref()
    })
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
