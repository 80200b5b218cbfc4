import { and, eq, sql } from 'drizzle-orm'
import type { Config } from '../config.ts'
import { openCredentialData } from '../credentials/data.ts'
import type { DbOrTx } from '../db/client.ts'
import { chatAssistants, credentials, type ChatAssistant } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import { keyringOf } from '../encryption.ts'
import { createModelClient, type ModelClient } from './model.ts'

/** Bounds of an account's assistant settings (README, The assistant). */
export const MAX_INSTRUCTIONS_CHARS = 8000
export const MAX_MODEL_NAME_CHARS = 200
/** How long a conversation stays quiet before a turn answers its burst of messages (README, The assistant: bursts). */
export const DEFAULT_DEBOUNCE_MS = 1500
export const MAX_DEBOUNCE_MS = 30_000

export interface AssistantSettings {
  instructions: string
  answerAlways: boolean
  /** The account's model; null: AI_MODEL. */
  model: string | null
  /** A bearer credential of the one who set it, whose token replaces AI_API_KEY; null: AI_API_KEY. */
  apiKeyCredentialId: string | null
  /** A turn starts once the conversation has been quiet this long, and at most 3 times this long after the burst's first message. */
  debounceMs: number
  /** Hand the conversation to a person when the knowledge has nothing relevant, instead of answering (README, Knowledge). */
  answerFromKnowledgeOnly: boolean
}

export interface AssistantSettingsView extends AssistantSettings {
  /** The model turns use (the account's, else AI_MODEL), null when the assistant is off for want of one. */
  effectiveModel: string | null
  updatedAt: Date | null
}

const DEFAULTS: AssistantSettings = { instructions: '', answerAlways: false, model: null, apiKeyCredentialId: null, debounceMs: DEFAULT_DEBOUNCE_MS, answerFromKnowledgeOnly: false }

const settingsOf = (row: ChatAssistant | undefined): AssistantSettings => row === undefined
  ? DEFAULTS
  : { instructions: row.instructions, answerAlways: row.answerAlways, model: row.model, apiKeyCredentialId: row.apiKeyCredentialId, debounceMs: row.debounceMs, answerFromKnowledgeOnly: row.answerFromKnowledgeOnly }

/** A provider ready to call for one platform number: the client and the model it asks for. */
export interface NumberProvider {
  client: ModelClient
  model: string
  settings: AssistantSettings
}

/**
 * The assistant settings of each platform number, and the provider they resolve to: the
 * environment's (AI_API_URL, AI_API_KEY, AI_MODEL) with the number's model and key over it.
 * Clients are kept per key, so a worker holds one connection pool per provider key in use.
 */
export function assistantSettings ({ db, config }: { db: DbOrTx, config: Config }) {
  const keyring = keyringOf(config)
  const clients = new Map<string, ModelClient>()
  const clientFor = (apiKey: string | undefined): ModelClient => {
    const key = apiKey ?? ''
    let client = clients.get(key)
    if (client === undefined) {
      client = createModelClient({ ...config.ai, apiKey })
      clients.set(key, client)
    }
    return client
  }

  async function get (phoneNumberId: string): Promise<ChatAssistant | undefined> {
    const [row] = await db.select().from(chatAssistants).where(eq(chatAssistants.phoneNumberId, phoneNumberId)).limit(1)
    return row
  }

  return {
    async view (phoneNumberId: string): Promise<AssistantSettingsView> {
      const row = await get(phoneNumberId)
      const settings = settingsOf(row)
      return { ...settings, effectiveModel: settings.model ?? config.ai.model ?? null, updatedAt: row?.updatedAt ?? null }
    },

    /** `userId` sets them; a key credential must be one of theirs and a bearer credential. */
    async save (phoneNumberId: string, userId: string, settings: AssistantSettings): Promise<AssistantSettingsView> {
      if (settings.apiKeyCredentialId !== null) {
        const [credential] = await db.select({ type: credentials.type }).from(credentials)
          .where(and(eq(credentials.id, settings.apiKeyCredentialId), eq(credentials.userId, userId))).limit(1)
        if (credential === undefined) throw new DomainError('CREDENTIAL_NOT_FOUND', 'Credential not found')
        if (credential.type !== 'bearer') throw new DomainError('VALIDATION_ERROR', 'apiKeyCredentialId must name a bearer credential (its token is the provider key)')
      }
      const values = { ...settings, updatedBy: userId, updatedAt: new Date() }
      await db.insert(chatAssistants).values({ phoneNumberId, ...values })
        .onConflictDoUpdate({ target: chatAssistants.phoneNumberId, set: values })
      return this.view(phoneNumberId)
    },

    /** The provider of a number's turns, or why there is none (the assistant is off, never an error per message). */
    async provider (phoneNumberId: string): Promise<NumberProvider | { off: string }> {
      const settings = settingsOf(await get(phoneNumberId))
      const model = settings.model ?? config.ai.model
      if (model === undefined) return { off: 'no model is configured (AI_MODEL, or the account\'s model)' }
      return { client: await clientOf(settings), model, settings }
    },

    /** The client that embeds a number's knowledge and queries (README, Knowledge), with the number's key; undefined without AI_EMBEDDING_MODEL. */
    async embedder (phoneNumberId: string): Promise<{ client: ModelClient, model: string, dimensions?: number } | undefined> {
      const { embeddingModel: model, embeddingDimensions: dimensions } = config.ai
      if (model === undefined) return undefined
      return { client: await clientOf(settingsOf(await get(phoneNumberId))), model, ...(dimensions !== undefined && { dimensions }) }
    }
  }

  async function clientOf (settings: AssistantSettings): Promise<ModelClient> {
    let apiKey = config.ai.apiKey
    if (settings.apiKeyCredentialId !== null) {
      const [credential] = await db.execute<{ data: string }>(sql`select data_encrypted as data from credentials where id = ${settings.apiKeyCredentialId}`)
      if (credential !== undefined) apiKey = openCredentialData(keyring, credential.data).token
    }
    return clientFor(apiKey)
  }
}

export type AssistantSettingsStore = ReturnType<typeof assistantSettings>
