/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * Broadcasts and failed messages in the console, in a real browser (Debian's Chromium, driven by
 * playwright-core) against real api and worker processes and the fake chat platform: a broadcast
 * to 30 pasted numbers at 5 a second is created in the form, its counts move while it sends,
 * Pause holds it (the api says paused, nothing more is sent), Resume goes on, a pause made
 * elsewhere meanwhile shows the api's 409, Cancel skips the rest (`Cancelled` per recipient); a
 * message the platform failed shows its reason under its bubble in the inbox. Its pages are
 * photographed into tests/browser/screenshots/broadcasts/.
 */
import t from 'tap'
import { deliver, fakeChatEnv, messagesDelivery, startFakeChatPlatform, statusesDelivery } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { openConsole, signIn, unlabelledControls } from './browser.ts'

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'browser-broadcasts-app-secret'
const CUSTOMER = '15557650003'
const NUMBERS = Array.from({ length: 30 }, (_, n) => `+1 557 66${String(n).padStart(5, '0')}`)

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, {
  env: {
    ...fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET })
  }
})
const { baseUrl } = stack
const token = await stack.adminToken()

const { page, outside, cspViolations, pageErrors, shot } = await openConsole(t, baseUrl, { screenshots: 'broadcasts' })

interface Broadcast { id: string, status: string, total: number, ratePerSecond: number, counts: Record<string, number> }

let broadcastId = ''
const broadcast = async (): Promise<Broadcast> => (await stack.call('GET', `/api/chat/broadcasts/${broadcastId}`, { token })).body
/** The recipients the platform took: sent, whatever their message's status since. */
const sentOf = (b: Broadcast): number => b.counts.sent! + b.counts.delivered! + b.counts.read! + b.counts.failed!
/** The sent count the page shows. */
const shownSent = async (): Promise<number> => Number(await page.locator('[data-count="sent"]').textContent())
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

t.test('log in; a new broadcast to 30 pasted numbers at 5 a second, from the form', async (t) => {
  await signIn(page, baseUrl)
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Broadcasts' }).click()
  await page.getByRole('heading', { level: 1, name: 'Broadcasts' }).waitFor()
  await page.getByRole('heading', { name: 'No broadcasts yet' }).waitFor()
  await page.getByRole('link', { name: 'New broadcast' }).click()
  await page.getByRole('heading', { level: 1, name: 'New broadcast' }).waitFor()

  await page.locator('#broadcast-template option', { hasText: 'hello_world' }).waitFor({ state: 'attached' })
  t.same(await page.locator('#broadcast-template option').allTextContents(), ['Choose a template', 'hello_world', 'order_update', 'appointment_reminder', 'welcome'], 'the approved templates, each name once')
  t.equal(await page.getByLabel(/^Rate/).inputValue(), '20', 'the default rate')

  // Nothing is sent before it is reviewed; the api's own message, inline: no template yet, then a number that is not one, by its line.
  await page.getByRole('button', { name: 'Review' }).click()
  await page.getByRole('alert').filter({ hasText: 'Choose a template' }).waitFor()
  await page.getByLabel('Template').selectOption('order_update')
  t.same(await page.locator('#broadcast-language option').allTextContents(), ['en_US', 'ar'], 'the template\'s languages')
  await page.getByLabel('Value of {{1}}').waitFor()
  await page.getByLabel('Template').selectOption('hello_world')
  t.equal(await page.getByLabel('Language').inputValue(), 'en_US')
  t.equal(await page.getByLabel(/Value of/).count(), 0, 'hello_world has no placeholder')
  await page.getByRole('textbox', { name: /^Phone numbers/ }).fill(['+1 557 6600001', '', 'not a number'].join('\n'))
  await page.getByRole('button', { name: 'Review' }).click()
  await page.getByRole('button', { name: 'Send to 2 numbers' }).click()
  await page.getByRole('alert').filter({ hasText: 'recipients[1].to must be a phone number in international format (line 3: not a number)' }).waitFor()
  await page.getByRole('button', { name: 'Change' }).click()
  await page.getByLabel(/^Rate/).fill('5000')
  await page.getByRole('textbox', { name: /^Phone numbers/ }).fill(NUMBERS.join('\n'))
  await page.getByRole('button', { name: 'Review' }).click()
  await page.getByRole('button', { name: 'Send to 30 numbers' }).click()
  await page.getByRole('alert').filter({ hasText: 'ratePerSecond must be an integer from 1 to 1000' }).waitFor()
  await page.getByRole('button', { name: 'Change' }).click()
  t.equal((await stack.call('GET', '/api/chat/broadcasts', { token })).body.length, 0, 'nothing created by the refused forms')

  await page.getByLabel(/^Rate/).fill('5')
  t.equal(await page.locator('.audience [aria-live]').textContent(), '30 numbers')
  t.same(await unlabelledControls(page), [])
  await shot('01-new-broadcast')
  await page.getByRole('button', { name: 'Review' }).click()
  const review = page.getByRole('region', { name: 'Send hello_world (en_US) to 30 numbers?' })
  await review.waitFor()
  t.match(await review.innerText(), /Starts now, at 5 a second: about 6 s\./, 'when, how fast and how long')
  t.ok((await review.getByLabel('The message as the customer reads it').innerText()).length > 0, 'the message as the customer reads it')
  await shot('01-review')
  await review.getByRole('button', { name: 'Send to 30 numbers' }).click()
  await page.getByRole('heading', { level: 1, name: 'Broadcast of hello_world' }).waitFor()
  broadcastId = new URL(page.url()).pathname.split('/').at(-1)!
  t.match(await broadcast(), { total: 30, ratePerSecond: 5, status: /scheduled|sending/ })
  t.equal(await page.getByRole('heading', { name: '30 recipients' }).count(), 1)
})

