import { sql } from 'drizzle-orm'
import { LRUCache } from 'lru-cache'
import type { ModelClient } from '../assistant/model.ts'
import type { DbOrTx } from '../db/client.ts'
import type { KnowledgeCitation } from '../db/schema/index.ts'
import type { Logger } from '../logger.ts'
import { KNOWLEDGE_LIMITS } from './sources.ts'

/**
 * Retrieval (README, Knowledge: retrieval): the passages of a number's sources that answer a
 * query. PostgreSQL's full-text search always, in each source's language, over the GIN index of
 * the passages' words; when AI_EMBEDDING_MODEL is set, the query's embedding against the
 * passages' too, computed here from vectors kept in memory per number (no database extension can
 * be assumed). The two rankings are fused by their ranks (reciprocal rank fusion), and only
 * relevant passages are answered: those holding at least half of the query's words, or whose
 * embedding is at least AI_EMBEDDING_MIN_SIMILARITY close to the query's.
 */

export type RetrievedPassage = {
  [field in keyof KnowledgeCitation]: KnowledgeCitation[field]
} & {
  content: string
  /** The fused score: higher first. */
  score: number
}

/** The client that embeds a number's passages and queries, with the number's key; undefined without AI_EMBEDDING_MODEL. */
export type KnowledgeEmbedder = (phoneNumberId: string) => Promise<{ client: ModelClient, model: string, dimensions?: number } | undefined>

/** Candidates each ranking gives the fusion. */
const CANDIDATES = 50
/** Reciprocal rank fusion's constant: a candidate's share is 1 / (RRF_K + its rank). */
const RRF_K = 60
/** A passage holding this share of the query's distinct words is relevant. */
const MIN_WORD_COVERAGE = 0.5
export const DEFAULT_PASSAGES = 5
export const MAX_PASSAGES = 20

type Candidate = RetrievedPassage & { id: string }

/**
 * A number's embedded passages, by their vectors' length: one model's (a passage embedded by a model
 * since replaced, and not indexed again, is in another group, which a query of the new model skips).
 * Each group's vectors lie end to end in one array, which the scoring loop reads in order.
 */
interface NumberVectors {
  /** `count:latest indexedAt` of the number's sources (`sourcesOf`). */
  version: string
  groups: Map<number, { ids: string[], matrix: Float32Array }>
  bytes: number
}

export interface KnowledgeRetrieval {
  search: (phoneNumberId: string, query: string, options?: { limit?: number }) => Promise<RetrievedPassage[]>
}

