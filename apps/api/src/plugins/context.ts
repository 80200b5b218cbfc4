import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '@switchboard/core/config'
import { createDatabase, type Database, type Db } from '@switchboard/core/db'
import { checkRedisPolicy, closeQueues, createProducerConnection, createQueues, createRedisStateLog, type Queues, type RedisConnection } from '@switchboard/core/queues'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
    database: Database
    db: Db
    /** One Redis or a Redis Cluster, as REDIS_URL / REDIS_CLUSTER_NODES say. */
    redis: RedisConnection
    queues: Queues
  }
}

/** Connections the routes share, opened once and closed with the server. */
async function context (fastify: FastifyInstance, opts: { config: Config }): Promise<void> {
  const { config } = opts
  const { databaseConnectMs, databaseIdleSeconds, databaseStatementMs } = config.timeouts
  const database = createDatabase(config.databaseUrl, {
    max: config.databasePoolMax,
    connectTimeoutMs: databaseConnectMs,
    idleTimeoutSeconds: databaseIdleSeconds,
    statementTimeoutMs: databaseStatementMs,
    poolMode: config.databasePoolMode,
    listenUrl: config.databaseListenUrl
  })
  // One line when Redis goes away and one when it is back, not one per reconnection attempt.
  const redisState = createRedisStateLog(fastify.log)
  const redis = createProducerConnection(config.redisUrl)
  redisState.watch(redis, 'producer')
  checkRedisPolicy(redis, { production: config.nodeEnv === 'production', logger: fastify.log, exit: (code) => process.exit(code) })
  const queues = createQueues(redis, config.queuePrefix)
  for (const queue of Object.values(queues)) redisState.listen(queue, { queue: queue.name })

  fastify.decorate('config', config)
  fastify.decorate('database', database)
  fastify.decorate('db', database.db)
  fastify.decorate<RedisConnection>('redis', redis)
  fastify.decorate('queues', queues)

  fastify.addHook('onClose', async () => {
    redisState.close()
    await closeQueues(queues)
    redis.disconnect()
    await database.close()
  })
}

export default fp(context, { name: 'context' })
