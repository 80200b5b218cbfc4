import { Cluster } from 'ioredis'
import type { Logger } from '../logger.ts'
import type { RedisConnection } from './connections.ts'

/**
 * What BullMQ needs of Redis (README, Deploy: Redis): keys never evicted (`maxmemory-policy
 * noeviction`), or jobs and their locks vanish under memory pressure; and, recommended, an
 * append-only file, so that a restarted Redis has its jobs back at once rather than as the
 * reconciler rebuilds them from Postgres.
 */

/** The exit code of a process that refuses a Redis it cannot run on: EX_CONFIG, as a bad setting's. */
const REDIS_POLICY_EXIT_CODE = 78

/** One Redis server's settings that matter to BullMQ, as its INFO gives them. */
interface RedisPolicy {
  maxmemoryPolicy: string | undefined
  appendOnly: boolean | undefined
}

const infoField = (info: string, name: string): string | undefined => new RegExp(`^${name}:(.*?)\\r?$`, 'm').exec(info)?.[1]

/** The policy of each server holding keys: the server, or each master of a cluster. INFO works where CONFIG is refused (managed Redis). */
async function readRedisPolicies (connection: RedisConnection): Promise<RedisPolicy[]> {
  const servers = connection instanceof Cluster ? connection.nodes('master') : [connection]
  return await Promise.all(servers.map(async (server) => {
    const info = await server.info()
    const appendOnly = infoField(info, 'aof_enabled')
    return { maxmemoryPolicy: infoField(info, 'maxmemory_policy'), appendOnly: appendOnly === undefined ? undefined : appendOnly === '1' }
  }))
}

export interface RedisPolicyCheckOptions {
  /** NODE_ENV=production: a Redis that may evict keys is refused, not only warned about. */
  production: boolean
  logger: Pick<Logger, 'fatal' | 'warn'>
  /** Ends the process (`REDIS_POLICY_EXIT_CODE`) once the refusal is logged. */
  exit: (code: number) => void
}

/**
 * Checks Redis once it first answers (a process starts while Redis is down, README, Operations:
 * Store outages): a `maxmemory-policy` other than noeviction is fatal in production (logged, then
 * `exit`) and a warning elsewhere; no append-only file is a warning in production. A Redis that
 * will not say (INFO refused) is a warning.
 */
export function checkRedisPolicy (connection: RedisConnection, { production, logger, exit }: RedisPolicyCheckOptions): void {
  const check = async (): Promise<void> => {
    let policies: RedisPolicy[]
    try {
      policies = await readRedisPolicies(connection)
    } catch (err) {
      logger.warn({ err }, 'could not read Redis\'s maxmemory-policy: BullMQ needs noeviction (README, Deploy: Redis)')
      return
    }
    const evicting = policies.find(({ maxmemoryPolicy }) => maxmemoryPolicy !== undefined && maxmemoryPolicy !== 'noeviction')
    if (evicting !== undefined) {
      const message = `Redis's maxmemory-policy is ${evicting.maxmemoryPolicy}: BullMQ needs noeviction, or queued jobs are lost when Redis is full (README, Deploy: Redis)`
      if (production) {
        logger.fatal({ maxmemoryPolicy: evicting.maxmemoryPolicy }, `${message}; refusing to run with NODE_ENV=production`)
        exit(REDIS_POLICY_EXIT_CODE)
        return
      }
      logger.warn({ maxmemoryPolicy: evicting.maxmemoryPolicy }, message)
    }
    if (production && policies.some(({ appendOnly }) => appendOnly === false)) {
      logger.warn('Redis keeps no append-only file (appendonly no): after a Redis restart its jobs come back only as the reconciler rebuilds them from Postgres (README, Deploy: Redis)')
    }
  }
  // check() catches its own failures: the promise never rejects.
  if (connection.status === 'ready') {
    check().catch(() => {})
  } else {
    connection.once('ready', () => { check().catch(() => {}) })
  }
}
