import autocannon from 'autocannon'

/** One request as the load generator sends it; called again for every request. */
export interface RequestShape {
  path: string
  body?: string
  headers?: Record<string, string>
}

export interface LoadOptions {
  baseUrl: string
  method: 'GET' | 'POST'
  request: () => RequestShape
  /** Sent with every request (a bearer token, the content type). */
  headers?: Record<string, string>
  connections: number
  /** Run for this long, or until `amount` requests were answered. */
  durationSeconds?: number
  amount?: number
  /** Stop after this long even when `amount` is not reached. */
  maxSeconds?: number
  /** Requests per second over all connections (default: as fast as answers come). */
  overallRate?: number
}

export interface LoadResult {
  /** Answers with a 2xx status. */
  requests: number
  seconds: number
  requestsPerSecond: number
  /** Latency of the 2xx answers, in ms, from our own record (autocannon's histogram rounds to whole ms). */
  p50Ms: number
  p99Ms: number
  non2xx: number
  errors: number
  timeouts: number
}

/** The value at quantile `q` (0..1) of `values`, sorted in place; NaN when empty. */
export function quantile (values: number[], q: number): number {
  if (values.length === 0) return Number.NaN
  values.sort((a, b) => a - b)
  return values[Math.min(values.length - 1, Math.floor(q * values.length))]!
}

/**
 * Closed-loop HTTP load with autocannon in this process (never inside the api or worker),
 * HTTP/1.1 keep-alive, no pipelining: each connection sends its next request when the
 * previous one is answered, unless `overallRate` paces them.
 */
export async function load (options: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = []
  const started = performance.now()
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({
      url: options.baseUrl,
      method: options.method,
      headers: options.headers,
      connections: options.connections,
      pipelining: 1,
      timeout: 30,
      ...(options.amount === undefined ? { duration: options.durationSeconds ?? 10 } : { amount: options.amount }),
      ...(options.overallRate !== undefined && { overallRate: options.overallRate }),
      requests: [{
        setupRequest: (request) => {
          const shape = options.request()
          return {
            ...request,
            path: shape.path,
            ...(shape.body !== undefined && { body: shape.body }),
            ...(shape.headers !== undefined && { headers: { ...request.headers, ...shape.headers } })
          }
        }
      }]
    }, (err: unknown, done: autocannon.Result) => { if (err === null || err === undefined) resolve(done); else reject(err) })
    if (options.maxSeconds !== undefined) {
      const cap = setTimeout(() => { instance.stop() }, options.maxSeconds * 1000)
      instance.on('done', () => { clearTimeout(cap) })
    }
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime)
    })
  })
  const seconds = (performance.now() - started) / 1000
  return {
    requests: latencies.length,
    seconds,
    requestsPerSecond: latencies.length / seconds,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts
  }
}
