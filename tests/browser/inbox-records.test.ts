/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * What the inbox records about a conversation, in a real browser (Debian's Chromium, driven by
 * playwright-core) against real api and worker processes and the fake chat platform: who sent each
 * message (a workflow, with a link to its run; a person, by their email), a template as the customer
 * read it, labels added and removed on
 * the conversation and shown in the list, the contact beside the thread with its consent and labels,
 * and a broadcast to a label confirmed after seeing how many contacts carry it. Its pages are
 * photographed into tests/browser/screenshots/inbox-records/.
 */
import t from 'tap'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { deliver, fakeChatEnv, messagesDelivery, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { openConsole, signIn, unlabelledControls } from './browser.ts'

const PHONE_NUMBER_ID = '106540352242924'
const APP_SECRET = 'browser-inbox-records-app-secret'
const RITA = '15557650201'

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, { env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }) })
const { baseUrl, call, client } = stack
const token = await stack.adminToken()
const tracker = await client.createWorkflow(token, {
  name: 'order tracker',
  triggerType: 'KEYWORD',
  triggerConfig: { keywords: ['order'] },
  nodes: [{ id: 'answer', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Your order left the warehouse today.' } }]
})

const { page, outside, cspViolations, pageErrors, shot } = await openConsole(t, baseUrl, { screenshots: 'inbox-records' })

interface Conversation { id: string, phone: string, labels: string[] }

const conversationOf = async (phone: string): Promise<Conversation> => waitFor(async () =>
  ((await call('GET', '/api/chat/conversations?limit=500', { token })).body as Conversation[]).find((c) => c.phone === phone), { what: `the conversation of ${phone}` })

t.test('a workflow\'s answer says it came from a workflow and links to its run; a staff reply names its sender', async (t) => {
  const res = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: RITA, name: 'Rita', text: 'order' }]), APP_SECRET)
  t.equal(res.status, 200)
  const [run] = await waitFor(async () => {
    const runs = await client.runsOf(token, tracker)
    return runs.length === 1 && runs[0]!.status === 'SUCCESS' ? runs : undefined
  }, { what: 'the tracker\'s run' })

  await signIn(page, baseUrl)
  await page.getByRole('link', { name: 'Inbox' }).first().click()
  await page.locator(`a[data-conversation="${RITA}"]`).click()
  const answer = page.locator('.message.outbound', { hasText: 'Your order left the warehouse today.' })
  await answer.waitFor()
  t.equal(await answer.locator('.sender').getAttribute('data-sender'), 'workflow')
  t.equal(await answer.getByRole('link', { name: 'its run' }).getAttribute('href'), `/console/runs/${run!.id}`, 'the run that sent it')

  await page.getByLabel(/^Reply/).fill('Hi Rita, Sam here: it arrives tomorrow.')
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  const reply = page.locator('.message.outbound', { hasText: 'Sam here' })
  await reply.waitFor()
  t.equal(await reply.locator('.sender').getAttribute('data-sender'), 'user')
  t.match(await reply.locator('.sender').innerText(), TEST_ADMIN.email)
  await shot('01-senders')
})

