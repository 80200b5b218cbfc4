/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * The team inbox in the console, in a real browser (Debian's Chromium, driven by playwright-core)
 * against real api and worker processes and the fake chat platform: the inbox is live (its event
 * stream, read with fetch), so a customer's conversation and then their next message appear without
 * a reload and long before the fallback poll; the conversation is assigned to me from its header and
 * found by the "Assigned to me" and label filters; a canned reply is inserted by typing `/` and sent
 * as written; one is added from the inbox's list. Its pages are photographed into
 * tests/browser/screenshots/team-inbox/.
 */
import t from 'tap'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { deliver, fakeChatEnv, messagesDelivery, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { openConsole, signIn, unlabelledControls } from './browser.ts'

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'browser-team-inbox-app-secret'
const LENA = '15557650101'
const OMAR = '15557650102'
const HOURS = 'We are open from 9 to 17, Monday to Friday.'
/** Far quicker than the inbox's fallback poll while its stream is open (60 s): only the stream explains it. */
const LIVE_MS = 8000

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, { env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }) })
const { baseUrl } = stack
const token = await stack.adminToken()
const colleague = await stack.client.newUser(token)
const hours = await stack.call('POST', '/api/chat/canned-replies', { token, body: { shortcut: 'hours', title: 'Opening hours', text: HOURS } })
if (hours.status !== 201) throw new Error(`canned reply: ${hours.status}`)

const { page, outside, cspViolations, pageErrors, shot } = await openConsole(t, baseUrl, { screenshots: 'team-inbox' })

interface Conversation { id: string, phone: string, assignedAgentId: string | null }

async function say (phone: string, name: string, text: string): Promise<void> {
  const res = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: phone, name, text }]), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
}

const conversationOf = async (phone: string): Promise<Conversation> => waitFor(async () =>
  ((await stack.call('GET', '/api/chat/conversations?limit=500', { token })).body as Conversation[]).find((c) => c.phone === phone), { what: `the conversation of ${phone}` })

const shownPhones = async (): Promise<string[]> => page.locator('a[data-conversation]').evaluateAll((links) => links.map((link) => link.getAttribute('data-conversation') ?? ''))

const admin = ((await stack.call('GET', '/api/users?limit=500', { token })).body as Array<{ id: string, email: string }>).find((user) => user.email === TEST_ADMIN.email)!

t.test('the inbox is live: a customer\'s conversation appears without a reload', async (t) => {
  await signIn(page, baseUrl)
  await page.getByRole('link', { name: 'Inbox' }).first().click()
  await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor()
  await page.locator('#inbox-live').waitFor()
  t.equal(await page.locator('#inbox-live').textContent(), 'Live')
  await page.getByText('No conversation yet: a customer\'s first message opens one.').waitFor()

  const started = Date.now()
  await say(LENA, 'Lena', 'When are you open?')
  await page.locator(`a[data-conversation="${LENA}"]`).waitFor({ timeout: LIVE_MS })
  t.ok(Date.now() - started < LIVE_MS, `shown ${Date.now() - started} ms after the delivery`)
  await shot('01-live')
})

t.test('assign to me from the conversation\'s header; the list says so', async (t) => {
  await page.locator(`a[data-conversation="${LENA}"]`).click()
  await page.getByRole('heading', { name: 'Lena' }).waitFor()
  const picker = page.getByLabel('Assigned to', { exact: true })
  t.equal(await picker.inputValue(), '', 'nobody yet')
  const options = await picker.locator('option').allTextContents()
  t.ok(options.includes(`${TEST_ADMIN.email} (you)`) && options.includes(colleague.email), `whoever can use the account: ${options.join(', ')}`)
  await page.getByRole('button', { name: 'Assign to me' }).click()
  await waitFor(async () => (await conversationOf(LENA)).assignedAgentId === admin.id ? true : undefined, { what: 'the assignment' })
  await page.locator(`a[data-conversation="${LENA}"] .assignee`, { hasText: 'Assigned to you' }).waitFor()
  t.equal(await picker.inputValue(), admin.id)
  await page.locator('#assistant-paused').waitFor()
  t.pass('assigning a person paused the assistant')

  await picker.selectOption({ label: colleague.email })
  await page.locator(`a[data-conversation="${LENA}"] .assignee`, { hasText: `Assigned to ${colleague.email}` }).waitFor()
  t.equal((await conversationOf(LENA)).assignedAgentId, colleague.id)
  await picker.selectOption({ label: `${TEST_ADMIN.email} (you)` })
  await page.locator(`a[data-conversation="${LENA}"] .assignee`, { hasText: 'Assigned to you' }).waitFor()
  t.same(await unlabelledControls(page), [])
  await shot('02-assigned')
})