t.test('the counts move while it sends, read again every 2 seconds', async (t) => {
  await page.locator('[data-broadcast-status="sending"]').waitFor()
  await page.getByText('live: updated every 2 seconds').waitFor()
  // Paused as soon as they moved once: at 5 a second, 30 recipients take about 6 seconds.
  const first = await shownSent()
  const later = await waitFor(async () => { const n = await shownSent(); return n > first ? n : undefined }, { what: 'more sends shown' })
  t.ok(later > first, `the page's sent count moved: ${first} → ${later}`)
  t.ok(later < 30, 'still sending')
  await shot('02-sending')
})

t.test('Pause: the api says paused and nothing more is sent; Resume goes on', async (t) => {
  await page.getByRole('button', { name: 'Pause' }).click()
  await page.locator('[data-broadcast-status="paused"]').waitFor()
  t.equal((await broadcast()).status, 'paused', 'the api has it paused')
  t.equal(await page.getByText('live: updated every 2 seconds').count(), 0, 'a paused broadcast is not polled')
  // The sends in flight when the pause came finish; then nothing more.
  await sleep(800)
  const held = sentOf(await broadcast())
  await sleep(2500)
  t.equal(sentOf(await broadcast()), held, `the sent count stopped growing at ${held}`)
  t.ok(held < 30)
  await waitFor(async () => await shownSent() === held ? true : undefined, { what: 'the page to show the held count' })
  await shot('03-paused')

  await page.getByRole('button', { name: 'Resume' }).click()
  await page.locator('[data-broadcast-status="sending"]').waitFor()
  t.equal((await broadcast()).status, 'sending')
  await waitFor(async () => sentOf(await broadcast()) > held ? true : undefined, { what: 'sends after the resume' })
  await waitFor(async () => await shownSent() > held ? true : undefined, { what: 'the page to show them' })
  t.pass('sending again')
})

