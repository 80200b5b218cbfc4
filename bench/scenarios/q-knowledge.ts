import { fakeEmbedding, fakeModelEnv, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'
import { load } from '../lib/load.ts'
import { failureNote, metric, type Metric, type ScenarioResult } from '../lib/report.ts'
import { startStack, type BenchContext, type Stack } from '../lib/stack.ts'
import { seconds } from '../lib/workflows.ts'

const CHUNKS = 10_000
const SOURCES = 100
/** The dimensions of the common hosted embedding models (text-embedding-3-small, ada-002). */
const DIMENSIONS = 1536
/** One search at a time (a turn's retrieval, the target's), then four at once on this machine's cores. */
const CONNECTIONS = [1, 4]
/** Issue 46's target for retrieval over 10,000 passages. */
const P99_TARGET_MS = 50
const ROWS_PER_INSERT = 250

const ITEMS = ['bicycle', 'helmet', 'lock', 'saddle', 'tyre', 'pedal', 'chain', 'light', 'pump', 'basket', 'bell', 'mirror', 'glove', 'jacket', 'bottle', 'rack', 'fender', 'brake', 'gear', 'frame']
const COLOURS = ['red', 'blue', 'green', 'black', 'white', 'silver', 'orange', 'yellow']
const TOPICS = ['warranty', 'returns', 'delivery', 'assembly', 'cleaning', 'storage', 'safety', 'sizing']
const passage = (n: number): { heading: string, content: string } => {
  const item = ITEMS[n % ITEMS.length]!
  const topic = TOPICS[Math.floor(n / ITEMS.length) % TOPICS.length]!
  return {
    heading: `${item} › ${topic}`,
    content: `The ${COLOURS[n % COLOURS.length]} ${item} model ${n} comes with ${topic} terms of ${n % 24 + 1} months. ` +
      `Ask the shop about ${topic} of any ${item}; prices start at ${(n % 90) * 10 + 20} euros and shipping takes ${n % 5 + 1} days.`
  }
}

/**
 * 10,000 passages of 100 sources of the default account, written as the indexer writes them (their
 * words in English, their 1,536-dimension embeddings as float32), then VACUUM ANALYZE.
 */
async function seed (stack: Stack, userId: string, embedded: boolean): Promise<void> {
  await stack.sql.unsafe(`
    insert into knowledge_sources (id, phone_number_id, user_id, type, title, language, status, body, chunk_count, indexed_at)
    select 'qsrc' || i, 'default-number', $1, 'text', 'Catalogue ' || i, 'english', 'ready', '', ${CHUNKS / SOURCES}, now()
    from generate_series(1, ${SOURCES}) as i`, [userId])
  for (let first = 0; first < CHUNKS; first += ROWS_PER_INSERT) {
    const ids: string[] = []
    const ordinals: number[] = []
    const sources: string[] = []
    const headings: string[] = []
    const contents: string[] = []
    // Hex text: the driver sends an array of buffers as text, not as bytea[].
    const embeddings: Array<string | null> = []
    for (let n = first; n < Math.min(CHUNKS, first + ROWS_PER_INSERT); n++) {
      const { heading, content } = passage(n)
      ids.push(`qchunk${n}`)
      ordinals.push(Math.floor(n / SOURCES))
      sources.push(`qsrc${n % SOURCES + 1}`)
      headings.push(heading)
      contents.push(content)
      embeddings.push(embedded ? Buffer.from(Float32Array.from(fakeEmbedding(`${heading}\n${content}`, DIMENSIONS)).buffer).toString('hex') : null)
    }
    await stack.sql`
      insert into knowledge_chunks (id, source_id, phone_number_id, ordinal, heading, page, content, language, words, embedding)
      select c.id, c.source_id, 'default-number', c.ordinal, c.heading, null, c.content, 'english',
        setweight(to_tsvector('english', c.heading), 'A') || to_tsvector('english', c.content), decode(c.embedding, 'hex')
      from unnest(${ids}::text[], ${ordinals}::int[], ${sources}::text[], ${headings}::text[], ${contents}::text[], ${embeddings}::text[]) as c(id, ordinal, source_id, heading, content, embedding)`
  }
  await stack.sql.unsafe('vacuum analyze knowledge_sources, knowledge_chunks')
}

const QUERIES = ['Is there a warranty on the red bicycle?', 'how long does delivery of a helmet take', 'can I return a lock', 'prices of saddles', 'what about assembly of the pedal', 'safety of the light']

/**
 * `POST /api/chat/accounts/default/knowledge/search` over 10,000 passages (README, Knowledge), one
 * search at a time (the target) and four: by full-text search alone, then with AI_EMBEDDING_MODEL set
 * (the fake provider embedding each query on loopback, its 1,536 dimensions compared with every
 * passage's in memory).
 */
export async function knowledgeRetrieval (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const provider = await startFakeModelProvider()
  ctx.teardown(async () => { await provider.close() })
  const metrics: Metric[] = []
  const notes: string[] = []
  for (const embedded of [false, true]) {
    const name = embedded ? 'words + embeddings' : 'words'
    const stack = await startStack(ctx, embedded ? 'Q-embeddings' : 'Q-words', {
      worker: false,
      env: { ...fakeModelEnv(provider, { embeddings: embedded }), ...(embedded && { AI_EMBEDDING_DIMENSIONS: String(DIMENSIONS) }), CHAT_PHONE_NUMBER_ID: 'default-number', CHAT_ACCESS_TOKEN: 'bench' }
    })
    const token = await stack.adminToken()
    const [admin] = await stack.sql<Array<{ id: string }>>`select id from users limit 1`
    await seed(stack, admin!.id, embedded)
    let next = 0
    const drive = async (connections: number, durationSeconds: number) => await load({
      baseUrl: stack.baseUrl,
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      connections,
      durationSeconds,
      request: () => ({ path: '/api/chat/accounts/default/knowledge/search', body: JSON.stringify({ query: QUERIES[next++ % QUERIES.length] }) })
    })
    // The first search loads the account's vectors (once per change of its sources): not a search's cost.
    await drive(1, 2)
    for (const connections of CONNECTIONS) {
      const result = await drive(connections, seconds(ctx.quick, 10, 3))
      const label = `${name}, ${connections} at once`
      metrics.push(metric(`${label} p50`, result.p50Ms, 'ms'), metric(`${label} p99`, result.p99Ms, 'ms', connections === 1 ? { op: '<', value: P99_TARGET_MS } : undefined))
      notes.push(...failureNote(label, result))
    }
  }
  return {
    id: 'Q',
    title: `knowledge retrieval over ${CHUNKS.toLocaleString('en-US')} passages`,
    metrics,
    notes: [`${CHUNKS.toLocaleString('en-US')} passages of ${SOURCES} sources of one account, ${DIMENSIONS} dimensions when embedded; 1 then 4 connections, api only; the fake provider embeds each query on loopback, in the bench's process`, ...notes]
  }
}
