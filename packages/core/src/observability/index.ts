/** Observability: the application's Prometheus series, the store gauges, the probe listener, how a run is traced, and OpenTelemetry traces. */
export {
  chatInboundDeliveries, eventDeliveryAttempts, metricsText, queueWait, registerStoreMetrics, runsCreated, runsFinished, webhookAnswers
} from './metrics.ts'
export { sendJson, startProbeListener, type ProbeListener } from './listener.ts'
export { traceRun } from './run-trace.ts'
export { startTracing, stopTracing, tracingOn } from './tracing.ts'
