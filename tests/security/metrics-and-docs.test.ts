/**
 * What the api's public port shows of its operations (issue 23, item 7), through the front door
 * (an api process, over HTTP): /metrics answers only on the metrics listener (API_METRICS_PORT),
 * a burst of scrapes costs the stores one round of queries, and /docs, on the origin where the
 * console keeps its token, carries the console's Content-Security-Policy.
 */
import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { QUEUE_NAMES } from '@switchboard/core/queues'
import { REDIS_URL } from '@switchboard/testing/database'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const stack = await startStack(t, { workers: 0 })
const prefix = stack.env.QUEUE_PREFIX!

/**
 * Counts the commands Redis runs that `matches` (a line of MONITOR's output), from now until `stop`.
 * A socket of its own, not ioredis's `monitor()`, which can mistake a MONITOR line for the answer
 * to its own ready check while other clients (parallel test files) are busy.
 */
async function redisCommands (matches: (line: string) => boolean): Promise<{ count: () => number, stop: () => void }> {
  const { hostname, port } = new URL(REDIS_URL)
  const socket = connect(Number(port || 6379), hostname)
  await once(socket, 'connect')
  let seen = 0
  let pending = ''
  let monitoring = false
  socket.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString('latin1')).split('\r\n')
    pending = lines.pop() ?? ''
    for (const line of lines) {
      if (line === '+OK' && !monitoring) monitoring = true
      else if (matches(line)) seen++
    }
  })
  socket.write('MONITOR\r\n')
  await waitFor(async () => monitoring ? true : undefined, { what: 'MONITOR to start' })
  return { count: () => seen, stop: () => { socket.destroy() } }
}

// First, while no scrape has read the stores yet: the burst must find no readings to share.
t.test('a burst of 20 scrapes costs the stores one round of queries', async (t) => {
  // BullMQ counts a queue's jobs with one script call naming the queue's keys (under the test's prefix).
  const queueCounts = await redisCommands((line) => /^\+\S+ \[[^\]]*\] "eval/i.test(line) && line.includes(`"${prefix}:`))
  t.teardown(queueCounts.stop)

  const started = performance.now()
  const scrapes = await Promise.all(Array.from({ length: 20 }, async () => {
    const res = await fetch(`${stack.metricsUrl}/metrics`)
    return { status: res.status, text: await res.text() }
  }))
  const ms = performance.now() - started
  t.same(scrapes.map((scrape) => scrape.status), Array(20).fill(200))
  for (const queue of QUEUE_NAMES) {
    t.ok(scrapes.every((scrape) => scrape.text.includes(`switchboard_queue_jobs{queue="${queue}",state="waiting"} 0`)), `every scrape has ${queue}'s depth`)
  }
  t.ok(scrapes.every((scrape) => /^switchboard_database_up 1$/m.test(scrape.text)), 'and Postgres\'s probe')
  // MONITOR streams what Redis ran a moment later; one round is one count per queue.
  await waitFor(async () => queueCounts.count() >= QUEUE_NAMES.length ? true : undefined, { what: 'the queue counts in MONITOR' })
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(queueCounts.count(), QUEUE_NAMES.length, `one count per queue for the whole burst (${queueCounts.count()} script calls, ${ms.toFixed(0)} ms for 20 scrapes)`)
})

t.test('/metrics answers 404 on the public port, with or without a token, and 200 on the metrics listener', async (t) => {
  const notFound = { statusCode: 404, code: 'NOT_FOUND', error: 'Route GET /metrics not found', message: 'Route GET /metrics not found' }
  const anonymous = await stack.call('GET', '/metrics')
  t.same([anonymous.status, anonymous.body], [404, notFound])
  const admin = await stack.call('GET', '/metrics', { token: await stack.adminToken() })
  t.same([admin.status, admin.body], [404, notFound], 'a token does not bring it back')

  const scrape = await fetch(`${stack.metricsUrl}/metrics`)
  t.equal(scrape.status, 200, 'the metrics listener needs no token (it is for the cluster network only)')
  const text = await scrape.text()
  for (const series of ['login_attempts_total', 'switchboard_queue_jobs', 'switchboard_database_up', 'http_request_duration_seconds']) {
    t.match(text, new RegExp(`^# TYPE ${series} `, 'm'), series)
  }
  t.equal((await fetch(`${stack.metricsUrl}/api/auth/login`)).status, 404, 'the listener serves nothing else')
  t.equal((await fetch(`${stack.metricsUrl}/metrics`, { method: 'POST' })).status, 405)
  t.equal((await stack.call('GET', '/health/live')).status, 200, 'probes stay on the public port')
})

t.test('/docs carries the console\'s Content-Security-Policy, which Swagger UI fits', async (t) => {
  const res = await fetch(`${stack.baseUrl}/docs/`)
  t.equal(res.status, 200)
  const csp = res.headers.get('content-security-policy') ?? ''
  t.match(csp, /(^|; )default-src 'none'(;|$)/)
  t.match(csp, /(^|; )script-src 'self'(;|$)/, 'scripts from the origin only: no inline script, no other host')
  t.match(csp, /(^|; )style-src 'self'(;|$)/)
  t.match(csp, /(^|; )frame-ancestors 'none'(;|$)/)
  t.equal(csp, (await fetch(`${stack.baseUrl}/console`)).headers.get('content-security-policy'), 'the console\'s policy')
  t.equal(res.headers.get('x-content-type-options'), 'nosniff')
  t.equal(res.headers.get('x-frame-options'), 'DENY')
  t.equal(res.headers.get('referrer-policy'), 'no-referrer')

  // What the policy must allow: the page has no inline script or style, and loads its own files.
  const html = await res.text()
  const scripts = [...html.matchAll(/<script\b([^>]*)>/g)].map(([, attributes]) => /\bsrc="([^"]+)"/.exec(attributes!)?.[1])
  t.ok(scripts.length > 0 && scripts.every((src) => src !== undefined), 'every script is a file')
  t.notMatch(html, /<style\b|\sstyle=|\son[a-z]+=/i, 'no inline style or event handler')
  const files = [...scripts, ...[...html.matchAll(/<link\b[^>]*\bhref="([^"]+)"/g)].map(([, href]) => href)] as string[]
  for (const file of files) {
    const url = new URL(file, `${stack.baseUrl}/docs/`)
    t.equal(url.origin, stack.baseUrl, `${file} is on the origin`)
    const asset = await fetch(url)
    t.equal(asset.status, 200, `${url.pathname} is served`)
    t.match(asset.headers.get('content-security-policy'), /script-src 'self'/, `${url.pathname} under the same policy`)
  }
  t.equal((await fetch(`${stack.baseUrl}/docs/json`)).status, 200, 'the OpenAPI document stays public')
})
