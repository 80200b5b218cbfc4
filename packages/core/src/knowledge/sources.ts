import { and, desc, eq, sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { knowledgeChunks, knowledgeSources, type KnowledgeFaqPair, type KnowledgeSource, type KnowledgeSourceStatus, type KnowledgeSourceType } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import { KNOWLEDGE_INDEX, KNOWLEDGE_INDEX_JOB, type Queues } from '../queues/catalog.ts'
import { noteOwners } from '../queues/fair-share.ts'
import { checkSavedQuotas, type Quotas } from '../users/quotas.ts'
import { DEFAULT_PDF_LIMITS } from './pdf.ts'

/** The bounds of a source (README, Knowledge). */
export const KNOWLEDGE_LIMITS = {
  titleMaxChars: 200,
  urlMaxChars: 2048,
  /** A text or Markdown document, a URL's page once read as text, and a PDF's text. */
  textMaxBytes: DEFAULT_PDF_LIMITS.maxTextBytes,
  /** A PDF, uploaded or fetched: the route's own body limit too. */
  pdfMaxBytes: DEFAULT_PDF_LIMITS.maxBytes,
  faqMaxPairs: 1000,
  faqQuestionMaxChars: 1000,
  faqAnswerMaxChars: 10_000,
  /** Passages per source: 5 MiB of text makes about 5,000. */
  chunksPerSource: 10_000,
  /** A search's query, in characters. */
  queryMaxChars: 1000
}

/**
 * PostgreSQL's built-in text search configurations (present since PostgreSQL 13): a source's
 * language chooses its stemming and stop words; `simple` has neither and suits any language.
 */
export const KNOWLEDGE_LANGUAGES = ['simple', 'arabic', 'danish', 'dutch', 'english', 'finnish', 'french', 'german', 'greek', 'hungarian', 'indonesian', 'irish', 'italian', 'lithuanian', 'nepali', 'norwegian', 'portuguese', 'romanian', 'russian', 'spanish', 'swedish', 'tamil', 'turkish'] as const
export const DEFAULT_KNOWLEDGE_LANGUAGE = 'english'

/** What a new source is given: its text, its FAQ pairs, its URL, or a PDF's bytes. */
export type NewKnowledgeSource = { title: string, language: string } & (
  | { type: 'text' | 'markdown', body: string }
  | { type: 'faq', faq: KnowledgeFaqPair[] }
  | { type: 'url', url: string }
  | { type: 'pdf', upload: Buffer }
)

export interface KnowledgeSourceView {
  id: string
  type: KnowledgeSourceType
  title: string
  url: string | null
  language: string
  status: KnowledgeSourceStatus
  error: string | null
  chunks: number
  pages: number | null
  bytes: number
  createdAt: Date
  indexedAt: Date | null
}

export interface KnowledgeChunkView { ordinal: number, heading: string, page: number | null, content: string }

/** The passages a source's view shows. */
const CHUNKS_SHOWN = 200

const viewColumns = {
  id: knowledgeSources.id,
  type: knowledgeSources.type,
  title: knowledgeSources.title,
  url: knowledgeSources.url,
  language: knowledgeSources.language,
  status: knowledgeSources.status,
  error: knowledgeSources.error,
  chunks: knowledgeSources.chunkCount,
  pages: knowledgeSources.pages,
  bytes: knowledgeSources.bytes,
  createdAt: knowledgeSources.createdAt,
  indexedAt: knowledgeSources.indexedAt
}

/** What an add or a re-index answers: the source's view, and what queues its indexing. */
const requestColumns = { ...viewColumns, requestedAt: knowledgeSources.requestedAt, userId: knowledgeSources.userId }
type SourceRequested = KnowledgeSourceView & IndexRequest

const notFound = (): DomainError => new DomainError('KNOWLEDGE_SOURCE_NOT_FOUND', 'Knowledge source not found')

/** The job that indexes a source as it was last asked to be: re-adding it (the reconciler) never queues it twice. */
const indexJobId = (source: { id: string, requestedAt: Date }): string => `${source.id}:index:${source.requestedAt.getTime()}`

/** A source asked to be indexed: by whom, and when (its job's id). */
export type IndexRequest = Pick<KnowledgeSource, 'id' | 'requestedAt' | 'userId'>

/** Queues the indexing of sources, after the commit that asked for it. */
export async function enqueueIndexing (queues: Queues, sources: IndexRequest[]): Promise<void> {
  if (sources.length === 0) return
  // The adders use the queue: a worker then keeps each of them within their share while others do (queues/fair-share.ts).
  await noteOwners(queues[KNOWLEDGE_INDEX], sources.flatMap(({ userId }) => userId ?? []))
  await queues[KNOWLEDGE_INDEX].addBulk(sources.map((source) => ({
    name: KNOWLEDGE_INDEX_JOB,
    data: { sourceId: source.id, ...(source.userId !== null && { userId: source.userId }) },
    opts: { jobId: indexJobId(source) }
  })))
}

/**
 * The reconciler's requeue of sources still indexing after `graceMs` (their job lost with Redis, or
 * never queued): by the job id they had, so a job still there is not queued twice.
 */
export function indexingRequeue ({ db, queues, graceMs }: { db: DbOrTx, queues: Queues, graceMs: number }): () => Promise<number> {
  return async () => {
    const sources = await knowledgeSourcesRepository(db).stillIndexing(graceMs, 1000)
    await enqueueIndexing(queues, sources)
    return sources.length
  }
}

/** Knowledge sources of platform numbers: each statement names the number, so another number's source is not found. */
export function knowledgeSourcesRepository (db: DbOrTx) {
  return {
    /** Adds a source of `userId`, within their quota (USER_QUOTA_KNOWLEDGE_SOURCES), written `indexing`; a PDF's bytes are not read back. */
    async add (phoneNumberId: string, userId: string, source: NewKnowledgeSource, quotaDefaults: Quotas): Promise<SourceRequested> {
      const bytes = source.type === 'pdf' ? source.upload.byteLength : source.type === 'faq' ? Buffer.byteLength(JSON.stringify(source.faq)) : source.type === 'url' ? 0 : Buffer.byteLength(source.body)
      return await db.transaction(async (tx) => {
        const [row] = await tx.insert(knowledgeSources).values({
          phoneNumberId,
          userId,
          type: source.type,
          title: source.title,
          language: source.language,
          bytes,
          ...(source.type === 'pdf' && { upload: source.upload }),
          ...((source.type === 'text' || source.type === 'markdown') && { body: source.body }),
          ...(source.type === 'faq' && { faq: source.faq }),
          ...(source.type === 'url' && { url: source.url })
        }).returning(requestColumns)
        await checkSavedQuotas(tx, userId, quotaDefaults, ['knowledgeSources'])
        return row!
      })
    },

    async list (phoneNumberId: string): Promise<KnowledgeSourceView[]> {
      return await db.select(viewColumns).from(knowledgeSources)
        .where(eq(knowledgeSources.phoneNumberId, phoneNumberId))
        .orderBy(desc(knowledgeSources.createdAt), desc(knowledgeSources.id))
    },

    async get (phoneNumberId: string, id: string): Promise<KnowledgeSourceView & { chunkList: KnowledgeChunkView[] }> {
      const [source] = await db.select(viewColumns).from(knowledgeSources)
        .where(and(eq(knowledgeSources.id, id), eq(knowledgeSources.phoneNumberId, phoneNumberId))).limit(1)
      if (source === undefined) throw notFound()
      const chunkList = await db.select({ ordinal: knowledgeChunks.ordinal, heading: knowledgeChunks.heading, page: knowledgeChunks.page, content: knowledgeChunks.content })
        .from(knowledgeChunks).where(eq(knowledgeChunks.sourceId, id)).orderBy(knowledgeChunks.ordinal).limit(CHUNKS_SHOWN)
      return { ...source, chunkList }
    },

    /** Deletes a source with its passages. */
    async remove (phoneNumberId: string, id: string): Promise<void> {
      const deleted = await db.delete(knowledgeSources)
        .where(and(eq(knowledgeSources.id, id), eq(knowledgeSources.phoneNumberId, phoneNumberId))).returning({ id: knowledgeSources.id })
      if (deleted.length === 0) throw notFound()
    },

    /**
     * Asks for a source to be indexed again (after AI_EMBEDDING_MODEL changed, or a URL's fetch
     * failed): its passages stay searchable until the new ones replace them.
     */
    async reindex (phoneNumberId: string, id: string): Promise<SourceRequested> {
      const [row] = await db.update(knowledgeSources)
        .set({ status: 'indexing', error: null, requestedAt: sql`clock_timestamp()` })
        .where(and(eq(knowledgeSources.id, id), eq(knowledgeSources.phoneNumberId, phoneNumberId))).returning(requestColumns)
      if (row === undefined) throw notFound()
      return row
    },

    /** Sources indexing since before `graceMs` ago whose job may be lost (the reconciler queues them again, by the same job id). */
    async stillIndexing (graceMs: number, limit: number): Promise<IndexRequest[]> {
      return await db.select({ id: knowledgeSources.id, requestedAt: knowledgeSources.requestedAt, userId: knowledgeSources.userId }).from(knowledgeSources)
        .where(and(eq(knowledgeSources.status, 'indexing'), sql`${knowledgeSources.requestedAt} < now() - make_interval(secs => ${graceMs / 1000})`))
        .orderBy(knowledgeSources.requestedAt).limit(limit)
    }
  }
}
