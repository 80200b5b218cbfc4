import type { Redis } from 'ioredis'
import type { Config } from '@switchboard/core/config'
import type { Database } from '@switchboard/core/db/client'
import type { Logger } from '@switchboard/core/logger'
import type { Queues } from '@switchboard/core/queues'

/** What every processor is given: the worker's shared connections. */
export interface WorkerContext {
  config: Config
  logger: Logger
  database: Database
  /** Producer connection, for processors that enqueue follow-up jobs. */
  queues: Queues
  redis: Redis
}
