import { eq, sql } from 'drizzle-orm'
import type { Dispatcher } from 'undici'
import { ModelCallError } from '../assistant/model.ts'
import type { DbOrTx } from '../db/client.ts'
import { knowledgeSources, type KnowledgeSource } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import { chunkDocument, faqLines, markdownLines, type Chunk, type DocumentLine } from './chunking.ts'
import { fetchPage, htmlLines } from './page.ts'
import type { KnowledgeEmbedder } from './retrieval.ts'
import { extractPdf, type PdfText } from './pdf.ts'
import { KNOWLEDGE_LIMITS } from './sources.ts'

/**
 * The worker's indexing of a source (README, Knowledge): its text read (a PDF's extracted, a URL's
 * page fetched once), split into passages, embedded when AI_EMBEDDING_MODEL is set, and written in
 * one transaction that replaces the passages it had. What was read is kept as the source's text, so
 * that a re-index neither needs the PDF nor fetches the page again.
 */

/** Inputs per embeddings call. */
const EMBED_BATCH = 64
/** Passages per insert statement. */
const INSERT_BATCH = 500
/** A line of its own between the pages of a PDF's kept text. */
const PAGE_BREAK = '\f'

interface Read {
  lines: DocumentLine[]
  /** The text kept for a re-index, when the source was not text already. */
  body?: string
  pages?: number
}

const fail = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)

/** A PDF's pages as kept text: a page break line before each page, its headings as Markdown headings. */
function pdfBody (pdf: PdfText): string {
  return pdf.pages.map((page) => [PAGE_BREAK, ...page.lines.map((line) => line.heading ? `## ${line.text}` : line.text)].join('\n')).join('\n')
}

/** Kept text as lines: Markdown headings, and the page each line is on when it has page breaks. */
function bodyLines (body: string): DocumentLine[] {
  if (!body.startsWith(PAGE_BREAK)) return markdownLines(body)
  let page = 0
  return markdownLines(body).flatMap((line) => {
    if (line.level === undefined && line.text === PAGE_BREAK) {
      page++
      return []
    }
    return [{ ...line, page }]
  })
}

/** The source's row as this job was asked for it: deleted, or asked again since, it is not written (the later job writes). */
const sameRequest = (source: KnowledgeSource) =>
  sql`id = ${source.id} and floor(extract(epoch from requested_at) * 1000) = ${source.requestedAt.getTime()}`

function checkTextSize (text: string): string {
  if (Buffer.byteLength(text) > KNOWLEDGE_LIMITS.textMaxBytes) throw fail(`The text is larger than ${KNOWLEDGE_LIMITS.textMaxBytes / 1024 / 1024} MiB`)
  return text
}