t.test('a pause made elsewhere meanwhile: the api\'s 409 inline, the page shows it paused', async (t) => {
  await page.route('**/pause', async (route) => {
    t.equal((await stack.call('POST', `/api/chat/broadcasts/${broadcastId}/pause`, { token })).status, 200, 'paused by someone else first')
    await route.continue()
  })
  t.teardown(async () => { await page.unroute('**/pause') })
  await page.getByRole('button', { name: 'Pause' }).click()
  await page.getByRole('alert').filter({ hasText: 'Broadcast is paused: it cannot be paused' }).waitFor()
  await page.locator('[data-broadcast-status="paused"]').waitFor()
  await page.getByRole('button', { name: 'Resume' }).waitFor()
  t.equal(await page.getByRole('button', { name: 'Pause' }).count(), 0, 'Pause is no longer offered')
  await shot('04-pause-409')
})

t.test('Cancel: the rest are skipped, each with "Cancelled"', async (t) => {
  page.once('dialog', (dialog) => { dialog.accept().catch(() => {}) })
  await page.getByRole('button', { name: 'Cancel' }).click()
  await page.locator('[data-broadcast-status="cancelled"]').waitFor()
  t.equal((await broadcast()).status, 'cancelled', 'the api has it cancelled')
  // Sends that waited for the rate when the cancel came are skipped by their senders, a moment later.
  const after = await waitFor(async () => { const b = await broadcast(); return b.counts.queued === 0 ? b : undefined }, { what: 'no recipient left queued' })
  t.equal(sentOf(after) + after.counts.skipped!, 30, 'every recipient sent or skipped')
  t.ok(after.counts.skipped! > 0, `${after.counts.skipped} skipped`)
  await waitFor(async () => await page.locator('[data-count="skipped"]').textContent() === String(after.counts.skipped) ? true : undefined, { what: 'the page to show them skipped' })
  t.equal(await page.locator('[data-count="queued"]').textContent(), '0')
  t.equal(await page.getByRole('button', { name: /^(Pause|Resume|Cancel)$/ }).count(), 0, 'no action is left')

  await page.getByRole('form', { name: 'Filter recipients' }).getByLabel('Status').selectOption('skipped')
  const rows = page.locator('#recipients tbody tr')
  await waitFor(async () => await rows.count() === after.counts.skipped && await page.locator('#recipients tbody tr:not([data-status="skipped"])').count() === 0 ? true : undefined, { what: 'the skipped recipients listed' })
  t.same([...new Set((await rows.locator('td:last-child').allTextContents()))], ['Cancelled'], 'each says why')
  t.match(page.url(), /\?status=skipped$/, 'the filter is in the address')
  await shot('05-cancelled')

  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Broadcasts' }).click()
  const row = page.locator(`tr[data-broadcast="${broadcastId}"]`)
  await row.waitFor()
  t.equal(await row.locator('[data-broadcast-status]').textContent(), 'cancelled')
  t.match(await row.textContent(), `${after.counts.skipped} skipped`)
  t.match(await row.textContent(), '5/s')
  await shot('06-list')
})

