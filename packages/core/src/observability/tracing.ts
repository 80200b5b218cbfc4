import { setTimeout as sleep } from 'node:timers/promises'
import {
  context, createContextKey, diag, DiagLogLevel, INVALID_SPAN_CONTEXT, isSpanContextValid, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace,
  type Attributes, type AttributeValue, type Context, type Span, type TextMapPropagator, type Tracer
} from '@opentelemetry/api'
import type { SpanProcessor } from '@opentelemetry/sdk-trace'
import type { Telemetry } from 'bullmq'
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
let queueTelemetry: Telemetry | undefined

/**
 * Set on the context of a call whose callee may continue the trace. Our traceparent goes out only
 * where the code asks for it (a job's, an http_request node's unless HTTP_REQUEST_TRACEPARENT=false),
 * never by default to a third party (the chat platform, a model provider, a subscriber): they
 * would learn our trace ids and sampling for nothing of theirs to join (docs/decisions.md).
 */
const SEND_TRACEPARENT = createContextKey('switchboard.send-traceparent')

/** The W3C propagator, whose `inject` writes only in a context marked SEND_TRACEPARENT; `extract` as it is. */
function askedOnly (w3c: TextMapPropagator): TextMapPropagator {
  return {
    inject: (into, carrier, setter) => { if (into.getValue(SEND_TRACEPARENT) === true) w3c.inject(into, carrier, setter) },
    extract: (from, carrier, getter) => w3c.extract(from, carrier, getter),
    fields: () => w3c.fields()
  }
}

/** Runs `call` so that the HTTP requests it makes send their span's traceparent (the http_request node's). */
export async function sendingTraceparent<T> (call: () => Promise<T>): Promise<T> {
  return await context.with(context.active().setValue(SEND_TRACEPARENT, true), call)
}

/**
 * Whether the active span records: client spans (statements, HTTP calls) are made only inside one,
 * so that the periodic loops' statements (the reconciler's sweeps, retention) are not each a trace
 * of their own every few seconds, and an unsampled trace's are not built at all.
 */
export const insideRecordingSpan = (): boolean => trace.getSpan(context.active())?.isRecording() === true

/** Runs `body` with `span` the active span: the spans made inside (statements, HTTP calls) are its children. */
export async function inSpan<T> (span: Span, body: () => Promise<T>): Promise<T> {
  return await context.with(trace.setSpan(context.active(), span), body)
}

/** Attributes BullMQ sets that hold what a job returned or why it failed: dropped, or kept as error texts are. */
const JOB_RESULT = 'bullmq.job.result'
const JOB_FAILED_REASON = 'bullmq.job.failed.reason'

/**
 * BullMQ's own spans (its `telemetry` option, through bullmq-otel): a PRODUCER span where jobs
 * are added, whose context the job carries, and a CONSUMER span (`process <queue>`) around its
 * processor, the processor's spans its children (README, Operations: Traces). Two changes to
 * bullmq-otel's: INTERNAL spans without a parent are not recorded (a worker's timers, lock
 * renewals and stalled-job checks would each be a trace of their own every few seconds), and
 * errors are recorded as ours are (name and message, never a stack; no job's result).
 */
async function bullmqTelemetry (): Promise<Telemetry> {
  const { BullMQOtel, BullMQOTelSpan } = await import('bullmq-otel')
  class QueueSpan extends BullMQOTelSpan {
    override setAttribute (key: string, value: AttributeValue): void {
      if (key === JOB_RESULT) return
      this.span.setAttribute(key, key === JOB_FAILED_REASON ? outsideText(String(value)) : value)
    }

    override setAttributes (attributes: Attributes): void {
      for (const [key, value] of Object.entries(attributes)) if (value !== undefined) this.setAttribute(key, value)
    }

    override recordException (exception: unknown): void {
      recordError(this.span, exception)
    }
  }
  const { contextManager } = new BullMQOtel({ tracerName: 'bullmq' })
  // A job carries the context it was added in: its consumer continues it.
  const jobContextManager: Telemetry['contextManager'] = {
    with: (into, fn) => contextManager.with(into, fn),
    active: () => contextManager.active(),
    getMetadata: (of) => contextManager.getMetadata(of.setValue(SEND_TRACEPARENT, true)),
    fromMetadata: (into, metadata) => contextManager.fromMetadata(into, metadata)
  }
  const bullmqTracer = trace.getTracer('bullmq')
  const unrecorded = new QueueSpan(trace.wrapSpanContext(INVALID_SPAN_CONTEXT))
  const hasParent = (parent: Context): boolean => {
    const parentSpan = trace.getSpanContext(parent)
    return parentSpan !== undefined && isSpanContextValid(parentSpan)
  }
  return {
    contextManager: jobContextManager,
    tracer: {
      startSpan: (name, options, parent: Context = context.active()) => options?.kind === SpanKind.INTERNAL && !hasParent(parent)
        ? unrecorded
        : new QueueSpan(bullmqTracer.startSpan(name, options, parent))
    }
  }
}

