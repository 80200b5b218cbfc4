/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * Media in the inbox, in a real browser (Debian's Chromium, driven by playwright-core) against real
 * api and worker processes and the fake chat platform: a customer's image is shown in the thread
 * (its bytes fetched with the token, shown by a blob URL the Content-Security-Policy allows), and
 * a document is offered for download under its own name, with the platform's bytes. Its pages are
 * photographed into tests/browser/screenshots/chat-media/.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import t from 'tap'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { deliver, FAKE_ACCESS_TOKEN, inboundMedia, messagesDelivery, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const CHROMIUM = '/usr/bin/chromium'
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CONSOLE_DIST = join(ROOT, 'apps/console/dist')
const SCREENSHOTS = fileURLToPath(new URL('./screenshots/chat-media/', import.meta.url))
const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'browser-chat-media-app-secret'
const CUSTOMER = '15557650002'
// A 48 × 48 checkerboard.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAADAAAAAwCAIAAADYYG7QAAAAUklEQVR42u3WsQ0AIAgEQJZxMsd2A93BuACWxoJLKEm46vlofaUz5k7n9X4AAQGVA/06fNsHAgKqB5LUQEBA+pDXAQSkD0lqICAgfcjrAAIqDTpjLvQPYLCwaAAAAABJRU5ErkJggg==', 'base64')
const PDF = Buffer.from('%PDF-1.4\n% the price list\n')

if (!existsSync(CHROMIUM)) {
  // One line, no stack: `pnpm test` run as root installs it first (tests/browser/get-chromium.sh).
  process.stderr.write(`${CHROMIUM} is missing: install Debian's chromium (as root: apt-get install -y chromium; pnpm test run as root installs it itself)\n`)
  process.exit(1)
}
// `pnpm build` builds the console; `pnpm test` alone may come first on a fresh clone.
if (!existsSync(join(CONSOLE_DIST, 'index.html'))) {
  execFileSync(process.execPath, [join(ROOT, 'apps/console/node_modules/vite/bin/vite.js'), 'build'], { cwd: join(ROOT, 'apps/console'), stdio: 'ignore' })
}

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, {
  env: {
    CHAT_API_URL: platform.url,
    CHAT_ACCESS_TOKEN: FAKE_ACCESS_TOKEN,
    CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    CHAT_BUSINESS_ACCOUNT_ID: '102290129340398',
    CHAT_APP_SECRET: APP_SECRET
  }
})
const { baseUrl } = stack
const token = await stack.adminToken()

await rm(SCREENSHOTS, { recursive: true, force: true })
await mkdir(SCREENSHOTS, { recursive: true })
const profile = await mkdtemp(join(tmpdir(), 'switchboard-chromium-'))
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1366, height: 900 },
  acceptDownloads: true,
  timeout: 30_000
})
t.teardown(async () => {
  await browser.close()
  await rm(profile, { recursive: true, force: true })
})
const page = browser.pages()[0] ?? await browser.newPage()
page.setDefaultTimeout(15_000)

const outside: string[] = []
const cspViolations: string[] = []
const pageErrors: string[] = []
page.on('request', (request) => { if (!request.url().startsWith(`${baseUrl}/`) && !/^(data|blob):/.test(request.url())) outside.push(request.url()) })
page.on('console', (message) => { if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text()) })
page.on('pageerror', (error) => { pageErrors.push(error.message) })

const imageId = platform.addMedia({ bytes: PNG, mimeType: 'image/png' })
const documentId = platform.addMedia({ bytes: PDF, mimeType: 'application/pdf' })
const res = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [
  { from: CUSTOMER, name: 'Noor', message: inboundMedia('image', { id: imageId, mimeType: 'image/png', caption: 'The scratch on my bike' }) },
  { from: CUSTOMER, name: 'Noor', message: inboundMedia('document', { id: documentId, mimeType: 'application/pdf', filename: 'invoice-2026.pdf' }) }
]), APP_SECRET)
if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
await waitFor(async () => {
  const { body } = await stack.call('GET', '/api/chat/conversations', { token })
  return (body as Array<{ phone: string, messages: unknown[] }>).find((c) => c.phone === CUSTOMER)?.messages.length === 2 ? true : undefined
}, { what: 'both media messages to be stored' })

t.test('the inbox shows the customer\'s image in the thread, with its caption', async (t) => {
  await page.goto(`${baseUrl}/console/login`)
  await page.getByLabel('Email').fill(TEST_ADMIN.email)
  await page.getByLabel('Password').fill(TEST_ADMIN.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
  await page.goto(`${baseUrl}/console/inbox`)
  await page.locator(`a[data-conversation="${CUSTOMER}"]`).click()
  await page.getByRole('heading', { name: 'Noor' }).waitFor()
  const image = page.getByRole('img', { name: 'The scratch on my bike' })
  await image.waitFor()
  await waitFor(async () => await image.evaluate((img) => (img as HTMLImageElement).complete) ? true : undefined, { what: 'the image to load' })
  t.same(await image.evaluate((img) => [(img as HTMLImageElement).naturalWidth, (img as HTMLImageElement).naturalHeight]), [48, 48], 'the platform\'s image, decoded')
  t.match(await image.getAttribute('src'), /^blob:/, 'shown from the bytes the console fetched with its token')
  t.match(await page.locator('.message.inbound .media-caption').first().textContent(), 'The scratch on my bike')
  await page.screenshot({ path: join(SCREENSHOTS, '01-inbox-image.png'), fullPage: true })
})

t.test('a document is offered for download under its own name, with the platform\'s bytes', async (t) => {
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Download invoice-2026.pdf' }).click()
  ])
  t.equal(download.suggestedFilename(), 'invoice-2026.pdf')
  t.same(await readFile(await download.path()), PDF)
})

t.test('nothing left the api\'s origin, and the Content-Security-Policy allowed it all', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
