import { Redis } from 'ioredis'
import { REDIS_URL } from './database.ts'

/** Removes every key of one test's queue prefix (jobs, schedulers, rate-limit counters). */
export async function deleteQueuePrefix (prefix: string, redisUrl = REDIS_URL): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true })
  try {
    await redis.connect()
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
      cursor = next
      if (keys.length > 0) await redis.unlink(...keys)
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
}
