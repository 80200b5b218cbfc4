import { Worker, type Processor } from 'bullmq'
import type { Config } from '@switchboard/core/config'
import { broadcastRequeue, chatDeliveryRequeue } from '@switchboard/core/chat'
import { createDatabase } from '@switchboard/core/db'
import { indexingRequeue } from '@switchboard/core/knowledge'
import { createReconciler } from '@switchboard/core/engine'
import type { Logger } from '@switchboard/core/logger'
import { queueTelemetryOption, queueWait } from '@switchboard/core/observability'
import { ASSISTANT_MAIN, checkRedisPolicy, closeQueues, EVENT_DELIVERIES, KNOWLEDGE_INDEX, createProducerConnection, createQueues, createRedisStateLog, createWorkerConnection, queueKeyPrefix, SCHEDULED_TASKS, type RedisConnection } from '@switchboard/core/queues'
import { createRetention } from '@switchboard/core/retention'
import { createRunIndexing } from '@switchboard/core/runs'
import { createCounterFolding } from '@switchboard/core/workflows'
import { createScheduleSync } from '@switchboard/core/schedules'
import { deliveryRequeue } from '@switchboard/core/subscriptions'
import { lostEventsDispatch } from '@switchboard/core/triggers'
import { createWorkerContext, type WorkerContext } from './context.ts'
import { createLockWatchdog, type LockWatchdog } from './lock-watchdog.ts'
import { processors } from './processors/index.ts'

/**
 * A worker that dies (SIGKILL, OOM) holds its jobs' locks until they expire:
 * BullMQ's stalled check then returns the jobs to the queue and the engine
 * takes the run over. Shorter than BullMQ's 30 s default so that a crash
 * costs seconds; jobs are I/O-bound, so renewals (every 5 s) are not starved.
 */
const LOCK_DURATION_MS = 10_000
const STALLED_INTERVAL_MS = 5_000
const MAX_STALLED_COUNT = 2
/**
 * A job whose lock was not renewed for LOCK_DURATION_MS minus this is stopped
 * (lock-watchdog.ts): renewals come every 2.5 to 5 s, so a healthy job never
 * comes near it, and a worker cut off from Redis stops 3 s before its lock can
 * expire and another worker take the run over.
 */
const LOCK_WATCHDOG_MARGIN_MS = 3_000
const LOCK_WATCHDOG_CHECK_MS = 250

export interface RunningWorker {
  context: WorkerContext
  /** Redis connections by role, for the connection metric. */
  connections: Record<string, RedisConnection>
  workers: Worker[]
  close: () => Promise<void>
}

/**
 * Connects to Postgres and Redis and starts a BullMQ Worker for each queue of WORKER_QUEUES. WORKER_CONCURRENCY applies to each queue: every queue keeps its own
 * capacity, so agent runs never wait behind bulk automation in a process that takes both.
 */
