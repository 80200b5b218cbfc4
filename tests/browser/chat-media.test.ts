/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * Media in the inbox, in a real browser (Debian's Chromium, driven by playwright-core) against real
 * api and worker processes and the fake chat platform: a customer's image is shown in the thread
 * (its bytes fetched with the token, shown by a blob URL the Content-Security-Policy allows), and
 * a document is offered for download under its own name, with the platform's bytes; a completed flow
 * shows the customer's answers. Its pages are photographed into tests/browser/screenshots/chat-media/.
 */
import { readFile } from 'node:fs/promises'
import t from 'tap'
import { deliver, fakeChatEnv, inboundFlowReply, inboundMedia, messagesDelivery, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { openConsole, signIn } from './browser.ts'

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'browser-chat-media-app-secret'
const CUSTOMER = '15557650002'
// A 48 × 48 checkerboard.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAADAAAAAwCAIAAADYYG7QAAAAUklEQVR42u3WsQ0AIAgEQJZxMsd2A93BuACWxoJLKEm46vlofaUz5k7n9X4AAQGVA/06fNsHAgKqB5LUQEBA+pDXAQSkD0lqICAgfcjrAAIqDTpjLvQPYLCwaAAAAABJRU5ErkJggg==', 'base64')
const PDF = Buffer.from('%PDF-1.4\n% the price list\n')

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, {
  env: {
    ...fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET })
  }
})
const { baseUrl } = stack
const token = await stack.adminToken()

const { page, outside, cspViolations, pageErrors, shot } = await openConsole(t, baseUrl, { screenshots: 'chat-media', acceptDownloads: true, allowBlobs: true })

const imageId = platform.addMedia({ bytes: PNG, mimeType: 'image/png' })
const documentId = platform.addMedia({ bytes: PDF, mimeType: 'application/pdf' })
const res = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [
  { from: CUSTOMER, name: 'Noor', message: inboundMedia('image', { id: imageId, mimeType: 'image/png', caption: 'The scratch on my bike' }) },
  { from: CUSTOMER, name: 'Noor', message: inboundMedia('document', { id: documentId, mimeType: 'application/pdf', filename: 'invoice-2026.pdf' }) },
  { from: CUSTOMER, name: 'Noor', message: inboundFlowReply(JSON.stringify({ flow_token: 'repair-7', date: '2026-12-24', services: ['brakes', 'chain'], bike: { model: 'City 3' } })) }
]), APP_SECRET)
if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
await waitFor(async () => {
  const { body } = await stack.call('GET', '/api/chat/conversations', { token })
  return (body as Array<{ phone: string, messages: unknown[] }>).find((c) => c.phone === CUSTOMER)?.messages.length === 3 ? true : undefined
}, { what: 'the media messages and the completed flow to be stored' })

t.test('the inbox shows the customer\'s image in the thread, with its caption', async (t) => {
  await signIn(page, baseUrl)
  await page.goto(`${baseUrl}/console/inbox`)
  await page.locator(`a[data-conversation="${CUSTOMER}"]`).click()
  await page.getByRole('heading', { name: 'Noor' }).waitFor()
  const image = page.getByRole('img', { name: 'The scratch on my bike' })
  await image.waitFor()
  await waitFor(async () => await image.evaluate((img) => (img as HTMLImageElement).complete) ? true : undefined, { what: 'the image to load' })
  t.same(await image.evaluate((img) => [(img as HTMLImageElement).naturalWidth, (img as HTMLImageElement).naturalHeight]), [48, 48], 'the platform\'s image, decoded')
  t.match(await image.getAttribute('src'), /^blob:/, 'shown from the bytes the console fetched with its token')
  t.match(await page.locator('.message.inbound .media-caption').first().textContent(), 'The scratch on my bike')
  await shot('01-inbox-image')
})

t.test('a document is offered for download under its own name, with the platform\'s bytes', async (t) => {
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Download invoice-2026.pdf' }).click()
  ])
  t.equal(download.suggestedFilename(), 'invoice-2026.pdf')
  t.same(await readFile(await download.path()), PDF)
})

t.test('a completed flow shows the customer\'s answers as a list, without its token', async (t) => {
  const answers = page.locator('.message.inbound .flow-reply dl')
  await answers.waitFor()
  const pairs = await answers.locator('div').evaluateAll((rows) => rows.map((row) => [row.querySelector('dt')?.textContent, row.querySelector('dd')?.textContent]))
  t.same(pairs, [['bike', '{"model":"City 3"}'], ['date', '2026-12-24'], ['services', 'brakes, chain']], 'by name')
  await answers.scrollIntoViewIfNeeded()
  await shot('02-inbox-flow-reply')
})

t.test('nothing left the api\'s origin, and the Content-Security-Policy allowed it all', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
