import { Queue } from 'bullmq'
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis'
import { queueTelemetryOption } from '../observability/tracing.ts'
import { JOB_OPTIONS, QUEUE_NAMES, type QueueName, type Queues } from './catalog.ts'
import { isClusterUrl, parseClusterUrl } from './redis-url.ts'

/** A connection to one Redis or to a Redis Cluster: BullMQ and the rate limiter take either. */
export type RedisConnection = Redis | Cluster

/**
 * A `redis+cluster://` URL gives an ioredis Cluster with `nodeOptions` on every node
 * connection; any other URL one Redis.
 */
function connect (url: string, nodeOptions: RedisOptions, clusterOptions: ClusterOptions = {}): RedisConnection {
  if (!isClusterUrl(url)) return new Redis(url, nodeOptions)
  const { nodes, username, password, tls } = parseClusterUrl(url)
  return new Cluster(nodes, {
    ...clusterOptions,
    redisOptions: { username, password, ...(tls && { tls: {} }), ...nodeOptions },
    // Managed TLS clusters announce hostnames their certificates name: connect by name, not by resolved address.
    ...(tls && { dnsLookup: (address, callback) => { callback(null, address) } })
  })
}

/** Producer side (api): fail fast when Redis is away instead of queueing commands in memory. */
export function createProducerConnection (url: string, options: RedisOptions = {}): RedisConnection {
  const nodeOptions: RedisOptions = { maxRetriesPerRequest: 1, connectTimeout: 2000, ...options }
  if (!isClusterUrl(url)) return connect(url, { enableOfflineQueue: false, ...nodeOptions })
  // A cluster queues nothing while it is not ready; its node connections keep their own
  // offline queue, which only holds the first command while a node connection opens.
  return connect(url, nodeOptions, { enableOfflineQueue: false })
}

/** Consumer side (worker): BullMQ requires `maxRetriesPerRequest: null` for blocking commands. */
export function createWorkerConnection (url: string, options: RedisOptions = {}): RedisConnection {
  return connect(url, { maxRetriesPerRequest: null, ...options })
}

/**
 * The BullMQ prefix of one queue. Its scripts touch many keys of a queue at once, which a
 * cluster allows only within one hash slot: on a cluster every queue's keys carry the hash tag
 * `{<queue>}` (`switchboard:{workflow-runs}:workflow-runs:wait`), so each queue stays in one slot
 * and the queues spread over the nodes. A prefix with a hash tag of its own (`{switchboard}`)
 * comes first, so Redis hashes by it and every queue shares its slot; the key keeps one shape
 * whatever the prefix, the shape KEDA's triggers are rendered with (infra/k8s/components/redis-cluster).
 */
export function queueKeyPrefix (prefix: string, queue: QueueName, connection: RedisConnection): string {
  return connection instanceof Cluster ? `${prefix}:{${queue}}` : prefix
}

export function createQueues (connection: RedisConnection, prefix: string): Queues {
  const queues = {} as Queues
  for (const name of QUEUE_NAMES) {
    queues[name] = new Queue(name, { connection, prefix: queueKeyPrefix(prefix, name, connection), defaultJobOptions: JOB_OPTIONS[name], ...queueTelemetryOption() })
  }
  return queues
}

/** The connection a queue of `createQueues` was made with, for the few keys of ours beside its own. */
export const connectionOf = (queue: Queue): RedisConnection => queue.opts.connection as RedisConnection

export async function closeQueues (queues: Queues): Promise<void> {
  await Promise.all(Object.values(queues).map(async (queue) => { await queue.close() }))
}

/**
 * Resolves when Redis answers; a cluster must also serve every slot (`cluster_state:ok`):
 * a node down without a replica leaves some queues unreachable while the others still answer.
 */
export async function redisAnswers (connection: RedisConnection): Promise<void> {
  if (!(connection instanceof Cluster)) {
    await connection.ping()
    return
  }
  const info = await connection.cluster('INFO')
  if (!/^cluster_state:ok\s*$/m.test(info)) throw new Error('Redis Cluster does not serve every slot')
}
