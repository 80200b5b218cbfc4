import closeWithGrace from 'close-with-grace'
import { configOrExit } from '@switchboard/core/config'
import { createLogger } from '@switchboard/core/logger'
import { NODE_TYPES } from '@switchboard/core/engine'
import { registerStoreMetrics, startTracing, stopTracing, zeroNodeSeries } from '@switchboard/core/observability'
import { startWorkerHttp, storesReadiness, type Readiness } from './http.ts'
import { startWorker, type RunningWorker } from './worker.ts'

const config = configOrExit('worker')
const logger = createLogger(config.logLevel, 'worker')
await startTracing(config.tracing, 'switchboard-worker', logger)

const state: { worker?: RunningWorker, closing: boolean } = { closing: false }
const readiness = async (): Promise<Readiness> => {
  if (state.closing) return { ready: false, checks: { worker: 'closing' } }
  if (state.worker === undefined) return { ready: false, checks: { worker: 'starting' } }
  return storesReadiness(state.worker.context)
}
zeroNodeSeries(NODE_TYPES)
// First, so that liveness answers while the worker connects.
const http = await startWorkerHttp({ host: config.host, port: config.workerHttpPort, logger, readiness })
state.worker = await startWorker(config, logger)
registerStoreMetrics(http.registry, { ...state.worker.context, databasePoolMax: config.databasePoolMax, redis: state.worker.connections })

// Long enough for running jobs to finish, an assistant turn included (WORKER_DRAIN_MS, README,
// Configuration); what is still running then is taken over by another worker (engine/README.md, Claims).
closeWithGrace({ delay: config.workerDrainMs }, async ({ signal, err }) => {
  if (err) logger.error({ err }, 'closing after an error')
  else logger.info({ signal }, 'closing')
  state.closing = true
  await state.worker?.close()
  await http.close()
  // Last: the spans of the runs that just finished are sent.
  await stopTracing()
})