export function knowledgeRetrieval ({ db, embedder, logger, minSimilarity, vectorCacheBytes }: {
  db: DbOrTx
  embedder: KnowledgeEmbedder
  logger: Pick<Logger, 'warn'>
  minSimilarity: number
  vectorCacheBytes: number
}): KnowledgeRetrieval {
  const cache = new LRUCache<string, NumberVectors>({
    maxSize: vectorCacheBytes,
    sizeCalculation: (entry) => Math.max(1, entry.bytes)
  })

  async function textCandidates (phoneNumberId: string, query: string): Promise<Array<Candidate & { coverage: number }>> {
    // The query's words in each language of the number's sources, any of them matching (`|`); the share of them
    // a passage holds is computed for the best-ranked candidates only.
    return await db.execute<Candidate & { coverage: number }>(sql`
      with terms as (
        select l.language, array(select distinct word from unnest(tsvector_to_array(to_tsvector(l.language::regconfig, ${query}))) word) as words
        from (select distinct language from knowledge_sources where phone_number_id = ${phoneNumberId}) l
      ), queries as materialized (
        select language, words, array_to_string(array(select quote_literal(word) from unnest(words) word), ' | ')::tsquery as query
        from terms where cardinality(words) > 0
      ), ranked as (
        select c.id, c.source_id, c.heading, c.page, c.content, c.words, q.words as query_words, ts_rank(c.words, q.query, 32) as rank
        from queries q
        join knowledge_chunks c on c.phone_number_id = ${phoneNumberId} and c.language = q.language and c.words @@ q.query
        order by rank desc, c.id
        limit ${CANDIDATES}
      )
      select r.id, r.source_id as "sourceId", s.title, r.heading, r.page, r.content, r.rank::float8 as score,
        (select count(*) from unnest(r.query_words) word where r.words @@ quote_literal(word)::tsquery)::float8 / cardinality(r.query_words) as coverage
      from ranked r join knowledge_sources s on s.id = r.source_id
      order by r.rank desc, r.id`)
  }

  /** The query's embedding; undefined without AI_EMBEDDING_MODEL, or when the provider failed: the text ranking answers alone. */
  async function embed (phoneNumberId: string, query: string): Promise<Float32Array | undefined> {
    const provider = await embedder(phoneNumberId)
    if (provider === undefined) return undefined
    try {
      const [vector] = await provider.client.embed({ model: provider.model, inputs: [query], ...(provider.dimensions !== undefined && { dimensions: provider.dimensions }) })
      return vector
    } catch (err) {
      logger.warn({ err, phoneNumberId }, 'the query could not be embedded: knowledge found by text search only')
      return undefined
    }
  }

  /** How many sources the number has, and their version: a source added, indexed again or deleted changes it. */
  async function sourcesOf (phoneNumberId: string): Promise<{ count: number, version: string }> {
    const [state] = await db.execute<{ count: number, version: string }>(sql`
      select count(*)::int as count, count(*) || ':' || coalesce(extract(epoch from max(indexed_at))::text, '') as version
      from knowledge_sources where phone_number_id = ${phoneNumberId}`)
    return state ?? { count: 0, version: '' }
  }

  /** Loads in progress, by number and version: searches that miss the cache at once wait for one load. */
  const loading = new Map<string, Promise<NumberVectors>>()

  /** The number's embedded passages, from memory while its sources are unchanged. */
  async function vectorsOf (phoneNumberId: string, version: string): Promise<NumberVectors> {
    const cached = cache.get(phoneNumberId)
    if (cached?.version === version) return cached
    const key = `${phoneNumberId}\n${version}`
    let load = loading.get(key)
    if (load === undefined) {
      load = loadVectors(phoneNumberId, version).finally(() => { loading.delete(key) })
      loading.set(key, load)
    }
    return await load
  }

  async function loadVectors (phoneNumberId: string, version: string): Promise<NumberVectors> {
    const rows = await db.execute<{ id: string, embedding: Buffer }>(sql`
      select id, embedding from knowledge_chunks where phone_number_id = ${phoneNumberId} and embedding is not null`)
    const byLength = new Map<number, Array<{ id: string, embedding: Buffer }>>()
    for (const row of rows) {
      const dimensions = row.embedding.byteLength / 4
      const group = byLength.get(dimensions)
      if (group === undefined) byLength.set(dimensions, [row])
      else group.push(row)
    }
    const loaded: NumberVectors = { version, groups: new Map(), bytes: 0 }
    for (const [dimensions, group] of byLength) {
      const matrix = new Float32Array(group.length * dimensions)
      // Copied byte for byte: the driver's buffers need not be aligned for a Float32Array over them.
      const bytes = new Uint8Array(matrix.buffer)
      group.forEach((row, n) => { bytes.set(row.embedding, n * dimensions * 4) })
      loaded.groups.set(dimensions, { ids: group.map((row) => row.id), matrix })
      loaded.bytes += matrix.byteLength + group.length * 64
    }
    cache.set(phoneNumberId, loaded)
    return loaded
  }

  async function vectorCandidates (phoneNumberId: string, version: string, query: Float32Array): Promise<Array<Candidate & { similarity: number }>> {
    const group = (await vectorsOf(phoneNumberId, version)).groups.get(query.length)
    if (group === undefined) return []
    const { ids, matrix } = group
    const dimensions = query.length
    const tail = dimensions - dimensions % 4
    const best: Array<{ id: string, similarity: number }> = []
    // Four sums at once: twice as fast as one over 10,000 vectors of 1,536 dimensions (bench Q).
    for (let n = 0, offset = 0; n < ids.length; n++, offset += dimensions) {
      let s0 = 0
      let s1 = 0
      let s2 = 0
      let s3 = 0
      for (let i = 0; i < tail; i += 4) {
        s0 += matrix[offset + i]! * query[i]!
        s1 += matrix[offset + i + 1]! * query[i + 1]!
        s2 += matrix[offset + i + 2]! * query[i + 2]!
        s3 += matrix[offset + i + 3]! * query[i + 3]!
      }
      for (let i = tail; i < dimensions; i++) s0 += matrix[offset + i]! * query[i]!
      const similarity = s0 + s1 + s2 + s3
      if (similarity < minSimilarity) continue
      if (best.length === CANDIDATES && similarity <= best[best.length - 1]!.similarity) continue
      best.splice(sortedIndex(best, similarity), 0, { id: ids[n]!, similarity })
      if (best.length > CANDIDATES) best.pop()
    }
    if (best.length === 0) return []
    const rows = await db.execute<Candidate>(sql`
      select c.id, c.source_id as "sourceId", s.title, c.heading, c.page, c.content
      from knowledge_chunks c join knowledge_sources s on s.id = c.source_id
      where c.id in ${sql`(${sql.join(best.map((hit) => sql`${hit.id}`), sql`, `)})`}`)
    const byId = new Map(rows.map((row) => [row.id, row]))
    return best.flatMap((hit) => {
      const row = byId.get(hit.id)
      return row === undefined ? [] : [{ ...row, score: hit.similarity, similarity: hit.similarity }]
    })
  }

  return {
    async search (phoneNumberId, query, { limit = DEFAULT_PASSAGES } = {}) {
      const text = query.slice(0, KNOWLEDGE_LIMITS.queryMaxChars)
      if (text.trim() === '') return []
      // A number without knowledge (most of them) costs its turns this one read, no embedding.
      const sources = await sourcesOf(phoneNumberId)
      if (sources.count === 0) return []
      // The words are searched while the query is embedded.
      const [byText, byVector] = await Promise.all([
        textCandidates(phoneNumberId, text),
        embed(phoneNumberId, text).then(async (vector) => vector === undefined ? [] : await vectorCandidates(phoneNumberId, sources.version, vector))
      ])
      const fused = new Map<string, Candidate>()
      const add = (candidate: Candidate, rank: number): void => {
        const share = 1 / (RRF_K + rank + 1)
        const known = fused.get(candidate.id)
        if (known === undefined) fused.set(candidate.id, { ...candidate, score: share })
        else known.score += share
      }
      byText.filter((candidate) => candidate.coverage >= MIN_WORD_COVERAGE).forEach(add)
      byVector.forEach(add)
      return [...fused.values()]
        .sort((a, b) => b.score - a.score || a.id.localeCompare(b.id))
        .slice(0, Math.min(limit, MAX_PASSAGES))
        .map(({ sourceId, title, heading, page, content, score }) => ({ sourceId, title, heading, page, content, score: Math.round(score * 1e6) / 1e6 }))
    }
  }
}

/** Where `similarity` goes in `list`, kept highest first. */
function sortedIndex (list: Array<{ similarity: number }>, similarity: number): number {
  let low = 0
  let high = list.length
  while (low < high) {
    const middle = (low + high) >> 1
    if (list[middle]!.similarity >= similarity) low = middle + 1
    else high = middle
  }
  return low
}