export async function startWorker (config: Config, logger: Logger): Promise<RunningWorker> {
  const database = createDatabase(config.databaseUrl, {
    max: config.databasePoolMax,
    connectTimeoutMs: config.timeouts.databaseConnectMs,
    idleTimeoutSeconds: config.timeouts.databaseIdleSeconds,
    poolMode: config.databasePoolMode
  })
  // Every connection, queue and worker has a listener: an outage is two lines, not a stack trace per retry.
  const redisState = createRedisStateLog(logger)
  const redis = createProducerConnection(config.redisUrl)
  redisState.watch(redis, 'producer')
  checkRedisPolicy(redis, { production: config.nodeEnv === 'production', logger, exit: (code) => process.exit(code) })
  const queues = createQueues(redis, config.queuePrefix)
  for (const queue of Object.values(queues)) redisState.listen(queue, { queue: queue.name })
  const { context, close: closeContext } = createWorkerContext({ config, logger, database, queues, redis })
  const { engine, assistant } = context
  const events = { db: database.db, queues, logger, eventFanoutMax: config.limits.eventFanoutMax }

  const connection = createWorkerConnection(config.redisUrl)
  redisState.watch(connection, 'worker')
  const workers: Worker[] = []
  const watchdogs: LockWatchdog[] = []
  for (const name of config.workerQueues) {
    const watchdog = createLockWatchdog({ queue: name, lockDurationMs: LOCK_DURATION_MS, marginMs: LOCK_WATCHDOG_MARGIN_MS, checkEveryMs: LOCK_WATCHDOG_CHECK_MS, logger })
    watchdogs.push(watchdog)
    const worker = new Worker(name, watchdog.wrap(processors[name](context) as Processor), {
      connection,
      prefix: queueKeyPrefix(config.queuePrefix, name, connection),
      // Deliveries wait on subscribers, not on this process: a concurrency of their own (EVENT_DELIVERY_CONCURRENCY);
      // indexing holds memory (a PDF's thread): one of its own too (KNOWLEDGE_INDEX_CONCURRENCY).
      concurrency: name === EVENT_DELIVERIES ? config.eventSubscriptions.concurrency : name === KNOWLEDGE_INDEX ? config.ai.knowledgeIndexConcurrency : config.workerConcurrency,
      lockDuration: LOCK_DURATION_MS,
      stalledInterval: STALLED_INTERVAL_MS,
      maxStalledCount: MAX_STALLED_COUNT,
      ...queueTelemetryOption()
    })
    redisState.listen(worker, { queue: name, role: 'worker' })
    // A job whose lock is lost, or cannot be renewed in time, may be another worker's: stop working on it here.
    worker.on('locksRenewed', ({ jobIds }) => { watchdog.renewed(jobIds) })
    worker.on('lockRenewalFailed', (jobIds) => { watchdog.lost(jobIds) })
    worker.on('failed', (job, err) => { logger.warn({ err, queue: name, jobId: job?.id }, 'job failed') })
    // First attempts only: a retry's wait is its backoff, not the queue's.
    worker.on('active', (job) => {
      if (job.attemptsMade === 0 && job.processedOn !== undefined) queueWait.observe({ queue: name }, Math.max(0, job.processedOn - job.timestamp - (job.opts.delay ?? 0)) / 1000)
    })
    workers.push(worker)
  }
  await Promise.all(workers.map(async (worker) => { await worker.waitUntilReady() }))

  // Redis may have lost the cron schedulers (or kept stale ones): rebuild them from the database.
  const scheduleSync = createScheduleSync({ db: database.db, queue: queues[SCHEDULED_TASKS] })
  const schedules = await scheduleSync.rebuild()
  logger.info(schedules, 'cron schedules rebuilt')
  const reconciler = createReconciler({
    db: database.db,
    queues,
    logger,
    engine,
    ...config.reconciler,
    restore: {
      schedulers: scheduleSync.restoreLost,
      chatDeliveries: chatDeliveryRequeue({ db: database.db, queue: queues[ASSISTANT_MAIN], logger, graceMs: config.reconciler.graceMs }),
      events: lostEventsDispatch(events, config.reconciler.graceMs),
      assistantTurns: async () => await assistant.requeueStalled(config.reconciler.graceMs),
      broadcasts: broadcastRequeue({ db: database.db, queues }),
      eventDeliveries: deliveryRequeue({ db: database.db, queues, graceMs: config.reconciler.graceMs }),
      knowledgeSources: indexingRequeue({ db: database.db, queues, graceMs: config.reconciler.graceMs })
    }
  })
  reconciler.start()
  // Redis back, maybe empty: its jobs and schedulers are put back now, not at the next interval.
  redisState.onAvailable(reconciler.redisReturned)
  const retention = createRetention({ db: database.db, logger, ...config.retention })
  retention.start()
  const counterFolding = createCounterFolding({ db: database.db, logger })
  counterFolding.start()
  // Behind the runs' starts by twice their deadline (runs/search-index.ts): a start's transaction has committed or rolled back by then.
  const runIndexing = createRunIndexing({ db: database.db, logger, lagMs: 2 * config.timeouts.requestDeadlineMs })
  runIndexing.start()
  logger.info({ queues: workers.map((w) => w.name), concurrency: config.workerConcurrency }, 'worker started')

  return {
    context,
    connections: { producer: redis, worker: connection },
    workers,
    async close () {
      await Promise.all([reconciler.stop(), retention.stop(), counterFolding.stop(), runIndexing.stop()])
      // Workers first: running jobs finish (or go back to the queue) before connections close.
      await Promise.all(workers.map(async (worker) => { await worker.close() }))
      for (const watchdog of watchdogs) watchdog.close()
      await closeContext()
      // Connections closing now are not an outage.
      redisState.close()
      await closeQueues(queues)
      connection.disconnect()
      redis.disconnect()
      await database.close()
    }
  }
}