t.test('the Assigned to me and label filters', async (t) => {
  await say(OMAR, 'Omar', 'Hello?')
  await page.locator(`a[data-conversation="${OMAR}"]`).waitFor({ timeout: LIVE_MS })
  const omar = await conversationOf(OMAR)
  t.equal((await stack.call('PATCH', `/api/chat/conversations/${omar.id}`, { token, body: { labels: ['vip'] } })).status, 200)

  const filters = page.getByRole('form', { name: 'Filter conversations' })
  await filters.getByLabel('Assigned').selectOption({ label: 'Assigned to me' })
  await waitFor(async () => (await shownPhones()).join() === LENA ? true : undefined, { what: 'only my conversation' })
  t.match(page.url(), /assigned=me/)
  await filters.getByLabel('Assigned').selectOption({ label: 'Unassigned' })
  await waitFor(async () => (await shownPhones()).join() === OMAR ? true : undefined, { what: 'only the unassigned one' })
  await filters.getByLabel('Assigned').selectOption({ label: 'Anyone' })
  const label = filters.getByLabel('Label')
  await label.fill('vip')
  await label.press('Enter')
  await waitFor(async () => (await shownPhones()).join() === OMAR ? true : undefined, { what: 'only the vip one' })
  t.match(page.url(), /label=vip/)
  await shot('03-filtered')
  await label.fill('nobody-has-this')
  await label.press('Enter')
  await page.getByText('No conversation matches these filters.').waitFor()
  await label.fill('')
  await label.press('Enter')
  await waitFor(async () => (await shownPhones()).length === 2 ? true : undefined, { what: `both again: ${page.url()} ${(await shownPhones()).join()}` })
})

t.test('a canned reply: / shows the shortcuts, Enter inserts the text, Send sends it as written', async (t) => {
  await page.locator(`a[data-conversation="${LENA}"]`).click()
  await page.getByRole('heading', { name: 'Lena' }).waitFor()
  const reply = page.getByLabel(/^Reply/)
  await reply.fill('/')
  const suggestions = page.getByRole('listbox', { name: 'Canned replies' })
  await suggestions.waitFor()
  t.same(await suggestions.getByRole('option').allTextContents(), ['/hours Opening hours'])
  await reply.pressSequentially('ho')
  await suggestions.getByRole('option', { name: '/hours Opening hours', selected: true }).waitFor()
  await shot('04-canned-suggestions')
  await reply.press('Enter')
  t.equal(await reply.inputValue(), HOURS, 'the reply\'s text, in place of what was typed')
  await suggestions.waitFor({ state: 'detached' })
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  await page.locator('.message.outbound', { hasText: HOURS }).waitFor()
  const sent = platform.sends().map((send) => send.body as { to?: string, text?: { body: string } }).filter((body) => body.to === LENA)
  t.same(sent.map((body) => body.text?.body), [HOURS], 'sent once, as written')

  await reply.fill('/nothing-like-it')
  t.equal(await suggestions.count(), 0, 'no shortcut matches: no suggestions')
  await reply.fill('')
})

t.test('the customer writes again: the open thread shows it without a reload', async (t) => {
  const started = Date.now()
  await say(LENA, 'Lena', 'Thanks, see you tomorrow!')
  await page.locator('.message.inbound', { hasText: 'Thanks, see you tomorrow!' }).waitFor({ timeout: LIVE_MS })
  t.ok(Date.now() - started < LIVE_MS, `shown ${Date.now() - started} ms after the delivery`)
  await shot('05-live-thread')
})

t.test('a canned reply added from the inbox is offered at once', async (t) => {
  await page.locator('.canned-replies summary').click()
  t.same(await page.locator('.canned-list li').evaluateAll((items) => items.map((item) => item.getAttribute('data-shortcut'))), ['hours'])
  await page.getByLabel(/^Shortcut/).fill('thanks')
  await page.getByLabel('Title').fill('Thank you')
  await page.getByLabel('Text', { exact: true }).fill('Thank you for writing to us!')
  await page.getByRole('form', { name: 'New canned reply' }).getByRole('button', { name: 'Add' }).click()
  await page.locator('.canned-list li[data-shortcut="thanks"]').waitFor()
  t.same(((await stack.call('GET', '/api/chat/canned-replies', { token })).body as Array<{ shortcut: string }>).map((r) => r.shortcut), ['hours', 'thanks'])

  await page.getByLabel(/^Shortcut/).fill('hours')
  await page.getByLabel('Title').fill('Again')
  await page.getByLabel('Text', { exact: true }).fill('x')
  await page.getByRole('form', { name: 'New canned reply' }).getByRole('button', { name: 'Add' }).click()
  await page.getByRole('alert').filter({ hasText: 'A canned reply with the shortcut hours already exists' }).waitFor()
  t.same(await unlabelledControls(page), [])
  await shot('06-canned-replies')

  await page.getByLabel(/^Reply/).fill('/th')
  t.same(await page.getByRole('listbox', { name: 'Canned replies' }).getByRole('option').allTextContents(), ['/thanks Thank you'])
})

t.test('no request left localhost, no Content-Security-Policy violation, no script error', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