t.test('a template a workflow sent shows as the customer read it: the template\'s text with its values', async (t) => {
  const run = await client.runWorkflow(token, {
    nodes: [{ id: 'notice', type: 'send_chat_template', config: { phone: RITA, templateName: 'order_update', lang: 'en_US', components: [{ type: 'body', parameters: [{ type: 'text', text: 'Rita' }, { type: 'text', text: 'A-12' }] }] } }]
  }, {}, { timeoutMs: 20_000 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  const sent = page.locator('.message.outbound', { hasText: 'Good news Rita! Order A-12 has shipped.' })
  await sent.waitFor()
  t.equal(await sent.locator('.sender').getAttribute('data-sender'), 'workflow')
  t.equal(await page.locator('.message', { hasText: '[template]' }).count(), 0, 'never its name in brackets')
})

t.test('labels: added to the conversation and shown in the list, removed with their ×; the contact beside the thread', async (t) => {
  const conversation = await conversationOf(RITA)
  await page.getByLabel('Add a label to the conversation').fill('vip')
  await page.locator('[data-labels-of="conversation"]').getByRole('button', { name: 'Add label' }).click()
  await page.locator(`a[data-conversation="${RITA}"] .tag`, { hasText: 'vip' }).waitFor()
  await page.getByLabel('Add a label to the conversation').fill('late-delivery')
  await page.locator('[data-labels-of="conversation"]').getByRole('button', { name: 'Add label' }).click()
  await page.getByRole('button', { name: 'Remove the label late-delivery from the conversation' }).waitFor()
  t.same((await conversationOf(RITA)).labels.sort(), ['late-delivery', 'vip'])
  await page.getByRole('button', { name: 'Remove the label late-delivery from the conversation' }).click()
  await waitFor(async () => (await conversationOf(RITA)).labels.join() === 'vip' ? true : undefined, { what: 'the label removed' })
  t.equal(conversation.phone, RITA)

  const panel = page.getByRole('complementary', { name: 'Contact' })
  await panel.locator('#contact-consent', { hasText: 'Subscribed' }).waitFor()
  await panel.getByLabel('Add a label to the contact').fill('gold')
  await panel.getByRole('button', { name: 'Add label' }).click()
  await panel.getByRole('button', { name: 'Remove the label gold from the contact' }).waitFor()
  const [contact] = (await call('GET', `/api/chat/contacts?search=${RITA}`, { token })).body as Array<{ labels: string[] }>
  t.same(contact?.labels, ['gold'], 'the contact carries it')
  const labels = (await call('GET', '/api/chat/labels', { token })).body
  t.same(labels, [{ name: 'gold', conversations: 0, contacts: 1 }, { name: 'vip', conversations: 1, contacts: 0 }], 'the number\'s labels, counted')
  t.same(await unlabelledControls(page), [])
  await shot('02-labels-and-contact')
})

t.test('a broadcast to a label is sent only after its count is seen', async (t) => {
  await page.goto(`${baseUrl}/console/broadcasts/new`)
  await page.locator('#broadcast-template option', { hasText: 'hello_world' }).waitFor({ state: 'attached' })
  await page.getByLabel('Template').selectOption('hello_world')
  await page.getByLabel('Contacts with a label').check()
  await page.getByLabel(/^Label/).fill('gold')
  await page.getByRole('button', { name: 'Review' }).click()
  const review = page.getByRole('region', { name: 'Send hello_world (en_US) to 1 contact labelled gold?' })
  await review.waitFor()
  t.equal((await call('GET', '/api/chat/broadcasts', { token })).body.length, 0, 'nothing sent before it is confirmed')
  await shot('03-broadcast-review')
  await review.getByRole('button', { name: 'Send to 1 contact labelled gold' }).click()
  await page.getByRole('heading', { level: 1, name: 'Broadcast of hello_world' }).waitFor()
  t.match((await call('GET', '/api/chat/broadcasts', { token })).body, [{ total: 1, templateName: 'hello_world' }], 'one recipient: the contact labelled gold')
})

t.test('a customer whose phone is withheld is named by their username and answered by their platform user id', async (t) => {
  const userId = 'US.13491208655302741918'
  const res = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: '15557650299', withholdPhone: true, userId, username: '@lena', name: 'Lena', text: 'is the shop open?' }]), APP_SECRET)
  t.equal(res.status, 200)
  await page.goto(`${baseUrl}/console/inbox`)
  const item = page.locator(`a[data-conversation="${userId}"]`)
  await item.waitFor()
  await item.click()
  await page.locator('#conversation-title', { hasText: 'Lena' }).waitFor()
  t.equal(await page.locator('#conversation-title + .mono').textContent(), '@lena', 'the username where the phone would be')
  const panel = page.getByRole('complementary', { name: 'Contact' })
  await panel.getByText('@lena', { exact: true }).waitFor()
  await page.getByLabel(/^Reply/).fill('Open until six.')
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  await page.locator('.message.outbound', { hasText: 'Open until six.' }).waitFor()
  const sent = platform.sends().map((send) => send.body as { to?: string, recipient?: string, text?: { body: string } }).find((body) => body.text?.body === 'Open until six.')
  t.match(sent, { recipient: userId }, 'sent by recipient')
  t.notOk(sent?.to)
  await shot('04-customer-known-by-username')
})

t.test('nothing left the origin, broke the Content-Security-Policy or threw', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
