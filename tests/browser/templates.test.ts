/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * Templates made in the console, in a real browser (Debian's Chromium, driven by playwright-core)
 * against real api and worker processes and the fake chat platform: a template written beside its
 * preview, a rule the platform would refuse named before it is called, the template submitted and
 * listed PENDING, approved by the platform's signed status webhook (the list follows it), offered in
 * a new broadcast and in a send_chat_template node's form (its values typed, the message previewed), and
 * deleted. Its pages are photographed into tests/browser/screenshots/templates/.
 */
import t from 'tap'
import { fakeChatEnv, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { openConsole, signIn, unlabelledControls } from './browser.ts'

const PHONE_NUMBER_ID = '106540352242925'
const APP_SECRET = 'browser-templates-app-secret'

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, { env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }) })
const { baseUrl, call } = stack
platform.options.webhook = { url: `${baseUrl}/webhook/chat`, appSecret: APP_SECRET, phoneNumberId: PHONE_NUMBER_ID }
const token = await stack.adminToken()

const { page, outside, cspViolations, pageErrors, shot } = await openConsole(t, baseUrl, { screenshots: 'templates' })
page.on('dialog', (dialog) => { dialog.accept().catch(() => {}) })

const row = page.locator('tr[data-template="delivery_window|en_US"]')

t.test('a template written beside its preview, refused by a rule before the platform is called, then submitted: PENDING', async (t) => {
  await signIn(page, baseUrl)
  await page.getByRole('link', { name: 'Templates' }).click()
  await page.locator('#no-templates').waitFor()
  await page.getByLabel('Name (lowercase letters, digits, _)').fill('delivery_window')
  await page.getByLabel('Category').selectOption('UTILITY')
  await page.getByLabel('Header (optional, up to 60 characters)').fill('Your delivery')
  await page.getByLabel(/^Body/).fill('Hi {{1}}, we deliver on {{2}} between 9 and 12.')
  await page.getByLabel('Example of {{1}}').fill('Ana')
  await page.getByLabel('Example of {{2}}').fill('Monday')
  await page.getByLabel('Footer (optional, up to 60 characters)').fill('Ana’s Bakery')
  await page.getByRole('button', { name: 'Add a button' }).click()
  await page.getByLabel('Text of button 1').fill('Change the day')
  const preview = page.getByLabel('The new template as the customer reads it')
  t.equal(await preview.locator('.template-body').textContent(), 'Hi Ana, we deliver on Monday between 9 and 12.', 'the examples filled in as it is typed')
  t.match(await preview.innerText(), /Your delivery[\s\S]*Ana’s Bakery[\s\S]*Change the day/, 'header, footer and button')

  // Variables numbered with a gap: the platform's rule, named by the api, and nothing sent to the platform.
  const body = page.getByLabel(/^Body/)
  await body.fill('Hi {{1}}, we deliver on {{3}} between 9 and 12.')
  await page.getByLabel('Example of {{3}}').fill('Monday')
  const before = platform.requests.length
  await page.getByRole('button', { name: 'Submit for review' }).click()
  await page.getByRole('alert').filter({ hasText: 'components[1].text must number its variables {{1}} to {{2}} without a gap: {{2}} is missing' }).waitFor()
  t.notOk(platform.requests.slice(before).some((request) => request.path.endsWith('/message_templates')), 'the platform was not called')

  await body.fill('Hi {{1}}, we deliver on {{2}} between 9 and 12.')
  t.same(await unlabelledControls(page), [])
  await shot('01-editor')
  await page.getByRole('button', { name: 'Submit for review' }).click()
  await row.locator('[data-template-status="PENDING"]').waitFor()
  const [stored] = (await call('GET', '/api/chat/templates?status=all', { token })).body
  t.match(stored, { name: 'delivery_window', language: 'en_US', category: 'UTILITY', status: 'PENDING' })
})

t.test('the platform approves it: the list follows, and a new broadcast offers it', async (t) => {
  t.equal(await platform.reviewTemplate({ name: 'delivery_window', language: 'en_US', event: 'APPROVED' }), 200)
  await row.locator('[data-template-status="APPROVED"]').waitFor({ timeout: 20_000 })
  await shot('02-approved')
  await page.getByRole('link', { name: 'Broadcasts' }).click()
  await page.getByRole('link', { name: 'New broadcast' }).click()
  await page.locator('#broadcast-template option', { hasText: 'delivery_window' }).waitFor({ state: 'attached' })
  await page.getByLabel('Template').selectOption('delivery_window')
  await page.getByLabel('Value of {{1}}').fill('Ines')
  t.match(await page.getByLabel('Value of {{2}}').count(), 1, 'one field per variable')
})

t.test('in the builder, a send_chat_template node\'s template is picked from the approved ones and its values typed, with the message previewed', async (t) => {
  const id = await stack.client.createWorkflow(token, {
    name: 'delivery notice',
    nodes: [{ id: 'notice', type: 'send_chat_template', config: { phone: '{{triggerData.phone}}', templateName: 'hello_world' } }]
  })
  await page.goto(`${baseUrl}/console/workflows/${id}/builder`)
  await page.locator('.react-flow__node[data-id="notice"]').click()
  await page.getByLabel('Approved template').selectOption('delivery_window|en_US')
  await page.getByLabel('Value of {{1}}').fill('{{triggerData.name}}')
  await page.getByLabel('Value of {{2}}').fill('Monday')
  t.equal(await page.getByLabel('The template as the customer reads it').locator('.template-body').textContent(), 'Hi {{triggerData.name}}, we deliver on Monday between 9 and 12.')
  await shot('03-node')
  await page.getByRole('button', { name: 'Save' }).click()
  await page.getByText('Saved: version 2').waitFor()
  const [node] = (await call('GET', `/api/automation/workflows/${id}`, { token })).body.nodes
  t.match(node.config, {
    templateName: 'delivery_window',
    lang: 'en_US',
    components: [{ type: 'body', parameters: [{ type: 'text', text: '{{triggerData.name}}' }, { type: 'text', text: 'Monday' }] }]
  }, 'the node sends the template with its values')
})

t.test('a rejected template shows its reason; a template is deleted from the list', async (t) => {
  await page.getByRole('link', { name: 'Templates' }).click()
  await row.waitFor()
  t.equal(await platform.reviewTemplate({ name: 'delivery_window', language: 'en_US', event: 'REJECTED', reason: 'INVALID_FORMAT' }), 200)
  await page.reload()
  await row.locator('[data-template-status="REJECTED"]').waitFor()
  t.match(await row.innerText(), /INVALID_FORMAT/)
  await row.getByRole('button', { name: 'Delete delivery_window' }).click()
  await page.locator('#no-templates').waitFor()
  t.same((await call('GET', '/api/chat/templates?status=all', { token })).body, [])
})

t.test('nothing left the origin, broke the Content-Security-Policy or threw', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
