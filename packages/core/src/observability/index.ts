/** Observability: the application's Prometheus series, the store gauges, how a run is traced, and OpenTelemetry traces. */
export {
  chatInboundDeliveries, metricsText, queueWait, registerStoreMetrics, runsCreated, runsFinished, webhookAnswers
} from './metrics.ts'
export { traceRun } from './run-trace.ts'
export { startTracing, stopTracing, tracingOn } from './tracing.ts'
