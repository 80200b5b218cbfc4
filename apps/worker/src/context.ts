import type { Redis } from 'ioredis'
import type { Config } from '@switchboard/core/config'
import type { Database } from '@switchboard/core/db/client'
import type { NodeDependencies } from '@switchboard/core/engine/types'
import type { Logger } from '@switchboard/core/logger'
import type { Queues } from '@switchboard/core/queues/catalog'

/** What every processor is given: the worker's shared connections. */
export interface WorkerContext {
  config: Config
  logger: Logger
  database: Database
  /** Producer connection, for processors that enqueue follow-up jobs. */
  queues: Queues
  redis: Redis
  /** The one dispatcher of http_request nodes (address filtering built in). */
  http: NodeDependencies['http']
  /** How workflow chat nodes send: the chat service of the owner's accounts. */
  chat: NodeDependencies['chat']
}
