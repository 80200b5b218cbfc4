/// <reference lib="dom" />
/**
 * A menu workflow in the inbox, in a real browser (Debian's Chromium, driven by playwright-core)
 * against real api and worker processes and the fake chat platform: a customer's "menu" starts a
 * KEYWORD workflow that offers two buttons; the customer taps one; the KEYWORD workflow matched by
 * the tap's id answers. Staff watch the whole exchange appear in the open conversation.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import t from 'tap'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { deliver, fakeChatEnv, inboundInteractiveReply, messagesDelivery, newWamid, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'

const CHROMIUM = '/usr/bin/chromium'
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CONSOLE_DIST = join(ROOT, 'apps/console/dist')
const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'browser-chat-menu-app-secret'
const CUSTOMER = '15557650003'

if (!existsSync(CHROMIUM)) {
  process.stderr.write(`${CHROMIUM} is missing: install Debian's chromium (as root: apt-get install -y chromium; pnpm test run as root installs it itself)\n`)
  process.exit(1)
}
if (!existsSync(join(CONSOLE_DIST, 'index.html'))) {
  execFileSync(process.execPath, [join(ROOT, 'apps/console/node_modules/vite/bin/vite.js'), 'build'], { cwd: join(ROOT, 'apps/console'), stdio: 'ignore' })
}

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

const profile = await mkdtemp(join(tmpdir(), 'switchboard-chromium-'))
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1366, height: 900 },
  timeout: 30_000
})
t.teardown(async () => {
  await browser.close()
  await rm(profile, { recursive: true, force: true })
})
const page = browser.pages()[0] ?? await browser.newPage()
page.setDefaultTimeout(20_000)
const pageErrors: string[] = []
page.on('pageerror', (error) => { pageErrors.push(error.message) })

async function customerSays (message: Record<string, unknown>): Promise<void> {
  const res = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Ines', wamid: newWamid(), ...message }]), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
}

t.test('the customer asks for the menu, taps a button, and the workflow the tap matches answers: all of it shows in the open conversation', async (t) => {
  await customerSays({ text: 'menu' })
  await page.goto(`${baseUrl}/console/login`)
  await page.getByLabel('Email').fill(TEST_ADMIN.email)
  await page.getByLabel('Password').fill(TEST_ADMIN.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
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
