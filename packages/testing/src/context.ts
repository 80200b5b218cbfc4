import { createDatabase, type Database, type Db } from '@switchboard/core/db'
import { closeQueues, createProducerConnection, createQueues, type Queues, type RedisConnection } from '@switchboard/core/queues'
import { createTestDatabase, REDIS_URL, uniqueQueuePrefix } from './database.ts'
import { deleteQueuePrefix } from './redis.ts'
import type { Teardown } from './teardown.ts'

export interface CoreTestContext {
  /** The file's database, for a config (testConfig) of code that takes one. */
  databaseUrl: string
  database: Database
  db: Db
  redis: RedisConnection
  queues: Queues
  queuePrefix: string
}

/**
 * A database and queue prefix of their own for a test file that drives
 * packages/core directly; all of it is closed and removed at teardown.
 */
export async function createCoreTestContext (t: Teardown): Promise<CoreTestContext> {
  const testDatabase = await createTestDatabase()
  const database = createDatabase(testDatabase.url, { max: 4 })
  const redis = createProducerConnection(REDIS_URL)
  const queuePrefix = uniqueQueuePrefix()
  const queues = createQueues(redis, queuePrefix)
  t.teardown(async () => {
    await closeQueues(queues)
    redis.disconnect()
    await deleteQueuePrefix(queuePrefix)
    await database.close()
    await testDatabase.drop()
  })
  return { databaseUrl: testDatabase.url, database, db: database.db, redis, queues, queuePrefix }
}