t.test('a broadcast for later: scheduled at its send time, read every 2 seconds only while the page is visible', async (t) => {
  const later = new Date(Date.now() + 3600_000)
  const local = new Date(later.getTime() - later.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
  await page.goto(`${baseUrl}/console/broadcasts/new`)
  await page.locator('#broadcast-template option', { hasText: 'order_update' }).waitFor({ state: 'attached' })
  await page.getByLabel('Template').selectOption('order_update')
  await page.getByLabel('Language').selectOption('ar')
  await page.getByLabel('Value of {{1}}').fill('Ines')
  await page.getByLabel('Value of {{2}}').fill('A-77')
  await page.getByRole('textbox', { name: /^Phone numbers/ }).fill('+1 557 6700001\n+1 557 6700002')
  await page.getByLabel(/^Send at/).fill(local)
  await page.getByRole('button', { name: 'Review' }).click()
  t.match(await page.locator('.template-preview').innerText(), /Ines/, 'the values filled in the preview')
  await page.getByRole('button', { name: 'Send to 2 numbers' }).click()
  await page.locator('[data-broadcast-status="scheduled"]').waitFor()
  const id = new URL(page.url()).pathname.split('/').at(-1)!
  const created = (await stack.call('GET', `/api/chat/broadcasts/${id}`, { token })).body as Broadcast & { sendAt: string, lang: string }
  t.match(created, { status: 'scheduled', total: 2, lang: 'ar', ratePerSecond: 20 })
  t.ok(Math.abs(Date.parse(created.sendAt) - later.getTime()) < 60_000, `sent at the time chosen: ${created.sendAt}`)

  let reads = 0
  const counted = (request: { url: () => string }): void => { if (new URL(request.url()).pathname === `/api/chat/broadcasts/${id}`) reads++ }
  page.on('request', counted)
  t.teardown(() => { page.off('request', counted) })
  await sleep(5000)
  t.ok(reads >= 2, `read again while visible (${reads} times in 5 s)`)
  await page.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true })
    document.dispatchEvent(new Event('visibilitychange'))
  })
  await sleep(500)
  reads = 0
  await sleep(4500)
  t.equal(reads, 0, 'not read while hidden')
  await page.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { value: 'visible', configurable: true })
    document.dispatchEvent(new Event('visibilitychange'))
  })
  await waitFor(async () => reads > 0 ? true : undefined, { what: 'a read once visible again', timeoutMs: 5000 })
  t.pass('read again once visible')

  page.once('dialog', (dialog) => { dialog.accept().catch(() => {}) })
  await page.getByRole('button', { name: 'Cancel' }).click()
  await page.locator('[data-broadcast-status="cancelled"]').waitFor()
  t.equal(await page.locator('[data-count="skipped"]').textContent(), '2', 'nothing was sent')
})

t.test('the inbox: a message the platform failed shows its reason under the bubble', async (t) => {
  const res = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Ines', text: 'Is my order ready?' }]), APP_SECRET)
  t.equal(res.status, 200)
  await waitFor(async () => ((await stack.call('GET', '/api/chat/conversations', { token })).body as Array<{ phone: string }>).some((c) => c.phone === CUSTOMER) ? true : undefined, { what: 'the customer\'s conversation' })
  const sent = await stack.call('POST', '/api/chat/send/text', { token, body: { to: CUSTOMER, text: 'Yes, it is ready.' } })
  t.equal(sent.status, 200)
  const wamid = sent.body.messages[0].id as string
  const errors = [{ code: 131026, title: 'Message undeliverable', message: 'Message undeliverable', error_data: { details: 'The recipient is not on the platform' } }]
  const failed = await deliver(`${baseUrl}/webhook/chat`, statusesDelivery(PHONE_NUMBER_ID, [{ wamid, status: 'failed', recipientId: CUSTOMER, errors }]), APP_SECRET)
  t.equal(failed.status, 200)

  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Inbox' }).click()
  await page.locator(`a[data-conversation="${CUSTOMER}"]`).click()
  await page.getByRole('heading', { name: 'Ines' }).waitFor()
  const message = page.locator('.message.outbound', { hasText: 'Yes, it is ready.' })
  const reason = message.locator('.failure-reason')
  await reason.waitFor({ timeout: 20_000 })
  t.equal(await reason.locator('summary').textContent(), 'Failed: Message undeliverable (131026)')
  t.equal(await reason.locator('summary').getAttribute('title'), 'The recipient is not on the platform', 'the details on hover')
  t.notOk(await reason.getByText('The recipient is not on the platform').isVisible(), 'folded until asked')
  await reason.locator('summary').click()
  t.ok(await reason.getByText('The recipient is not on the platform').isVisible(), 'and when expanded')
  t.equal(await message.locator('.ticks-failed').count(), 1)
  await shot('07-inbox-failed')
})

t.test('no request left localhost, no Content-Security-Policy violation, no script error', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
