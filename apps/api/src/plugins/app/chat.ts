import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import {
  broadcastsService, cannedRepliesRepository, CHAT_CHANGES_CHANNEL, chatAccountsRepository, chatChangeFeed, chatDeliveriesRepository, consentSettings, contactsRepository,
  conversationsRepository, createChatClient, createChatService, DEFAULT_ACCOUNT_ID, labelsRepository, mediaDownloads, notesRepository, templatesService,
  type BroadcastsService, type CannedRepliesRepository, type ChatAccountsRepository, type ChatChangeFeed, type ChatDeliveriesRepository, type ChatService,
  type ConsentSettingsStore, type ContactsRepository, type ConversationsRepository, type LabelsRepository, type MediaDownloads, type NotesRepository, type TemplatesService,
  type UsableChatAccount
} from '@switchboard/core/chat'
import { knowledgeRetrieval, knowledgeSourcesRepository, type KnowledgeRetrieval } from '@switchboard/core/knowledge'
import { assistantSettings, assistantTurnsRepository, draftsService, type AssistantSettingsStore, type AssistantTurnsRepository, type DraftsService } from '@switchboard/core/assistant'
import { forbidden } from '@switchboard/core/errors'
import { isAdmin, USER_CHANGES_CHANNEL, viewerOf } from '@switchboard/core/users'

declare module 'fastify' {
  interface FastifyInstance {
    chat: ChatService
    chatAccounts: ChatAccountsRepository
    conversations: ConversationsRepository
    /** Conversations' private notes. */
    conversationNotes: NotesRepository
    /** Each number's contacts, and their consent. */
    contacts: ContactsRepository
    /** Each number's canned replies. */
    cannedReplies: CannedRepliesRepository
    /** Templates made here: submitted to the platform, stored with the status its review gives them. */
    chatTemplates: TemplatesService
    /** Each number's labels, as its conversations and contacts carry them. */
    chatLabels: LabelsRepository
    /** The inbox's changes this process hears, passed to its event streams (GET /api/chat/events). */
    chatChanges: ChatChangeFeed
    /** Each number's opt-out and opt-in keywords and confirmations. */
    consentSettings: ConsentSettingsStore
    /** A message's media, streamed from the platform within CHAT_MEDIA_MAX_BYTES and CHAT_MEDIA_TIMEOUT_MS. */
    chatMedia: MediaDownloads
    /** Inbound webhook deliveries, stored before the worker processes them. */
    chatDeliveries: ChatDeliveriesRepository
    /** Broadcasts: created and controlled here, sent by the worker. */
    broadcasts: BroadcastsService
    /** Staff decisions on the assistant's drafts. */
    drafts: DraftsService
    /** Each number's assistant settings and provider. */
    assistantSettings: AssistantSettingsStore
    assistantTurns: AssistantTurnsRepository
    /** Each number's knowledge sources, and what the assistant's turns would retrieve from them (README, Knowledge). */
    knowledgeSources: ReturnType<typeof knowledgeSourcesRepository>
    knowledgeRetrieval: KnowledgeRetrieval
    /** The chat account a request acts on: X-Account-Id, or the caller's only usable account. */
    chatAccountFor: (request: FastifyRequest) => Promise<UsableChatAccount>
    /**
     * The account a route's `:id` names (a linked account or `default`) for its settings: whoever can
     * use it reads them; `change`: only admins change the installation's default account's (README, Chat).
     */
    chatAccountSettingsOf: (request: FastifyRequest, id: string, access: 'read' | 'change') => Promise<UsableChatAccount>
  }
}

/** Event streams one user may hold at once, and one api process (README, The team inbox). */
const EVENT_STREAMS = { maxPerUser: 10, maxStreams: 1000 }

/**
 * One platform client (a pooled connection set) for the whole API process, closed with the server;
 * one listener of the inbox's changes, whoever made them (this replica, another, a worker).
 */
async function chat (fastify: FastifyInstance): Promise<void> {
  const client = createChatClient({ apiUrl: fastify.config.chat.apiUrl })
  const service = createChatService({ db: fastify.db, config: fastify.config, client, logger: fastify.log })
  fastify.decorate('chat', service)
  fastify.decorate('chatAccounts', chatAccountsRepository(fastify.db))
  fastify.decorate('conversations', conversationsRepository(fastify.db))
  fastify.decorate('conversationNotes', notesRepository(fastify.db))
  fastify.decorate('contacts', contactsRepository(fastify.db))
  fastify.decorate('cannedReplies', cannedRepliesRepository(fastify.db))
  fastify.decorate('chatTemplates', templatesService({ db: fastify.db, config: fastify.config, client }))
  fastify.decorate('chatLabels', labelsRepository(fastify.db))
  fastify.decorate('consentSettings', consentSettings(fastify.db))
  fastify.decorate('chatMedia', mediaDownloads({ db: fastify.db, client, maxBytes: fastify.config.chat.mediaMaxBytes, timeoutMs: fastify.config.chat.mediaTimeoutMs, logger: fastify.log }))
  fastify.decorate('chatDeliveries', chatDeliveriesRepository(fastify.db))
  fastify.decorate('broadcasts', broadcastsService({ db: fastify.db, queues: fastify.queues }))
  fastify.decorate('drafts', draftsService({ db: fastify.db, chat: service }))
  const settings = assistantSettings({ db: fastify.db, config: fastify.config })
  fastify.decorate('assistantSettings', settings)
  fastify.decorate('knowledgeSources', knowledgeSourcesRepository(fastify.db))
  fastify.decorate('knowledgeRetrieval', knowledgeRetrieval({
    db: fastify.db,
    embedder: settings.embedder,
    logger: fastify.log,
    minSimilarity: fastify.config.ai.embeddingMinSimilarity,
    vectorCacheBytes: fastify.config.ai.knowledgeVectorCacheBytes
  }))
  fastify.decorate('assistantTurns', assistantTurnsRepository(fastify.db))
  fastify.decorate('chatAccountFor', async (request: FastifyRequest) => {
    const header = request.headers['x-account-id']
    const requested = Array.isArray(header) ? header[0] : header
    return service.accounts.select(
      viewerOf(request.user),
      requested === undefined || requested.trim() === '' ? undefined : requested.trim()
    )
  })
  fastify.decorate('chatAccountSettingsOf', async (request: FastifyRequest, id: string, access: 'read' | 'change') => {
    const viewer = viewerOf(request.user)
    const account = await service.accounts.select(viewer, id)
    if (access === 'change' && account.id === DEFAULT_ACCOUNT_ID && !isAdmin(viewer)) throw forbidden()
    return account
  })
  const changes = chatChangeFeed(EVENT_STREAMS)
  fastify.decorate('chatChanges', changes)
  // Announcements made while the listener was away are lost: the streams are told to read everything again.
  // A user deleted, or whose role or password changed, loses their streams: reconnecting checks their token again.
  fastify.addHook('onReady', async () => {
    await fastify.database.listener.listen(CHAT_CHANGES_CHANNEL, changes.publish, changes.missed)
    await fastify.database.listener.listen(USER_CHANGES_CHANNEL, changes.endUser)
  })
  // Before the server closes: it waits for every response, and a stream never ends by itself.
  fastify.addHook('preClose', async () => { changes.close() })
  fastify.addHook('onClose', async () => { await client.close() })
}

export default fp(chat, { name: 'chat', dependencies: ['context'] })
