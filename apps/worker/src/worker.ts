import { Worker } from 'bullmq'
import type { Config } from '@switchboard/core/config'
import { createDatabase } from '@switchboard/core/db/client'
import type { Logger } from '@switchboard/core/logger'
import { closeQueues, createProducerConnection, createQueues, createWorkerConnection, QUEUE_NAMES, SCHEDULED_TASKS } from '@switchboard/core/queues'
import { createScheduleSync } from '@switchboard/core/schedules/schedule-sync'
import type { WorkerContext } from './context.ts'
import { processors } from './processors/index.ts'

export interface RunningWorker {
  context: WorkerContext
  workers: Worker[]
  close: () => Promise<void>
}

/** Connects to Postgres and Redis and starts a BullMQ Worker for each queue that has a processor. */
export async function startWorker (config: Config, logger: Logger): Promise<RunningWorker> {
  const database = createDatabase(config.databaseUrl)
  const redis = createProducerConnection(config.redisUrl)
  redis.on('error', (err) => { logger.warn({ err }, 'redis connection error') })
  const queues = createQueues(redis, config.queuePrefix)
  const context: WorkerContext = { config, logger, database, queues, redis }

  const connection = createWorkerConnection(config.redisUrl)
  connection.on('error', (err) => { logger.warn({ err }, 'redis worker connection error') })
  const workers: Worker[] = []
  for (const name of QUEUE_NAMES) {
    const factory = processors[name]
    if (factory === undefined) continue
    const worker = new Worker(name, factory(context), {
      connection,
      prefix: config.queuePrefix,
      concurrency: config.workerConcurrency
    })
    worker.on('error', (err) => { logger.error({ err, queue: name }, 'worker error') })
    worker.on('failed', (job, err) => { logger.warn({ err, queue: name, jobId: job?.id }, 'job failed') })
    workers.push(worker)
  }
  await Promise.all(workers.map(async (worker) => { await worker.waitUntilReady() }))

  // Redis may have lost the cron schedulers (or kept stale ones): rebuild them from the database.
  const schedules = await createScheduleSync({ db: database.db, queue: queues[SCHEDULED_TASKS] }).rebuild()
  logger.info(schedules, 'cron schedules rebuilt')
  logger.info({ queues: workers.map((w) => w.name), concurrency: config.workerConcurrency }, 'worker started')

  return {
    context,
    workers,
    async close () {
      // Workers first: running jobs finish (or go back to the queue) before connections close.
      await Promise.all(workers.map(async (worker) => { await worker.close() }))
      await closeQueues(queues)
      connection.disconnect()
      redis.disconnect()
      await database.close()
    }
  }
}
