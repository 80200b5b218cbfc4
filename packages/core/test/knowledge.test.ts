import { createServer, type Server } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { FAKE_MODEL_API_KEY, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'
import { createModelClient } from '../src/assistant/model.ts'
import { users } from '../src/db/schema/index.ts'
import { createHttpClient } from '../src/engine/nodes/http-client.ts'
import { CHUNK_MAX_CHARS, chunkDocument, faqLines, markdownLines } from '../src/knowledge/chunking.ts'
import { knowledgeIndexer } from '../src/knowledge/indexer.ts'
import { fetchPage, htmlLines } from '../src/knowledge/page.ts'
import { knowledgeRetrieval } from '../src/knowledge/retrieval.ts'
import { knowledgeSourcesRepository, type NewKnowledgeSource } from '../src/knowledge/sources.ts'
import type { Quotas } from '../src/users/quotas.ts'

/**
 * The knowledge's pure parts (chunking, a page's text) and its statements against a real database:
 * a source indexed into passages and found again by full-text search, in its language, only when
 * relevant (README, Knowledge).
 */
const { db } = await createCoreTestContext(t)
const quotas: Quotas = { runsPerMinute: 1000, runsInFlight: 0, waitingRuns: 10, workflows: 10, credentials: 10, cronWorkflows: 10, eventListeners: 10, knowledgeSources: 100 }
const [owner] = await db.insert(users).values({ email: 'knowledge@example.com', passwordHash: 'x' }).returning()
const userId = owner!.id
const sources = knowledgeSourcesRepository(db)
const quiet = { warn: () => {}, error: () => {} }
const http = createHttpClient({ allowPrivate: true })
t.teardown(async () => { await http.close() })
const indexer = knowledgeIndexer({ db, logger: quiet, dispatcher: http.dispatcher, allowPrivate: true, embedder: async () => undefined })
const retrieval = knowledgeRetrieval({ db, embedder: async () => undefined, logger: quiet, minSimilarity: 0.3, vectorCacheBytes: 1024 * 1024 })

async function indexed (phoneNumberId: string, source: NewKnowledgeSource) {
  const row = await sources.add(phoneNumberId, userId, source, quotas)
  await indexer.index(row.id, { lastAttempt: true })
  return await sources.get(phoneNumberId, row.id)
}

t.test('chunks keep the headings they sit under, are cut at paragraphs, and are never longer than the bound', async (t) => {
  const long = 'A sentence about bicycles that goes on. '.repeat(100)
  const chunks = chunkDocument(markdownLines(`Intro line\n\n# Returns\nWithin 30 days.\n\n## Shoes\nUnworn only.\n\n# Prices\n${long}`), 100)
  t.same(chunks.slice(0, 3).map(({ heading, content }) => [heading, content]), [['', 'Intro line'], ['Returns', 'Within 30 days.'], ['Returns › Shoes', 'Unworn only.']])
  const prices = chunks.filter((chunk) => chunk.heading === 'Prices')
  t.ok(prices.length >= 3, 'a 4,000-character paragraph is several passages')
  t.ok(prices.every((chunk) => chunk.content.length <= CHUNK_MAX_CHARS && chunk.content.endsWith('.')), 'each cut after a sentence, within the bound')
  t.equal(chunkDocument(markdownLines(long.repeat(10)), 3).length, 3, 'at most maxChunks')
  const faq = chunkDocument(faqLines([{ question: 'Do you ship abroad?', answer: 'Yes, to the EU.' }, { question: 'Gift cards?', answer: 'From 10 euros.' }]), 10)
  t.same(faq.map(({ heading, content }) => [heading, content]), [['Do you ship abroad?', 'Yes, to the EU.'], ['Gift cards?', 'From 10 euros.']], 'each question heads its answer')
  const paged = chunkDocument([{ text: 'Catalogue', level: 1, page: 1 }, { text: 'Bikes', page: 1 }, { text: 'Helmets', page: 2 }], 10)
  t.same(paged.map(({ heading, page, content }) => [heading, page, content]), [['Catalogue', 1, 'Bikes'], ['Catalogue', 2, 'Helmets']], 'a page starts a passage and keeps its number')
})

t.test('an HTML page is read as its headings and text, without scripts, styles or navigation', async (t) => {
  const { title, lines } = htmlLines('<html><head><title>Help &amp; FAQ</title><style>p{}</style></head><body><nav>Home | Shop</nav><h1>Returns</h1><p>Within <b>30</b> days.</p><script>alert(1)</script><h2>Shoes</h2><ul><li>Unworn</li><li>Boxed</li></ul></body></html>')
  t.equal(title, 'Help & FAQ')
  t.same(lines.filter((line) => line.text !== ''), [{ text: 'Returns', level: 1 }, { text: 'Within 30 days.' }, { text: 'Shoes', level: 2 }, { text: 'Unworn' }, { text: 'Boxed' }])
})

t.test('a text source is indexed into passages, found by full-text search in its language, and only when relevant', async (t) => {
  const source = await indexed('number-a', {
    type: 'markdown',
    title: 'Policies',
    language: 'english',
    body: '# Returns\nYou may return shoes within 30 days of delivery.\n\n# Gift cards\nGift cards are sold from 10 to 200 euros and never expire.\n\n# Opening hours\nThe shop opens at nine.'
  })
  t.match(source, { status: 'ready', chunks: 3, error: null })
  t.same(source.chunkList.map((chunk) => chunk.heading), ['Returns', 'Gift cards', 'Opening hours'])
  const found = await retrieval.search('number-a', 'Can I return my shoes?')
  t.equal(found[0]?.heading, 'Returns', 'stemmed: "return" and "shoes" match "return" and "shoes"')
  t.match(found[0], { sourceId: source.id, title: 'Policies', page: null, content: /30 days/ })
  t.same((await retrieval.search('number-a', 'Do you sell gift cards?')).map((passage) => passage.heading), ['Gift cards'])
  t.same(await retrieval.search('number-a', 'hello there'), [], 'a greeting matches nothing')
  t.same(await retrieval.search('number-a', 'What are the opening hours of the cinema downtown tonight?'), [], 'one word in common out of several is not relevant')
  t.same(await retrieval.search('number-b', 'Can I return my shoes?'), [], 'another number\'s knowledge is not searched')

  const german = await indexed('number-a', { type: 'text', title: 'Versand', language: 'german', body: 'Wir versenden Bestellungen innerhalb von zwei Tagen.' })
  t.equal(german.status, 'ready')
  t.same((await retrieval.search('number-a', 'Versenden Sie Bestellungen schnell?')).map((passage) => passage.title), ['Versand'], 'a German source is stemmed in German')

  await sources.remove('number-a', german.id)
  t.same(await retrieval.search('number-a', 'Versenden Sie Bestellungen schnell?'), [], 'a deleted source takes its passages with it')
})

t.test('FAQ pairs are indexed one passage per question; re-indexing replaces the passages', async (t) => {
  const faq = await indexed('number-c', { type: 'faq', title: 'FAQ', language: 'english', faq: [{ question: 'Do you deliver on Sundays?', answer: 'No, Monday to Saturday.' }] })
  t.match(faq, { status: 'ready', chunks: 1 })
  t.equal((await retrieval.search('number-c', 'delivery on sunday'))[0]?.heading, 'Do you deliver on Sundays?')
  const again = await sources.reindex('number-c', faq.id)
  t.equal(again.status, 'indexing')
  t.equal((await retrieval.search('number-c', 'delivery on sunday')).length, 1, 'the old passages answer while it is indexed again')
  await indexer.index(faq.id, { lastAttempt: true })
  t.match(await sources.get('number-c', faq.id), { status: 'ready', chunks: 1 })
})

t.test('a URL source is fetched once: its page\'s text is kept, and a re-index does not fetch it again', async (t) => {
  let fetched = 0
  const server: Server = createServer((request, response) => {
    fetched++
    if (request.url === '/moved') {
      response.writeHead(302, { location: '/page' }).end()
      return
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<h1>Warranty</h1><p>Every bicycle has a two year warranty.</p>')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/moved`
  const source = await indexed('number-d', { type: 'url', title: 'Warranty page', language: 'english', url })
  t.match(source, { status: 'ready', chunks: 1 })
  t.equal(fetched, 2, 'the redirect and the page')
  t.equal((await retrieval.search('number-d', 'bicycle warranty'))[0]?.heading, 'Warranty')
  await sources.reindex('number-d', source.id)
  await indexer.index(source.id, { lastAttempt: true })
  t.equal(fetched, 2, 'not fetched again')
  t.match(await sources.get('number-d', source.id), { status: 'ready', chunks: 1 })
})

t.test('a redirect to a metadata address is refused before any connection, whatever HTTP_REQUEST_ALLOW_PRIVATE says', async (t) => {
  const server: Server = createServer((_request, response) => { response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end() })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  await t.rejects(fetchPage(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { dispatcher: http.dispatcher, allowPrivate: true }), { message: 'Blocked request to cloud metadata address 169.254.169.254' })
  const guarded = createHttpClient({ allowPrivate: false })
  t.teardown(async () => { await guarded.close() })
  await t.rejects(fetchPage('http://127.0.0.1:9/', { dispatcher: guarded.dispatcher, allowPrivate: false }), { message: 'Blocked request to private address 127.0.0.1' }, 'loopback without HTTP_REQUEST_ALLOW_PRIVATE')
})

t.test('a source that cannot be read fails with the reason; an empty text is refused', async (t) => {
  const empty = await indexed('number-e', { type: 'text', title: 'Empty', language: 'english', body: '\n\n   \n' })
  t.match(empty, { status: 'failed', error: 'The source has no text to index', chunks: 0 })
  const unreachable = await indexed('number-e', { type: 'url', title: 'Gone', language: 'english', url: 'http://127.0.0.1:9/' })
  t.match(unreachable, { status: 'failed', error: /^The page could not be fetched/ })
  const [{ count }] = await db.execute<{ count: number }>(sql`select count(*)::int as count from knowledge_chunks where phone_number_id = 'number-e'`) as unknown as [{ count: number }]
  t.equal(count, 0)
})

t.test('with embeddings, a passage the words miss is found by meaning, vectors are stored as float32, and a new source is seen at once', async (t) => {
  const provider = await startFakeModelProvider()
  t.teardown(async () => { await provider.close() })
  const client = createModelClient({ apiUrl: `${provider.url}/v1`, apiKey: FAKE_MODEL_API_KEY, timeoutMs: 5000, maxRetries: 0, maxResponseBytes: 1024 * 1024 })
  const embedder = async () => ({ client, model: 'fake-embedding', dimensions: 32 })
  const embedding = knowledgeIndexer({ db, logger: quiet, dispatcher: http.dispatcher, allowPrivate: true, embedder })
  const hybrid = knowledgeRetrieval({ db, embedder, logger: quiet, minSimilarity: 0.3, vectorCacheBytes: 1024 * 1024 })
  const add = async (source: NewKnowledgeSource) => {
    const row = await sources.add('number-f', userId, source, quotas)
    await embedding.index(row.id, { lastAttempt: true })
    return row.id
  }
  // `simple` neither stems nor drops words: "refund" does not match "Refunds" by words, the embedding does.
  const refunds = await add({ type: 'text', title: 'Money back', language: 'simple', body: 'Refunds paid within five days.' })
  const [stored] = await db.execute<{ bytes: number }>(sql`select octet_length(embedding) as bytes from knowledge_chunks where source_id = ${refunds}`)
  t.equal(stored?.bytes, 32 * 4, 'one float32 per dimension')
  t.same(await retrieval.search('number-f', 'refund'), [], 'the words alone miss it')
  t.same((await hybrid.search('number-f', 'refund')).map((passage) => passage.sourceId), [refunds], 'the embedding finds it')
  t.same(await hybrid.search('number-f', 'opening hours tonight'), [], 'an unrelated query is below the similarity bound')
  const embeddedQueries = provider.embeddings.requests.length
  const hours = await add({ type: 'text', title: 'Hours', language: 'simple', body: 'Open tonight until ten.' })
  t.same((await hybrid.search('number-f', 'open tonight')).map((passage) => passage.sourceId)[0], hours, 'a source added after the vectors were cached is ranked')
  t.ok(provider.embeddings.requests.length > embeddedQueries)

  provider.embeddings.script({ status: 500 })
  t.same((await hybrid.search('number-f', 'Refunds paid')).map((passage) => passage.sourceId), [refunds], 'a provider failing the query\'s embedding leaves the words to answer')
})
