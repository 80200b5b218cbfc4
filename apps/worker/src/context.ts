import { assistantRunner, assistantSettings, nodeModelProvider, wakeTurn, type AssistantRunner } from '@switchboard/core/assistant'
import { consentKeywords, conversationsRepository, createChatClient, createChatSender, createChatService, type ChatService, type ConsentKeywords } from '@switchboard/core/chat'
import type { Config } from '@switchboard/core/config'
import { createCredentialVault } from '@switchboard/core/credentials'
import type { Database } from '@switchboard/core/db'
import { keyringOf } from '@switchboard/core/encryption'
import { codeSandboxLimitsOf, createCodeSandboxPool, createHttpClient, createRunEngine, type RunEngine } from '@switchboard/core/engine'
import { knowledgeIndexer, knowledgeRetrieval, type KnowledgeIndexer } from '@switchboard/core/knowledge'
import type { Logger } from '@switchboard/core/logger'
import { eventDeliverer, type EventDeliverer } from '@switchboard/core/subscriptions'
import { dispatchEvents } from '@switchboard/core/triggers'
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
  /** Knowledge sources read, split and embedded (README, Knowledge); URLs through the same guarded client. */
  knowledge: KnowledgeIndexer
}

/** Builds the processor of queue `Q` from the worker's shared context. */
export type ProcessorFactory<Q extends QueueName> = (context: WorkerContext) => QueueProcessor<Q>

/**
 * The processors' context on the worker's connections: the run engine, the assistant, consent,
 * the chat service and the deliverer, with what they open (the http_request client, the chat
 * platform's client, the code sandboxes) closed by `close`.
 */
export function createWorkerContext (connections: Pick<WorkerContext, 'config' | 'logger' | 'database' | 'queues' | 'redis'>): { context: WorkerContext, close: () => Promise<void> } {
  const { config, logger, database, queues } = connections
  const http = createHttpClient({ allowPrivate: config.httpRequestAllowPrivate })
  // Threads start with the first code node a run reaches; each owner's code holds at most its share of them while others run code too.
  const code = createCodeSandboxPool({ threads: config.codeSandbox.threads, limits: codeSandboxLimitsOf(config), share: config.workerUserShare })
  const chatClient = createChatClient({ apiUrl: config.chat.apiUrl })
  const chatService = createChatService({ db: database.db, config, client: chatClient, logger })
  const chat = createChatSender(chatService, conversationsRepository(database.db))
  const events = { db: database.db, queues, logger, eventFanoutMax: config.limits.eventFanoutMax }
  const keyring = keyringOf(config)
  const engine = createRunEngine({
    db: database.db,
    queues,
    logger,
    nodeOutputMaxBytes: config.nodeOutputMaxBytes,
    runResultMaxBytes: config.runResultMaxBytes,
    quotas: config.quotas,
    httpRequestTraceparent: config.tracing.httpRequestTraceparent,
    subworkflowMaxDepth: config.limits.subworkflowMaxDepth,
    foreachMaxItems: config.limits.foreachMaxItems,
    nodes: { chat, http: http.dispatcher, code, ai: nodeModelProvider(config.ai) },
    credentials: createCredentialVault({ db: database.db, keyring }),
    dispatchEvents: async (eventIds) => await dispatchEvents(events, { ids: eventIds }),
    wakeAssistantTurn: async (turnId) => { await wakeTurn({ db: database.db, queues }, turnId) }
  })
  const settings = assistantSettings({ db: database.db, config })
  const embedder = settings.embedder
  const knowledge = knowledgeIndexer({ db: database.db, logger, dispatcher: http.dispatcher, allowPrivate: config.httpRequestAllowPrivate, embedder })
  const retrieval = knowledgeRetrieval({ db: database.db, embedder, logger, minSimilarity: config.ai.embeddingMinSimilarity, vectorCacheBytes: config.ai.knowledgeVectorCacheBytes })
  const assistant = assistantRunner({ db: database.db, config, logger, queues, chat: chatService, settings, retrieval })
  const consent = consentKeywords({ db: database.db, chat: chatService, logger })
  const deliverer = eventDeliverer({ db: database.db, keyring, dispatcher: http.dispatcher, config: config.eventSubscriptions, logger })
  return {
    context: { ...connections, engine, assistant, consent, chat: chatService, deliverer, knowledge },
    close: async () => { await Promise.all([http.close(), chatClient.close(), code.close()]) }
  }
}
