/**
 * The bare durable pipeline's worker (scenario A's yardstick): per job, one update marks the
 * row done. Same concurrency and pool size as Switchboard's worker (WORKER_CONCURRENCY,
 * DATABASE_POOL_MAX); answers GET on WORKER_HTTP_PORT once it consumes.
 */
import { createServer } from 'node:http'
import { Worker } from 'bullmq'
import { loadConfig } from '@switchboard/core/config'
import { createDatabase } from '@switchboard/core/db'
import { createWorkerConnection } from '@switchboard/core/queues'
import { BARE_QUEUE } from './table.ts'

const config = loadConfig()
const { sql } = createDatabase(config.databaseUrl, { max: config.databasePoolMax })
const worker = new Worker<{ id: string }>(BARE_QUEUE, async (job) => {
  await sql`update bare_runs set status = 'SUCCESS', completed_at = now() where id = ${job.data.id}`
}, { connection: createWorkerConnection(config.redisUrl), prefix: config.queuePrefix, concurrency: config.workerConcurrency })
await worker.waitUntilReady()

createServer((_req, res) => { res.writeHead(200).end('ok') }).listen(config.workerHttpPort, config.host)
