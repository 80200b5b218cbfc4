import closeWithGrace from 'close-with-grace'
import { loadConfig } from '@switchboard/core/config'
import { createLogger } from '@switchboard/core/logger'
import { startWorker } from './worker.ts'

const config = loadConfig()
const logger = createLogger(config.logLevel, 'worker')
const worker = await startWorker(config, logger)

// Long enough for running nodes to finish; BullMQ returns unfinished jobs to the queue as stalled.
closeWithGrace({ delay: 30_000 }, async ({ signal, err }) => {
  if (err) logger.error({ err }, 'closing after an error')
  else logger.info({ signal }, 'closing')
  await worker.close()
})
