import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '@switchboard/core/config'
import { createDatabase, type Database, type Db } from '@switchboard/core/db'
import { closeQueues, createProducerConnection, createQueues, type Queues, type RedisConnection } from '@switchboard/core/queues'

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
  const database = createDatabase(config.databaseUrl, { max: config.databasePoolMax })
  const redis = createProducerConnection(config.redisUrl)
  redis.on('error', (err) => { fastify.log.warn({ err }, 'redis connection error') })
  const queues = createQueues(redis, config.queuePrefix)
  for (const queue of Object.values(queues)) {
    queue.on('error', (err) => { fastify.log.warn({ err, queue: queue.name }, 'queue error') })
  }

  fastify.decorate('config', config)
  fastify.decorate('database', database)
  fastify.decorate('db', database.db)
  fastify.decorate<RedisConnection>('redis', redis)
  fastify.decorate('queues', queues)

  fastify.addHook('onClose', async () => {
    await closeQueues(queues)
    redis.disconnect()
    await database.close()
  })
}

export default fp(context, { name: 'context' })
