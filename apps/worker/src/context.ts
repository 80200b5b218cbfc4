import type { AssistantRunner } from '@switchboard/core/assistant'
import type { ConsentKeywords } from '@switchboard/core/chat'
import type { ChatService } from '@switchboard/core/chat'
import type { Config } from '@switchboard/core/config'
import type { Database } from '@switchboard/core/db'
import type { RunEngine } from '@switchboard/core/engine'
import type { Logger } from '@switchboard/core/logger'
import type { EventDeliverer } from '@switchboard/core/subscriptions'
import type { QueueName, QueueProcessor, Queues, RedisConnection } from '@switchboard/core/queues'

/** What every processor is given: the worker's shared connections and its one run engine. */
export interface WorkerContext {
  config: Config
  logger: Logger
  database: Database
  /** Producer connection, for processors that enqueue follow-up jobs. */
  queues: Queues
  redis: RedisConnection
  /** Executes runs for every run queue of this process and for the reconciler. */
  engine: RunEngine
  /** Assistant turns: created after an inbound message, worked on assistant-main. */
  assistant: AssistantRunner
  /** Opt-out and opt-in keywords: what an inbound message meets first. */
  consent: ConsentKeywords
  /** Sends through the platform as the service (the assistant's replies, broadcasts). */
  chat: ChatService
  /** Subscription deliveries, through the SSRF-guarded client of http_request. */
  deliverer: EventDeliverer
}

/** Builds the processor of queue `Q` from the worker's shared context. */
export type ProcessorFactory<Q extends QueueName> = (context: WorkerContext) => QueueProcessor<Q>
