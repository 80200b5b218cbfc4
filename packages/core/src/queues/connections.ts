import { Queue, type ConnectionOptions } from 'bullmq'
import { Redis, type RedisOptions } from 'ioredis'
import { JOB_OPTIONS, QUEUE_NAMES, type Queues } from './catalog.ts'

/** Producer side (api): fail fast when Redis is away instead of queueing commands in memory. */
export function createProducerConnection (url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, ...options })
}

/** Consumer side (worker): BullMQ requires `maxRetriesPerRequest: null` for blocking commands. */
export function createWorkerConnection (url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, ...options })
}

export function createQueues (connection: ConnectionOptions, prefix: string): Queues {
  const queues = {} as Queues
  for (const name of QUEUE_NAMES) {
    queues[name] = new Queue(name, { connection, prefix, defaultJobOptions: JOB_OPTIONS[name] })
  }
  return queues
}

export async function closeQueues (queues: Queues): Promise<void> {
  await Promise.all(Object.values(queues).map(async (queue) => { await queue.close() }))
}
