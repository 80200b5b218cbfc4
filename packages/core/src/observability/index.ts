/** Observability: the application's Prometheus series, the store gauges, the probe listener and OpenTelemetry traces. */
export {
  chatInboundDeliveries, eventDeliveryAttempts, metricsText, queueWait, registerStoreMetrics, runsCreated, runsFinished, webhookAnswers, zeroNodeSeries
} from './metrics.ts'
export { sendJson, startProbeListener, type ProbeListener } from './listener.ts'
export { queueTelemetryOption, startTracing, stopTracing, tracingOn } from './tracing.ts'
