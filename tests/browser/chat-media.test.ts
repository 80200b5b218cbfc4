/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * Media in the inbox, in a real browser (Debian's Chromium, driven by playwright-core) against real
 * api and worker processes and the fake chat platform: a customer's image is shown in the thread
 * (its bytes fetched with the token, shown by a blob URL the Content-Security-Policy allows), and
 * a document is offered for download under its own name, with the platform's bytes; a completed flow
 * shows the customer's answers. And the other message kinds (README, Message kinds): a place as a map
 * link, contact cards, a quote above its reply, a reaction on its message, and the message menu's
 * Reply and React. Its pages are photographed into tests/browser/screenshots/chat-media/.
 */
import { readFile } from 'node:fs/promises'
import t from 'tap'
import {
  deliver, fakeChatEnv, inboundContacts, inboundContext, inboundFlowReply, inboundLocation, inboundMedia, inboundReaction, messagesDelivery, newWamid, startFakeChatPlatform
} from '@switchboard/testing/fake-chat-platform'
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

t.test('message kinds: a map link, contact cards, a quote above its reply and a reaction on its message', async (t) => {
  const question = newWamid()
  const now = Math.floor(Date.now() / 1000)
  const delivered = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [
    { from: CUSTOMER, name: 'Noor', wamid: question, text: 'Where can I collect it?', timestamp: now - 4 },
    { from: CUSTOMER, name: 'Noor', message: inboundLocation({ latitude: 52.3676, longitude: 4.9041, name: 'Dam Square' }), timestamp: now - 3 },
    { from: CUSTOMER, name: 'Noor', message: inboundContacts([{ name: { formatted_name: 'Sam Courier' }, phones: [{ phone: '+31 20 555 0100', type: 'WORK' }] }]), timestamp: now - 2 },
    { from: CUSTOMER, name: 'Noor', message: inboundContext(question, 'Same question, sorry'), timestamp: now - 1 },
    { from: CUSTOMER, name: 'Noor', message: inboundReaction(question, '❤️'), timestamp: now - 1 }
  ]), APP_SECRET)
  t.equal(delivered.status, 200)
  const conversation = await waitFor(async () => {
    const { body } = await stack.call('GET', '/api/chat/conversations', { token })
    const found = (body as Array<{ phone: string, messages: Array<{ id: string, type: string, content: string }> }>).find((c) => c.phone === CUSTOMER)
    return found?.messages.some((m) => m.type === 'reaction') === true ? found : undefined
  }, { what: 'the message kinds to be stored' })
  const asked = conversation.messages.find((m) => m.content === 'Where can I collect it?')!
  await page.reload()
  const thread = page.locator('ol.messages')
  const map = thread.getByRole('link', { name: '📍 Dam Square' })
  await map.waitFor()
  t.equal(await map.getAttribute('href'), 'https://www.openstreetmap.org/?mlat=52.3676&mlon=4.9041#map=16/52.3676/4.9041')
  t.match(await thread.locator('.contact-card').textContent(), /Sam Courier.*\+31 20 555 0100/)
  t.match(await thread.locator('.quote').first().textContent(), 'Where can I collect it?', 'the quote above its reply')
  const askedRow = thread.locator(`li[data-message="${asked.id}"]`)
  t.equal(await askedRow.locator('.reaction[data-by="customer"]').textContent(), '❤️', 'the customer\'s reaction on its message')
  t.equal(await thread.getByText(/Reacted/).count(), 0, 'no row of its own while its message is on screen')
  await shot('03-message-kinds')

  await askedRow.getByLabel('Message actions').click()
  await askedRow.getByRole('button', { name: 'React 👍' }).click()
  await askedRow.locator('.reaction[data-by="business"]').waitFor()
  t.same(platform.sends().at(-1)?.body, { messaging_product: 'whatsapp', recipient_type: 'individual', to: CUSTOMER, type: 'reaction', reaction: { message_id: question, emoji: '👍' } })

  await askedRow.getByLabel('Message actions').click()
  await askedRow.getByRole('button', { name: 'Reply' }).click()
  t.match(await page.locator('#reply-quote').textContent(), 'Where can I collect it?')
  await page.locator('#reply-text').fill('At the front desk')
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  await thread.locator('li.message.outbound', { hasText: 'At the front desk' }).locator('.quote').waitFor()
  t.match(platform.sends().at(-1)?.body, { type: 'text', text: { body: 'At the front desk' }, context: { message_id: question } })
  t.equal(await page.locator('#reply-quote').count(), 0, 'the quote is cleared once sent')
  await shot('04-reply-and-react')
})

t.test('nothing left the api\'s origin, and the Content-Security-Policy allowed it all', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
