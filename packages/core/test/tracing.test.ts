import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { isSpanContextValid, propagation, SpanStatusCode, trace } from '@opentelemetry/api'
import t, { type Test } from 'tap'
import { startOtlpReceiver } from '@switchboard/testing/otlp-receiver'
import { loadConfig } from '../src/config.ts'
import { createLogger } from '../src/logger.ts'
import { endSpan, inSpan, queueTelemetryOption, sendingTraceparent, startSpan, startTracing, stopTracing, traceparentOf, tracingOn } from '../src/observability/tracing.ts'

const logger = createLogger('silent', 'test')
// Secrets given, so that no development secrets file is written.
const configWith = (env: Record<string, string>) => loadConfig({ JWT_SECRET: 'x'.repeat(32), ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), ...env }).tracing

/** What the OpenTelemetry API hands out when nothing is registered: spans that record nothing, with no trace id. */
function assertNothingRegistered (t: Test): void {
  t.equal(tracingOn, false, 'the guard is off')
  const span = trace.getTracer('probe').startSpan('probe')
  t.equal(span.isRecording(), false, 'the global tracer is the no-op one: no provider')
  t.equal(isSpanContextValid(span.spanContext()), false, 'its spans have no trace id')
  span.end()
  t.same(propagation.fields(), [], 'no propagator')
  t.same(queueTelemetryOption(), {}, 'no telemetry for BullMQ, which then makes no span')
}

/** A loopback server that notes the traceparent of each request. */
async function traceparentsHeard (t: Test): Promise<{ url: string, heard: Array<string | undefined> }> {
  const heard: Array<string | undefined> = []
  const server = createServer((req, res) => {
    heard.push(req.headers.traceparent as string | undefined)
    res.end('ok')
  }).listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, heard }
}

t.test('without an OTLP endpoint tracing stays off: no provider, no propagator', async (t) => {
  await startTracing(configWith({}), 'switchboard-test', logger)
  assertNothingRegistered(t)
  const turnedOff: Array<Record<string, string>> = [
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' },
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' }
  ]
  for (const off of turnedOff) {
    await startTracing(configWith(off), 'switchboard-test', logger)
    assertNothingRegistered(t)
  }
})

t.test('with one, spans are exported under the service name, their error texts bounded, flushed by stopTracing, which unregisters everything', async (t) => {
  const receiver = await startOtlpReceiver(t)
  // A schedule far longer than the test: only the flush at stop sends the span.
  await startTracing(configWith({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '3600000' }), 'switchboard-test', logger)
  t.equal(tracingOn, true)
  t.same(propagation.fields(), ['traceparent', 'tracestate'], 'the W3C trace-context propagator')
  const span = startSpan('unit', { 'switchboard.run.id': 'r1' })
  t.equal(span.isRecording(), true)
  const traceparent = traceparentOf(span)
  t.equal(traceparent, `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`)
  span.end()
  // As an instrumentation sets it: a failed statement's message, with the values Drizzle appends.
  const failed = startSpan('failed', {})
  failed.setStatus({ code: SpanStatusCode.ERROR, message: 'Failed query: select * from users where email = $1\nparams: someone@example.com' })
  failed.end()
  const long = startSpan('long', {})
  endSpan(long, new Error('x'.repeat(5000)))
  t.equal(receiver.spans.length, 0, 'batched, not sent yet')
  await stopTracing()
  t.match(receiver.spans, [
    { service: 'switchboard-test', name: 'unit', spanId: span.spanContext().spanId, attributes: { 'switchboard.run.id': 'r1' }, status: { code: 0 } },
    { name: 'failed', status: { code: 2, message: 'Failed query: select * from users where email = $1' } },
    { name: 'long', status: { code: 2, message: `${'x'.repeat(1000)}…` } }
  ], 'error texts leave without statement values, bounded')
  assertNothingRegistered(t)
})

t.test('a collector that is down holds a closing process 2 s at most, and stopTracing does not throw', async (t) => {
  // Port 9 (discard): nothing listens, every export is refused.
  await startTracing(configWith({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_BSP_SCHEDULE_DELAY: '3600000' }), 'switchboard-test', logger)
  startSpan('lost', {}).end()
  const stopping = performance.now()
  await stopTracing()
  const waited = performance.now() - stopping
  t.ok(waited < 3000, `stopped in ${Math.round(waited)} ms`)
  assertNothingRegistered(t)
})

t.test('an HTTP request is a CLIENT span without its query string; it sends our traceparent only where asked', async (t) => {
  const receiver = await startOtlpReceiver(t)
  const server = await traceparentsHeard(t)
  await fetch(`${server.url}/off`)
  await startTracing(configWith({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '3600000' }), 'switchboard-test', logger)
  await (await fetch(`${server.url}/outside-any-span`)).text()
  const parent = startSpan('caller', {})
  await inSpan(parent, async () => {
    await (await fetch(`${server.url}/third-party?key=query-secret`)).text()
    await sendingTraceparent(async () => await (await fetch(`${server.url}/asked`)).text())
  })
  parent.end()
  await stopTracing()
  const calls = receiver.spans.filter((span) => span.kind === 3)
  t.equal(calls.length, 2, 'none for the request outside a span')
  t.match(calls, [
    { name: 'GET', parentSpanId: parent.spanContext().spanId, attributes: { 'url.full': `${server.url}/third-party`, 'http.response.status_code': 200 } },
    { name: 'GET', parentSpanId: parent.spanContext().spanId, attributes: { 'url.full': `${server.url}/asked` } }
  ], 'a CLIENT span per request inside a span, child of it; none outside one')
  t.notMatch(JSON.stringify(receiver.spans), 'query-secret', 'no query string')
  t.same(server.heard, [undefined, undefined, undefined, `00-${calls[1]!.traceId}-${calls[1]!.spanId}-01`], 'none while off, none unasked, the call\'s own when asked')
  assertNothingRegistered(t)
})
