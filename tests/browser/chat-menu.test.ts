/// <reference lib="dom" />
/**
 * A menu workflow in the inbox, in a real browser (Debian's Chromium, driven by playwright-core)
 * against real api and worker processes and the fake chat platform: a customer's "menu" starts a
 * KEYWORD workflow that offers two buttons; the customer taps one; the KEYWORD workflow matched by
 * the tap's id answers. Staff watch the whole exchange appear in the open conversation.
 */
import t from 'tap'
import { deliver, fakeChatEnv, inboundInteractiveReply, messagesDelivery, newWamid, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { openConsole, signIn } from './browser.ts'

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'browser-chat-menu-app-secret'
const CUSTOMER = '15557650003'

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, { env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }) })
const { baseUrl, client } = stack
const token = await stack.adminToken()

await client.createWorkflow(token, {
  name: 'menu',
  triggerType: 'KEYWORD',
  triggerConfig: { keywords: ['menu'], match: 'exact' },
  nodes: [{
    id: 'offer',
    type: 'send_chat_interactive',
    config: { phone: '{{triggerData.phone}}', type: 'button', body: 'How can we help?', buttons: [{ id: 'track', title: 'Track my order' }, { id: 'human', title: 'Talk to us' }] }
  }]
})
await client.createWorkflow(token, {
  name: 'track',
  triggerType: 'KEYWORD',
  triggerConfig: { keywords: ['track'] },
  nodes: [{ id: 'answer', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Your order {{triggerData.interactive.title}}: it left the warehouse today.' } }]
})

const { page, pageErrors } = await openConsole(t, baseUrl, { screenshots: 'chat-menu', timeoutMs: 20_000 })

async function customerSays (message: Record<string, unknown>): Promise<void> {
  const res = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Ines', wamid: newWamid(), ...message }]), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
}

t.test('the customer asks for the menu, taps a button, and the workflow the tap matches answers: all of it shows in the open conversation', async (t) => {
  await customerSays({ text: 'menu' })
  await signIn(page, baseUrl)
  await page.goto(`${baseUrl}/console/inbox`)
  await page.locator(`a[data-conversation="${CUSTOMER}"]`).click()
  await page.getByRole('heading', { name: 'Ines' }).waitFor()
  await page.locator('.message.outbound', { hasText: 'How can we help?' }).waitFor()
  const [menu] = platform.sends().filter((send) => (send.body as { type?: string }).type === 'interactive')
  t.match(menu?.body, { to: CUSTOMER, interactive: { type: 'button', action: { buttons: [{ reply: { id: 'track' } }, { reply: { id: 'human' } }] } } }, 'the platform received the menu')

  await customerSays({ message: inboundInteractiveReply('button_reply', { id: 'track', title: 'Track my order' }) })
  await page.locator('.message.inbound', { hasText: 'Track my order' }).waitFor()
  await page.locator('.message.outbound', { hasText: 'Your order Track my order: it left the warehouse today.' }).waitFor()
  t.pass('the tap and the answer appeared without a reload')
  t.same(pageErrors, [])
})