/** BullMQ's `telemetry` option for a Queue or a Worker: its spans while tracing is on; undefined while off, and BullMQ makes none. */
export const queueTelemetryOption = (): { telemetry?: Telemetry } => queueTelemetry === undefined ? {} : { telemetry: queueTelemetry }

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
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { OTLPTraceExporter }, resources, sdk, { UndiciInstrumentation }] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    config.protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/instrumentation-undici')
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
  // Every span's error text, ours and the instrumentations', passes outsideText before it is
  // exported, and an exception event keeps no stack (the events are the span's own, still open).
  const errorText: SpanProcessor = {
    onStart: () => {},
    onEnding: (span) => {
      const message = span.status.message
      if (message !== undefined && outsideText(message) !== message) span.setStatus({ code: SpanStatusCode.ERROR, message: outsideText(message) })
      for (const event of span.events) {
        const attributes = event.attributes as Attributes | undefined
        if (event.name !== 'exception' || attributes === undefined) continue
        delete attributes['exception.stacktrace']
        if (typeof attributes['exception.message'] === 'string') attributes['exception.message'] = outsideText(attributes['exception.message'])
      }
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
  propagation.setGlobalPropagator(askedOnly(new W3CTraceContextPropagator()))
  trace.setGlobalTracerProvider(provider)
  tracer = trace.getTracer('switchboard')
  queueTelemetry = await bullmqTelemetry()
  // A CLIENT span per request undici makes (fetch included: the chat platform, the model
  // provider, http_request, subscription deliveries), heard through diagnostics_channel, not by
  // patching modules. Its URL keeps no query string, no credentials (README, Operations: Traces).
  const httpClientSpans = new UndiciInstrumentation({
    // Inside a trace only, as statements (insideRecordingSpan).
    requireParentforSpans: true,
    startSpanHook: (request) => {
      const url = new URL(request.path, request.origin)
      return { 'url.full': `${url.origin}${url.pathname}`, 'url.query': undefined }
    }
  })
  tracingOn = true
  stop = async () => {
    tracingOn = false
    tracer = undefined
    queueTelemetry = undefined
    httpClientSpans.disable()
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

/**
 * The PRODUCER span of one job added in a batch, child of the span `traceparent` names (a run's
 * `run.start`), and the `telemetry` option the job carries so that BullMQ's CONSUMER span is its
 * child: a batch's own span belongs to one trace only, its jobs to many. Call only while `tracingOn`.
 */
export function startJobSpan (queue: string, attributes: Attributes, traceparent: string): { span: Span, telemetry: { metadata: string } } {
  const span = startSpan(`create ${queue}`, { 'messaging.operation.type': 'create', 'messaging.destination.name': queue, ...attributes }, contextOf(traceparent), SpanKind.PRODUCER)
  // bullmq-otel's metadata: the W3C carrier as JSON.
  return { span, telemetry: { metadata: JSON.stringify({ traceparent: traceparentOf(span) }) } }
}

/**
 * The context a job's work continues: the CONSUMER span BullMQ made around its processor (itself
 * a child of the span the job was added under), or else the `traceparent` its data carries (a job
 * added while the adding process traced nothing).
 */
export function jobContext (traceparent: string | undefined): Context {
  const consumer = trace.getSpanContext(context.active())
  return consumer !== undefined && isSpanContextValid(consumer) ? context.active() : contextOf(traceparent)
}

/** The W3C traceparent of `span`, for a job or a request that continues its trace elsewhere. */
export function traceparentOf (span: Span): string | undefined {
  const carrier: { traceparent?: string } = {}
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span).setValue(SEND_TRACEPARENT, true), carrier)
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
