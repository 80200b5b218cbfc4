/** Observability: the application's Prometheus series, the store gauges, and how a run is traced. */
export {
  chatInboundDeliveries, metricsText, queueWait, registerStoreMetrics, runsCreated, runsFinished, webhookAnswers
} from './metrics.ts'
export { traceRun } from './run-trace.ts'