export function knowledgeIndexer ({ db, logger, dispatcher, allowPrivate, embedder }: {
  db: DbOrTx
  logger: Pick<Logger, 'warn' | 'error'>
  /** The SSRF-guarded dispatcher of http_request, for URL sources. */
  dispatcher: Dispatcher
  allowPrivate: boolean
  embedder: KnowledgeEmbedder
}) {
  async function read (source: KnowledgeSource): Promise<Read> {
    if (source.body !== null) return { lines: bodyLines(source.body) }
    if (source.type === 'faq') return { lines: faqLines(source.faq ?? []) }
    if (source.type === 'pdf') {
      if (source.upload === null) throw fail('The PDF is gone: add it again')
      return paged(await extractPdf(source.upload))
    }
    if (source.type === 'url' && source.url !== null) {
      const page = await fetchPage(source.url, { dispatcher, allowPrivate })
      if (page.kind === 'pdf') return paged(await extractPdf(page.bytes))
      if (page.kind === 'text') {
        const body = checkTextSize(page.text)
        return { lines: markdownLines(body), body }
      }
      checkTextSize(page.text)
      const { lines } = htmlLines(page.text)
      const body = lines.map((line) => line.level === undefined ? line.text : `${'#'.repeat(line.level)} ${line.text}`).join('\n')
      return { lines: markdownLines(body), body }
    }
    throw fail('The source has nothing to read')
  }

  function paged (pdf: PdfText): Read {
    const body = pdfBody(pdf)
    return { lines: bodyLines(body), body, pages: pdf.pages.length }
  }

  /** The passages' embeddings, or why there are none when the provider failed on the job's last attempt. */
  async function embed (source: KnowledgeSource, chunks: Chunk[], lastAttempt: boolean): Promise<{ vectors: Array<Buffer | null>, error?: string }> {
    const provider = await embedder(source.phoneNumberId)
    if (provider === undefined || chunks.length === 0) return { vectors: chunks.map(() => null) }
    const vectors: Buffer[] = []
    try {
      for (let start = 0; start < chunks.length; start += EMBED_BATCH) {
        const batch = chunks.slice(start, start + EMBED_BATCH)
        const embedded = await provider.client.embed({
          model: provider.model,
          inputs: batch.map((chunk) => chunk.heading === '' ? chunk.content : `${chunk.heading}\n${chunk.content}`),
          ...(provider.dimensions !== undefined && { dimensions: provider.dimensions })
        })
        for (const vector of embedded) vectors.push(Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength))
      }
    } catch (err) {
      if (!lastAttempt || !(err instanceof ModelCallError)) throw err
      logger.warn({ err, sourceId: source.id }, 'knowledge passages could not be embedded: text search only')
      return { vectors: chunks.map(() => null), error: `Embedding failed (${err.message}): found by text search only; index it again to embed it` }
    }
    return { vectors }
  }

  /** Writes the passages, unless the source was deleted or asked to be indexed again meanwhile (that job writes). */
  async function write (source: KnowledgeSource, chunks: Chunk[], vectors: Array<Buffer | null>, outcome: { body?: string, pages?: number, error?: string }): Promise<void> {
    await db.transaction(async (tx) => {
      const [current] = await tx.execute<{ id: string }>(sql`select id from knowledge_sources where ${sameRequest(source)} for update`)
      if (current === undefined) return
      await tx.execute(sql`delete from knowledge_chunks where source_id = ${source.id}`)
      for (let start = 0; start < chunks.length; start += INSERT_BATCH) {
        const rows = chunks.slice(start, start + INSERT_BATCH).map((chunk, n) => sql`(
          ${`${source.id}:${start + n}`}, ${source.id}, ${source.phoneNumberId}, ${start + n}, ${chunk.heading}, ${chunk.page}, ${chunk.content}, ${source.language},
          setweight(to_tsvector(${source.language}::regconfig, ${chunk.heading}), 'A') || to_tsvector(${source.language}::regconfig, ${chunk.content}), ${vectors[start + n]})`)
        await tx.execute(sql`insert into knowledge_chunks (id, source_id, phone_number_id, ordinal, heading, page, content, language, words, embedding) values ${sql.join(rows, sql`, `)}`)
      }
      await tx.execute(sql`
        update knowledge_sources set status = 'ready', error = ${outcome.error ?? null}, chunk_count = ${chunks.length}, upload = null, indexed_at = clock_timestamp(),
          body = coalesce(${outcome.body ?? null}, body), pages = coalesce(${outcome.pages ?? null}, pages)
        where id = ${source.id}`)
    })
  }

  async function failSource (source: KnowledgeSource, error: string): Promise<void> {
    await db.execute(sql`
      update knowledge_sources set status = 'failed', error = ${error.slice(0, 1000)}, indexed_at = clock_timestamp()
      where ${sameRequest(source)}`)
  }

  return {
    /**
     * Indexes a source that waits for it. Content that cannot be read fails the source with the
     * reason; anything else is thrown, for the job to be tried again, and fails it on the last attempt.
     */
    async index (sourceId: string, { lastAttempt }: { lastAttempt: boolean }): Promise<void> {
      const [source] = await db.select().from(knowledgeSources).where(eq(knowledgeSources.id, sourceId)).limit(1)
      if (source === undefined || source.status !== 'indexing') return
      try {
        const { lines, body, pages } = await read(source)
        const chunks = chunkDocument(lines, KNOWLEDGE_LIMITS.chunksPerSource)
        if (chunks.length === 0) throw fail('The source has no text to index')
        const { vectors, error } = await embed(source, chunks, lastAttempt)
        await write(source, chunks, vectors, { body, pages, error })
      } catch (err) {
        if (err instanceof DomainError) return await failSource(source, err.message)
        if (!lastAttempt) throw err
        logger.error({ err, sourceId }, 'knowledge source indexing failed')
        await failSource(source, `Indexing failed: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
  }
}

export type KnowledgeIndexer = ReturnType<typeof knowledgeIndexer>
