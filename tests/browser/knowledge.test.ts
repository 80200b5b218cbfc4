/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * The knowledge base in the console, in a real browser (Debian's Chromium, driven by playwright-core)
 * against real api and worker processes, the fake chat platform and the fake model provider (its
 * embeddings too): a Markdown source added from the form shows `indexing`, becomes ready by itself
 * (the list polls while a source indexes, and stops once none does), its passages open with their
 * headings; a test question shows the passages a turn would be given, and a question about nothing
 * in it says so; answerFromKnowledgeOnly is saved with the assistant's settings; a draft the
 * assistant wrote from a passage shows, in the inbox, the source it was based on. FAQ pairs are
 * added and indexed again, a web page at a private address fails with its reason, a PDF is sent
 * as its bytes and its passages keep their pages, a source is deleted. Its pages are photographed into tests/browser/screenshots/knowledge/.
 */
import t from 'tap'
import { deliver, fakeChatEnv, messagesDelivery, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { fakeModelEnv, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'
import { makePdf } from '@switchboard/testing/pdf'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { openConsole, signIn, unlabelledControls } from './browser.ts'

const PHONE_NUMBER_ID = '106540352242927'
const APP_SECRET = 'browser-knowledge-app-secret'
const CUSTOMER = '15557650046'
const TITLE = 'Returns policy'
const MARKDOWN = [
  '# Returns',
  '## Shoes',
  'Shoes can be returned within 30 days of delivery. Keep the original box.',
  '',
  '## Gift cards',
  'Gift cards are final sale: they are never refunded.',
  '',
  '# Shipping',
  'We ship to 40 countries. Delivery takes 3 to 5 working days.'
].join('\n')
/** What the fake model answers from the Shoes passage, its citation mark `[n]` taken out by the turn. */
const DRAFTED = 'According to: Shoes can be returned within 30 days of delivery.'

const platform = await startFakeChatPlatform()
const provider = await startFakeModelProvider()
t.teardown(async () => { await Promise.all([platform.close(), provider.close()]) })
const stack = await startStack(t, {
  env: {
    ...fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET, verifyToken: 'browser-knowledge-verify-token' }),
    ...fakeModelEnv(provider, { embeddings: true })
  }
})
const { baseUrl, call } = stack
const token = await stack.adminToken()

const { page, outside, cspViolations, pageErrors, shot } = await openConsole(t, baseUrl, { screenshots: 'knowledge' })
page.on('dialog', (dialog) => { dialog.accept().catch(() => {}) })

/** The console's reads of the sources list, to see it poll while a source indexes and stop after. */
let listReads = 0
page.on('request', (request) => {
  if (request.method() === 'GET' && new URL(request.url()).pathname === '/api/chat/accounts/default/knowledge') listReads++
})

interface Source { id: string, type: string, title: string, language: string, status: string, chunks: number, bytes: number, error: string | null }
interface Passage { ordinal: number, heading: string, page: number | null, content: string }
interface Result { sourceId: string, title: string, heading: string, page: number | null, content: string, score: number }
interface Conversation { id: string, phone: string }
interface Message { id: string, status: string | null, content: string, details?: { sources?: Array<{ title: string, heading: string, page: number | null }> } | null }
interface Turn { status: string, outcome: string | null, error: string | null }

const sources = async (): Promise<Source[]> => (await call('GET', '/api/chat/accounts/default/knowledge', { token })).body.sources
const search = async (query: string): Promise<{ results: Result[], relevant: boolean }> =>
  (await call('POST', '/api/chat/accounts/default/knowledge/search', { token, body: { query } })).body

/** Holds the next embeddings request (a source's indexing) until released: the page is seen showing it `indexing` first. */
function holdIndexing (t: { teardown: (fn: () => void) => void }): () => void {
  let release = (): void => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  provider.embeddings.script({ handler: async () => { await released; return { embed: true } } })
  t.teardown(release)
  return release
}

let sourceId = ''

t.test('a Markdown source added from the form: indexing, then ready by itself; the list stops polling', async (t) => {
  await signIn(page, baseUrl)
  await page.goto(`${baseUrl}/console/inbox`)
  await page.getByRole('link', { name: 'Assistant and consent' }).click()
  await page.getByRole('heading', { level: 1, name: 'Chat settings' }).waitFor()
  await page.getByRole('link', { name: 'Knowledge', exact: true }).click()
  await page.getByRole('heading', { level: 1, name: 'Knowledge' }).waitFor()
  await page.locator('#no-sources').waitFor()

  // The source's embeddings wait until the page has shown it indexing: the worker cannot finish before.
  const release = holdIndexing(t)

  const kinds = page.getByRole('group', { name: 'Kind of source' })
  t.equal(await kinds.getByRole('button', { name: 'Markdown' }).getAttribute('aria-pressed'), 'true', 'Markdown is the first choice')
  await page.getByLabel('Title', { exact: true }).fill(TITLE)
  await page.getByLabel('Markdown', { exact: true }).fill(MARKDOWN)
  t.equal(await page.getByLabel('Language (its stemming and stop words, for search)').inputValue(), 'english')
  t.same(await unlabelledControls(page), [])
  await page.getByRole('button', { name: 'Add source' }).click()
  await page.getByRole('status').filter({ hasText: `Added ${TITLE}: it is being indexed` }).waitFor()

  const [added] = await sources()
  t.match(added, { title: TITLE, status: 'indexing' }, 'the api has it, indexing')
  sourceId = added!.id
  const row = page.locator(`tr[data-source="${sourceId}"]`)
  await row.locator('.badge', { hasText: 'indexing' }).waitFor()
  t.equal(await row.locator('th a').textContent(), TITLE)
  t.equal(await row.locator('td').nth(0).textContent(), 'Markdown')
  await page.getByText('Indexing: the list refreshes every 2 seconds').waitFor()
  await shot('01-indexing')

  const readsBefore = listReads
  release()
  // No reload, no click: the list reads the sources again while one indexes.
  await row.locator('.badge', { hasText: 'ready' }).waitFor({ timeout: 30_000 })
  t.ok(listReads > readsBefore, 'the list was read again by itself')
  const ready = (await sources())[0]!
  t.match(ready, { status: 'ready', error: null, chunks: 3 }, 'three passages: Shoes, Gift cards, Shipping')
  t.equal(await row.getAttribute('data-status'), 'ready')
  t.equal(await row.locator('td').nth(2).textContent(), '3', 'its passages counted')
  await page.getByText('Indexing: the list refreshes').waitFor({ state: 'detached' })

  await page.waitForTimeout(1000)
  const settled = listReads
  await page.waitForTimeout(5000)
  t.equal(listReads, settled, 'no source indexing: the list is not read again')
  await shot('02-ready')
})

t.test('its passages open from its title: each with the headings it sits under and its text, as the api has them', async (t) => {
  await page.getByRole('link', { name: `Passages of ${TITLE}` }).click()
  await page.waitForURL(new RegExp(`source=${sourceId}`))
  const card = page.locator('#knowledge-passages')
  await card.getByRole('heading', { name: `Passages of ${TITLE}` }).waitFor()
  const items = card.locator('ol.passages > li')
  await items.first().waitFor()
  const shown = await items.evaluateAll((lis) => lis.map((li) => ({
    heading: li.querySelector('.passage-heading')?.textContent,
    page: li.querySelector('.passage-page')?.textContent ?? null,
    text: li.querySelector('.passage-text')?.textContent
  })))
  t.same(shown, [
    { heading: 'Returns › Shoes', page: null, text: 'Shoes can be returned within 30 days of delivery. Keep the original box.' },
    { heading: 'Returns › Gift cards', page: null, text: 'Gift cards are final sale: they are never refunded.' },
    { heading: 'Shipping', page: null, text: 'We ship to 40 countries. Delivery takes 3 to 5 working days.' }
  ], 'the headings path and text of each passage, in order')
  const detail = (await call('GET', `/api/chat/accounts/default/knowledge/${sourceId}`, { token })).body as { chunkList: Passage[] }
  t.same(detail.chunkList.map((passage) => ({ heading: passage.heading, page: passage.page, text: passage.content })),
    shown.map((passage) => ({ heading: passage.heading, page: null, text: passage.text })), 'as the api lists them')
  t.match(await card.textContent(), /Markdown · English · .* · 3 passages/)
  await shot('03-passages')
})

t.test('a test question: the passages a turn would be given, best first; a question about nothing there says so', async (t) => {
  await page.getByLabel('Question', { exact: true }).fill('Can I return shoes?')
  await page.getByRole('button', { name: 'Test', exact: true }).click()
  const results = page.getByRole('list', { name: 'Passages for: Can I return shoes?' })
  await results.waitFor()
  const expected = await search('Can I return shoes?')
  t.ok(expected.relevant && expected.results.length > 0, 'the api finds passages')
  const shown = await results.locator(':scope > li').evaluateAll((lis) => lis.map((li) => ({
    label: li.querySelector('.passage-heading')?.textContent,
    text: li.querySelector('.passage-text')?.textContent,
    score: li.querySelector('.passage-score')?.textContent
  })))
  t.equal(shown.length, expected.results.length, 'every passage the api answers')
  t.same(shown[0], {
    label: `${TITLE} › Returns › Shoes`,
    text: 'Shoes can be returned within 30 days of delivery. Keep the original box.',
    score: ` · score ${Number(expected.results[0]!.score.toPrecision(3))}`
  }, 'the Shoes passage first, with its title, headings and score')
  t.same(shown.map((result) => result.label), expected.results.map((result) => `${result.title} › ${result.heading}`), 'in the api\'s order')
  await page.locator('#knowledge-nothing-relevant').waitFor({ state: 'detached' })
  await shot('04-test-question')

  await page.getByLabel('Question', { exact: true }).fill('Quantum chromodynamics lattice')
  await page.getByRole('button', { name: 'Test', exact: true }).click()
  const nothing = page.locator('#knowledge-nothing-relevant')
  await nothing.waitFor()
  t.same(await search('Quantum chromodynamics lattice'), { results: [], relevant: false }, 'the api finds nothing relevant')
  t.equal(await nothing.textContent(),
    'Nothing relevant: the assistant would not use the knowledge. It would answer without it; with Answer from the knowledge only on, it would hand the conversation over to a person.')
  t.equal(await page.locator('#knowledge-test-results ol.passages').count(), 0, 'no passage shown')
  t.same(await unlabelledControls(page), [])
  await shot('05-nothing-relevant')
})

t.test('answerFromKnowledgeOnly: checked and saved with the assistant\'s other settings, shown again after a reload', async (t) => {
  const instructions = 'You answer for Ana’s Shoes.'
  t.equal((await call('PUT', '/api/chat/accounts/default/assistant', { token, body: { instructions, debounceMs: 300 } })).status, 200)
  await page.getByRole('link', { name: 'Assistant and consent' }).click()
  await page.getByRole('heading', { level: 1, name: 'Chat settings' }).waitFor()
  const only = page.getByRole('checkbox', { name: 'Answer from the knowledge only' })
  t.equal(await only.isChecked(), false, 'off by default')
  t.match(await page.locator(`#${await only.getAttribute('aria-describedby')}`).textContent(), /has nothing relevant to the customer's message, hand the conversation over to a person/, 'its explanation')
  await only.check()
  await page.getByRole('button', { name: 'Save assistant' }).click()
  await page.getByText('Saved: the next turns use these settings').waitFor()
  t.match((await call('GET', '/api/chat/accounts/default/assistant', { token })).body, { answerFromKnowledgeOnly: true, instructions, debounceMs: 300 }, 'saved, the other fields kept')
  await page.reload()
  await page.getByRole('heading', { level: 1, name: 'Chat settings' }).waitFor()
  t.equal(await page.getByRole('checkbox', { name: 'Answer from the knowledge only' }).isChecked(), true, 'as saved')
  await shot('06-assistant-settings')

  await page.getByRole('link', { name: 'Knowledge', exact: true }).click()
  await page.getByLabel('Question', { exact: true }).fill('Quantum chromodynamics lattice')
  await page.getByRole('button', { name: 'Test', exact: true }).click()
  await page.locator('#knowledge-nothing-relevant', { hasText: 'Answer from the knowledge only is on: it would hand the conversation over to a person.' }).waitFor()
  t.pass('the test question says the conversation would be handed over')
})

t.test('a draft written from a passage shows, in the inbox, the source it was based on', async (t) => {
  provider.script({ answerFromPassages: true })
  const res = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Mia', text: 'Can I return shoes?' }]), APP_SECRET)
  t.equal(res.status, 200)
  const conversation = await waitFor(async () =>
    ((await call('GET', '/api/chat/conversations?limit=500', { token })).body as Conversation[]).find((c) => c.phone === CUSTOMER), { what: 'the customer\'s conversation' })
  const [turn] = await waitFor(async () => {
    const turns = (await call('GET', `/api/chat/conversations/${conversation.id}/turns`, { token })).body as Turn[]
    return turns.length > 0 && turns.every((one) => one.status === 'done' || one.status === 'failed') ? turns : undefined
  }, { what: 'the turn', timeoutMs: 30_000 })
  t.equal(turn!.outcome, 'drafted', turn!.error ?? '')
  const [draft] = (await call('GET', `/api/chat/conversations/${conversation.id}/drafts`, { token })).body as Message[]
  t.equal(draft!.content, DRAFTED, 'the fake model answered from the Shoes passage')
  t.same(draft!.details?.sources?.map((source) => [source.title, source.heading, source.page]), [[TITLE, 'Returns › Shoes', null]], 'the draft cites it')

  await page.goto(`${baseUrl}/console/inbox`)
  await page.locator(`a[data-conversation="${CUSTOMER}"]`).click()
  await page.getByRole('heading', { name: 'Mia' }).waitFor()
  const shown = page.locator('.message.draft[data-draft="pending_approval"]')
  await shown.locator('.bubble', { hasText: DRAFTED }).waitFor()
  t.equal(await shown.locator('.draft-sources').textContent(), `Based on: ${TITLE} › Returns › Shoes`)
  t.equal(await page.locator('.message:not(.draft) .draft-sources').count(), 0, 'only drafts show their sources')
  t.same(await unlabelledControls(page), [])
  await shot('07-inbox-draft-sources')
})

t.test('FAQ pairs from the form: sent as pairs, each question the heading of its answer; Re-index indexes it again', async (t) => {
  await page.goto(`${baseUrl}/console/chat-settings/knowledge?account=default`)
  await page.getByRole('group', { name: 'Kind of source' }).getByRole('button', { name: 'FAQ' }).click()
  await page.getByLabel('Title', { exact: true }).fill('Sizes FAQ')
  await page.getByLabel('Question 1', { exact: true }).fill('Which sizes do you stock?')
  await page.getByLabel('Answer 1').fill('Every shoe comes in sizes 36 to 46.')
  await page.getByRole('button', { name: 'Add a question' }).click()
  await page.getByLabel('Question 2', { exact: true }).fill('Do you stock half sizes?')
  await page.getByLabel('Answer 2').fill('Only in our running shoes.')
  t.same(await unlabelledControls(page), [])
  const sent = page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/api/chat/accounts/default/knowledge')
  await page.getByRole('button', { name: 'Add source' }).click()
  t.same((await sent).postDataJSON(), {
    type: 'faq',
    title: 'Sizes FAQ',
    language: 'english',
    pairs: [{ question: 'Which sizes do you stock?', answer: 'Every shoe comes in sizes 36 to 46.' }, { question: 'Do you stock half sizes?', answer: 'Only in our running shoes.' }]
  }, 'the pairs as typed')
  const faq = await waitFor(async () => (await sources()).find((source) => source.title === 'Sizes FAQ'), { what: 'the FAQ source' })
  const row = page.locator(`tr[data-source="${faq.id}"]`)
  await row.locator('.badge', { hasText: 'ready' }).waitFor({ timeout: 30_000 })
  t.equal(await row.locator('td').nth(0).textContent(), 'FAQ')
  await row.getByRole('link', { name: 'Passages of Sizes FAQ' }).click()
  const card = page.locator('#knowledge-passages')
  await card.getByRole('heading', { name: 'Passages of Sizes FAQ' }).waitFor()
  await card.locator('ol.passages > li').nth(1).waitFor()
  t.same(await card.locator('.passage-heading').allTextContents(), ['Which sizes do you stock?', 'Do you stock half sizes?'])
  await shot('08-faq')

  const indexedAt = (await call('GET', `/api/chat/accounts/default/knowledge/${faq.id}`, { token })).body.indexedAt
  const release = holdIndexing(t)
  await row.getByRole('button', { name: 'Re-index Sizes FAQ' }).click()
  await row.locator('.badge', { hasText: 'indexing' }).waitFor()
  t.equal(await row.getByRole('button', { name: 'Re-index Sizes FAQ' }).isDisabled(), true, 'not twice at once')
  await card.getByRole('status').filter({ hasText: 'Indexing: its passages appear once it is ready (until then, the earlier ones answer).' }).waitFor()
  release()
  await row.locator('.badge', { hasText: 'ready' }).waitFor({ timeout: 30_000 })
  t.not((await call('GET', `/api/chat/accounts/default/knowledge/${faq.id}`, { token })).body.indexedAt, indexedAt, 'indexed again')
  await card.getByRole('status').filter({ hasText: 'Indexing' }).waitFor({ state: 'detached' })
})

t.test('a web page at a private address: failed, the reason in the list', async (t) => {
  await page.getByRole('group', { name: 'Kind of source' }).getByRole('button', { name: 'Web page' }).click()
  await page.getByLabel('Address (http or https)').fill('http://127.0.0.1:9/returns')
  await page.getByLabel('Title (empty: the address)').fill('')
  t.equal(await page.getByLabel('Title (empty: the address)').getAttribute('required'), null, 'a web page\'s title may be left empty')
  await page.getByRole('button', { name: 'Add source' }).click()
  const failed = await waitFor(async () => (await sources()).find((source) => source.title === 'http://127.0.0.1:9/returns' && source.status === 'failed'),
    { what: 'the web page failed', timeoutMs: 30_000 })
  t.ok(failed.error !== null && failed.error !== '', 'the api says why')
  const row = page.locator(`tr[data-source="${failed.id}"]`)
  await row.locator('.badge', { hasText: 'failed' }).waitFor()
  t.equal(await row.locator('td').nth(0).textContent(), 'Web page')
  t.equal(await row.locator('.source-error.error-text').textContent(), failed.error, 'its reason, as an error')
  await shot('09-failed')
})

t.test('a PDF chosen in the form: sent as its bytes (application/pdf), its title and language in the query; its pages kept', async (t) => {
  const bytes = makePdf([[{ text: 'Sizes', size: 24 }, 'Our shoes come in sizes 36 to 46.'], [{ text: 'Care', size: 24 }, 'Clean the leather with a soft cloth.']])
  await page.getByRole('group', { name: 'Kind of source' }).getByRole('button', { name: 'PDF' }).click()
  await page.getByLabel('PDF file (up to 20 MiB)').setInputFiles({ name: 'Shoe catalogue.pdf', mimeType: 'application/pdf', buffer: bytes })
  t.equal(await page.getByLabel('Title', { exact: true }).inputValue(), 'Shoe catalogue', 'the file\'s name is the title')
  await page.getByLabel('Language (its stemming and stop words, for search)').selectOption('german')
  t.same(await unlabelledControls(page), [])
  const sent = page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/api/chat/accounts/default/knowledge')
  await page.getByRole('button', { name: 'Add source' }).click()
  const request = await sent
  t.equal(request.headers()['content-type'], 'application/pdf')
  t.same(Object.fromEntries(new URL(request.url()).searchParams), { title: 'Shoe catalogue', language: 'german' })
  const pdf = await waitFor(async () => (await sources()).find((source) => source.title === 'Shoe catalogue'), { what: 'the PDF source' })
  t.match(pdf, { type: 'pdf', language: 'german', bytes: bytes.length }, 'the api has the file\'s bytes')
  await page.getByRole('status').filter({ hasText: 'Added Shoe catalogue: it is being indexed' }).waitFor()
  t.equal(await page.getByLabel('PDF file (up to 20 MiB)').evaluate((input) => (input as HTMLInputElement).files?.length), 0, 'the form is ready for the next file')
  const row = page.locator(`tr[data-source="${pdf.id}"]`)
  await row.locator('.badge', { hasText: 'ready' }).waitFor({ timeout: 30_000 })
  t.equal(await row.locator('td').nth(0).textContent(), 'PDF')
  t.equal(await row.locator('td').nth(3).textContent(), '2', 'its pages')
  await row.getByRole('link', { name: 'Passages of Shoe catalogue' }).click()
  const card = page.locator('#knowledge-passages')
  await card.getByRole('heading', { name: 'Passages of Shoe catalogue' }).waitFor()
  await card.locator('ol.passages > li').nth(1).waitFor()
  const shown = await card.locator('ol.passages > li').evaluateAll((lis) => lis.map((li) => [
    li.querySelector('.passage-heading')?.textContent, li.querySelector('.passage-page')?.textContent, li.querySelector('.passage-text')?.textContent
  ]))
  t.same(shown, [['Sizes', ' · page 1', 'Our shoes come in sizes 36 to 46.'], ['Care', ' · page 2', 'Clean the leather with a soft cloth.']], 'each passage with its page')
  t.match(await card.textContent(), /PDF · German · /)
  await shot('10-pdf')
})

t.test('deleted from the list: gone from the api and the page, its passages closed', async (t) => {
  await page.goto(`${baseUrl}/console/chat-settings/knowledge?account=default&source=${sourceId}`)
  const row = page.locator(`tr[data-source="${sourceId}"]`)
  await page.locator('#knowledge-passages').getByRole('heading', { name: `Passages of ${TITLE}` }).waitFor()
  await row.getByRole('button', { name: `Delete ${TITLE}` }).click()
  await row.waitFor({ state: 'detached' })
  await page.locator('#knowledge-passages').waitFor({ state: 'detached' })
  t.notOk(page.url().includes('source='), 'its passages closed')
  t.notOk((await sources()).some((source) => source.id === sourceId), 'the api has it no more')
  t.equal(await page.locator('#knowledge-sources tbody tr').count(), 3, 'the others stay')
})

t.test('no request left localhost, no Content-Security-Policy violation, no script error', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
