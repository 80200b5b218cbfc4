import { setTimeout as sleep } from 'node:timers/promises'
import { context, diag, DiagLogLevel, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api'
import type { SpanProcessor } from '@opentelemetry/sdk-trace'
import type { TracingConfig } from '../config.ts'
import type { Logger } from '../logger.ts'

/**
 * True once `startTracing` registered a provider. Every place that makes a span checks this one
 * boolean first, so that with tracing off no span, attribute object or context is ever built
 * (README, Operations: Traces).
 */
export let tracingOn = false

/** Characters of an error's text a span keeps: a node's message may quote much of its config. */
const MAX_ERROR_TEXT = 1000

/**
 * An error's text as it may leave the process: without the values Drizzle appends to a failed
 * statement's message (`\nparams: …`, which the logs leave out too: logger.ts), and bounded.
 */
function outsideText (message: string): string {
  const text = message.replace(/\nparams: [\s\S]*$/, '')
  return text.length > MAX_ERROR_TEXT ? `${text.slice(0, MAX_ERROR_TEXT)}…` : text
}

let tracer: Tracer | undefined
let stop: (() => Promise<void>) | undefined

/** A collector that is down fails every export: its errors are logged once a minute at most, with how many were left out. */
const DIAGNOSTICS_EVERY_MS = 60_000

/** A closing process waits this long at most for its last spans to be sent: a collector that is down must not hold its exit. */
const STOP_WAIT_MS = 2000

/** The OpenTelemetry SDK's own warnings and errors (a collector that refuses spans, a full queue), in the process log. */
function diagnosticsTo (logger: Logger): void {
  const log = logger.child({ component: 'tracing' })
  let loggedAt = -Infinity
  let leftOut = 0
  const line = (level: 'error' | 'warn') => (message: string, ...args: unknown[]): void => {
    const now = Date.now()
    if (now - loggedAt < DIAGNOSTICS_EVERY_MS) {
      leftOut++
      return
    }
    log[level]({ ...(args.length > 0 && { args }), ...(leftOut > 0 && { leftOut }) }, message)
    loggedAt = now
    leftOut = 0
  }
  diag.setLogger({ error: line('error'), warn: line('warn'), info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN)
}

/**
 * Registers the tracer provider, the W3C trace-context propagator and the async context manager
 * when `config.tracesUrl` is set; does nothing otherwise (the SDK is not even loaded). Spans are
 * batched and sent by OTLP/HTTP, as protobuf or JSON (`config.protocol`); the exporter reads OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
 * _COMPRESSION and the certificate settings itself, the resource OTEL_RESOURCE_ATTRIBUTES.
 */
export async function startTracing (config: TracingConfig, defaultServiceName: string, logger: Logger): Promise<void> {
  if (config.tracesUrl === undefined || tracingOn) return
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { OTLPTraceExporter }, resources, sdk] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    config.protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace')
  ])
  diagnosticsTo(logger)
  const ratio = new sdk.TraceIdRatioBasedSampler(config.samplerRatio)
  const samplers = {
    always_on: new sdk.AlwaysOnSampler(),
    always_off: new sdk.AlwaysOffSampler(),
    traceidratio: ratio,
    parentbased_always_on: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    parentbased_always_off: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() }),
    parentbased_traceidratio: new sdk.ParentBasedSampler({ root: ratio })
  }
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over the default name.
  const resource = resources.resourceFromAttributes({ 'service.name': config.serviceName ?? defaultServiceName })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
  // Every span's error text, ours and @fastify/otel's, passes outsideText before it is exported.
  const errorText: SpanProcessor = {
    onStart: () => {},
    onEnding: (span) => {
      const message = span.status.message
      if (message !== undefined && outsideText(message) !== message) span.setStatus({ code: SpanStatusCode.ERROR, message: outsideText(message) })
    },
    onEnd: () => {},
    forceFlush: async () => {},
    shutdown: async () => {}
  }
  const provider = new sdk.TracerProvider({
    resource,
    sampler: samplers[config.sampler],
    // Attributes are ids, types and outcomes; this bounds whatever else an instrumentation adds.
    spanLimits: { attributeValueLengthLimit: 4096 },
    spanProcessors: [errorText, new sdk.BatchSpanProcessor({
      exporter: new OTLPTraceExporter({ url: config.tracesUrl }),
      scheduledDelayMillis: config.batch.scheduleDelayMs,
      maxQueueSize: config.batch.maxQueueSize,
      maxExportBatchSize: config.batch.maxExportBatchSize,
      exportTimeoutMillis: config.batch.exportTimeoutMs
    })]
  })
  const contextManager = new AsyncLocalStorageContextManager().enable()
  context.setGlobalContextManager(contextManager)
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  trace.setGlobalTracerProvider(provider)
  tracer = trace.getTracer('switchboard')
  tracingOn = true
  stop = async () => {
    tracingOn = false
    tracer = undefined
    try {
      // Exports what is still queued; a failure was logged through diag already.
      await Promise.race([provider.shutdown(), sleep(STOP_WAIT_MS, undefined, { ref: false })])
    } catch {}
    trace.disable()
    propagation.disable()
    context.disable()
    diag.disable()
  }
  logger.info({ tracesUrl: config.tracesUrl, protocol: config.protocol, sampler: config.sampler }, 'traces exported by OTLP')
}

/** How a log line names `span` (OpenTelemetry's log data model: `trace_id`, `span_id`), so that a line leads to its trace. */
export function logFieldsOf (span: Span): { trace_id: string, span_id: string } {
  const { traceId, spanId } = span.spanContext()
  return { trace_id: traceId, span_id: spanId }
}

/** Sends the spans still queued (2 s at most) and unregisters the provider: the last step of a closing process. Never throws. */
export async function stopTracing (): Promise<void> {
  const stopping = stop
  stop = undefined
  await stopping?.()
}

/** A span child of `parent` (by default the active context); call only while `tracingOn`. */
export function startSpan (name: string, attributes: Attributes, parent: Context = context.active(), kind: SpanKind = SpanKind.INTERNAL): Span {
  return tracer!.startSpan(name, { attributes, kind }, parent)
}

/** The context a span started in another process continues: its W3C traceparent (absent or malformed: a new trace). */
export function contextOf (traceparent: string | undefined): Context {
  return traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, { traceparent })
}

/** The W3C traceparent of `span`, for a job or a request that continues its trace elsewhere. */
export function traceparentOf (span: Span): string | undefined {
  const carrier: { traceparent?: string } = {}
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier)
  return carrier.traceparent
}

/**
 * Gives `span` an error status and an exception event: the error's name and message (outsideText),
 * as the run's log shows them; never a stack.
 */
export function recordError (span: Span, error: unknown): void {
  const message = outsideText(error instanceof Error ? error.message : String(error))
  span.recordException({ name: error instanceof Error ? error.name : 'Error', message })
  span.setStatus({ code: SpanStatusCode.ERROR, message })
}

/** Ends `span`, with `error` recorded when given. */
export function endSpan (span: Span, error?: unknown): void {
  if (error !== undefined) recordError(span, error)
  span.end()
}
