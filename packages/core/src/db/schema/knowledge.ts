import { sql } from 'drizzle-orm'
import { customType, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { createdAt, id, nullableTimestamp } from './_columns.ts'
import { users } from './users.ts'

export const KNOWLEDGE_SOURCE_TYPES = ['text', 'markdown', 'pdf', 'url', 'faq'] as const
export type KnowledgeSourceType = typeof KNOWLEDGE_SOURCE_TYPES[number]
export const KNOWLEDGE_SOURCE_STATUSES = ['indexing', 'ready', 'failed'] as const
export type KnowledgeSourceStatus = typeof KNOWLEDGE_SOURCE_STATUSES[number]

export interface KnowledgeFaqPair { question: string, answer: string }

const bytea = customType<{ data: Buffer, driverData: Buffer }>({ dataType: () => 'bytea' })
const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' })

/**
 * A document the assistant of one platform number knows (README, Knowledge), keyed like
 * chat_assistants. What it was given is kept until it is indexed (`upload`: a PDF's bytes) and
 * as text after (`body`: the text, Markdown, a URL's page as text, FAQ pairs in `faq`), so that a
 * re-index splits and embeds it again without the original.
 */
export const knowledgeSources = pgTable('knowledge_sources', {
  id: id(),
  phoneNumberId: text('phone_number_id').notNull(),
  // Who added it: their quota counts it, and the indexing queue's fair share is theirs. The number's
  // knowledge outlives them: a deleted user's sources stay.
  userId: text('user_id').references(() => users.id, { onDelete: 'set null' }),
  type: text('type', { enum: KNOWLEDGE_SOURCE_TYPES }).notNull(),
  title: text('title').notNull(),
  url: text('url'),
  // A PostgreSQL text search configuration (README, Knowledge: languages): its stemming and stop words.
  language: text('language').notNull(),
  status: text('status', { enum: KNOWLEDGE_SOURCE_STATUSES }).notNull().default('indexing'),
  error: text('error'),
  upload: bytea('upload'),
  body: text('body'),
  faq: jsonb('faq').$type<KnowledgeFaqPair[]>(),
  bytes: integer('bytes').notNull().default(0),
  pages: integer('pages'),
  chunkCount: integer('chunk_count').notNull().default(0),
  createdAt: createdAt(),
  // When the source was added or last asked to be indexed again: its indexing job's id, and a later request wins.
  requestedAt: nullableTimestamp('requested_at').notNull().defaultNow(),
  indexedAt: nullableTimestamp('indexed_at')
}, (t) => [
  index('knowledge_sources_number_idx').on(t.phoneNumberId, t.createdAt.desc()),
  index('knowledge_sources_indexing_idx').on(t.userId).where(sql`${t.status} = 'indexing'`)
])

/**
 * A passage of a source, as retrieval finds it: its heading path and page, its words for
 * PostgreSQL's full-text search (`words`, made in the source's language when written) and, when
 * AI_EMBEDDING_MODEL is set, its embedding as float32 values (`embedding`, an ordinary column: no
 * database extension).
 */
export const knowledgeChunks = pgTable('knowledge_chunks', {
  id: id(),
  sourceId: text('source_id').notNull().references(() => knowledgeSources.id, { onDelete: 'cascade' }),
  phoneNumberId: text('phone_number_id').notNull(),
  ordinal: integer('ordinal').notNull(),
  heading: text('heading').notNull().default(''),
  page: integer('page'),
  content: text('content').notNull(),
  language: text('language').notNull(),
  words: tsvector('words').notNull(),
  embedding: bytea('embedding')
}, (t) => [
  uniqueIndex('knowledge_chunks_source_ordinal_key').on(t.sourceId, t.ordinal),
  index('knowledge_chunks_number_idx').on(t.phoneNumberId),
  index('knowledge_chunks_words_idx').using('gin', t.words)
])

export type KnowledgeSource = typeof knowledgeSources.$inferSelect
