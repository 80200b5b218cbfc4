/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * The console's pages for what had routes but no page, in a real browser (Debian's Chromium,
 * driven by playwright-core) against real api and worker processes and the fake chat platform:
 * credentials (added, given new values, a delete refused while a workflow uses one; no value ever
 * on the page), the audit log filtered, contacts imported from a file, found and edited, a
 * number's assistant and consent keywords saved, and a workflow's error workflow made from the
 * editor's example and chosen. Each page is photographed into
 * tests/browser/screenshots/settings-pages/.
 */
import t from 'tap'
import { fakeChatEnv, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { openConsole, signIn, unlabelledControls } from './browser.ts'

const PHONE_NUMBER_ID = '106540352242923'
const SECRET = 'tok-7c1d0e55aa19'
const NEW_SECRET = 'tok-rotated-90b2f1'

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, { env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: 'browser-settings-app-secret' }) })
const { baseUrl, call } = stack
const token = await stack.adminToken()

const { page, outside, cspViolations, pageErrors, shot } = await openConsole(t, baseUrl, { screenshots: 'settings-pages' })
page.on('dialog', (dialog) => { dialog.accept().catch(() => {}) })

t.test('credentials: added from the form, used by a workflow, a delete refused with the api\'s reason, new values saved; no value shown', async (t) => {
  await signIn(page, baseUrl)
  await page.getByRole('link', { name: 'Credentials' }).click()
  await page.getByText('No credential yet').waitFor()
  await page.getByLabel('Name (letters, digits, _ and -)').fill('billing_api')
  await page.getByLabel('Type', { exact: true }).selectOption('bearer')
  await page.getByLabel('token', { exact: true }).fill(SECRET)
  await page.getByRole('button', { name: 'Add credential' }).click()
  const row = page.locator('tr[data-credential="billing_api"]')
  await row.waitFor()
  t.equal(await row.locator('td').nth(1).textContent(), 'token', 'its fields are named')

  await page.getByLabel('Type', { exact: true }).selectOption('generic')
  await page.getByLabel('Name (letters, digits, _ and -)').fill('crm')
  await page.getByLabel('Name of field 1').fill('apiKey')
  await page.getByLabel('Value of field 1').fill('crm-key-0123456789')
  await page.getByRole('button', { name: 'Add a field' }).click()
  await page.getByLabel('Name of field 2').fill('region')
  await page.getByLabel('Value of field 2').fill('eu-west-1a')
  await page.getByRole('button', { name: 'Add credential' }).click()
  await page.locator('tr[data-credential="crm"] td', { hasText: 'apiKey, region' }).waitFor()

  const created = await call('POST', '/api/automation/workflows', {
    token,
    body: { name: 'Billing sync', triggerType: 'MANUAL', nodes: [{ id: 'call', type: 'http_request', config: { method: 'GET', url: 'https://billing.example/api', credential: 'billing_api' } }] }
  })
  t.equal(created.status, 201, 'a workflow uses it')
  await row.getByRole('button', { name: 'Delete billing_api' }).click()
  await row.getByRole('alert').filter({ hasText: 'Credential is used by workflows: Billing sync' }).waitFor()

  const before = (await call('GET', '/api/automation/credentials', { token })).body.find((credential: { name: string }) => credential.name === 'billing_api')
  await row.getByRole('button', { name: 'Replace the values of billing_api' }).click()
  await row.getByLabel('token', { exact: true }).fill(NEW_SECRET)
  await row.getByRole('button', { name: 'Save new values' }).click()
  await row.getByText('New values saved').waitFor()
  const after = (await call('GET', '/api/automation/credentials', { token })).body.find((credential: { name: string }) => credential.name === 'billing_api')
  t.not(after.updatedAt, before.updatedAt, 'the api took the new values')
  const text = await page.locator('main').innerText()
  t.notOk(text.includes(SECRET) || text.includes(NEW_SECRET) || text.includes('crm-key-0123456789'), 'no value is on the page')
  t.same(await unlabelledControls(page), [])
  await shot('credentials')
})

t.test('the audit log: what was just done, filtered by action and by who, paged in the address', async (t) => {
  await page.goto(`${baseUrl}/console/admin`)
  await page.getByRole('link', { name: 'Audit log' }).click()
  await page.locator('#audit-log tr[data-action="credential.created"]').first().waitFor()
  await page.getByRole('combobox', { name: /^Action/ }).selectOption('credential.updated')
  await page.waitForURL(/action=credential\.updated/)
  // The unfiltered rows stay on screen until the filtered list has come: wait for it, not for any row.
  const rows = page.locator('#audit-log tbody tr')
  const actions = await waitFor(async () => {
    const shown = await rows.evaluateAll((all) => all.map((row) => row.getAttribute('data-action')))
    return shown.length > 0 && shown.every((action) => action === 'credential.updated') ? shown : undefined
  }, { what: 'the audit log filtered by credential.updated' })
  t.same(actions, ['credential.updated'], 'only the new values, once')
  await page.getByRole('combobox', { name: /^Action/ }).selectOption('broadcast.created')
  await page.getByText('Nothing recorded matches these filters.').waitFor()
  t.same(await unlabelledControls(page), [])
  await page.getByRole('combobox', { name: /^Action/ }).selectOption('')
  await page.locator('#audit-log tbody tr').first().waitFor()
  await shot('audit-log')
})

t.test('contacts: imported from a CSV file (a bad row named), found by name, labelled and given an attribute', async (t) => {
  await page.getByRole('link', { name: 'Contacts' }).click()
  await page.locator('#no-contacts').waitFor()
  await page.getByLabel('CSV file').setInputFiles({
    name: 'customers.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from('phone,name,labels,attr.plan\n+1 555 010 0001,Ana Lima,newsletter,gold\n15550100002,Bruno,,\nnot-a-phone,Nobody,,\n15550100003,Carla,newsletter;vip,silver\n')
  })
  await page.getByRole('button', { name: 'Import' }).click()
  await page.locator('#import-result', { hasText: '3 added, 0 updated, 1 skipped' }).waitFor()
  t.match(await page.locator('#import-result').innerText(), /Line 4: /, 'the bad row is named by its line')
  await page.locator('tr[data-contact="15550100003"]').waitFor()
  t.equal(await page.locator('#contacts tbody tr').count(), 3, 'the list shows what was imported')

  await page.getByLabel('Phone or name').fill('ana')
  await page.getByLabel('Phone or name').press('Enter')
  await page.waitForURL(/search=ana/)
  const ana = page.locator('tr[data-contact="15550100001"]')
  await page.locator('tr[data-contact="15550100002"]').waitFor({ state: 'detached' })
  t.equal(await page.locator('#contacts tbody tr').count(), 1, 'found by a prefix of the name, any case')
  await ana.getByRole('button', { name: 'Edit 15550100001' }).click()
  await ana.getByLabel('Labels (separated by commas)').fill('newsletter, vip')
  await ana.getByLabel(/^Attributes/).fill('plan = platinum\ncity = Lisbon')
  await ana.getByRole('button', { name: 'Save contact' }).click()
  await ana.locator('.tag', { hasText: 'vip' }).waitFor()
  const contacts = (await call('GET', '/api/chat/contacts?search=ana', { token })).body
  t.match(contacts, [{ name: 'Ana Lima', labels: ['newsletter', 'vip'], attributes: { plan: 'platinum', city: 'Lisbon' } }])

  await page.getByLabel('Phone or name').fill('')
  await page.getByLabel('Phone or name').press('Enter')
  await page.locator('tr[data-contact="15550100002"]').waitFor()
  await page.getByLabel('Label', { exact: true }).fill('vip')
  await page.getByLabel('Label', { exact: true }).press('Enter')
  await page.waitForURL(/label=vip/)
  await page.locator('tr[data-contact="15550100002"]').waitFor({ state: 'detached' })
  await page.locator('tr[data-contact="15550100003"]').waitFor()
  t.equal(await page.locator('#contacts tbody tr').count(), 2, 'the two contacts labelled vip')
  t.same(await unlabelledControls(page), [])
  await shot('contacts')
})

t.test('chat settings: the assistant\'s instructions and wait, and an opt-out keyword, saved for the number', async (t) => {
  await page.goto(`${baseUrl}/console/inbox`)
  await page.getByRole('link', { name: 'Assistant and consent' }).click()
  await page.getByRole('heading', { level: 1, name: 'Chat settings' }).waitFor()
  await page.getByLabel('Instructions').fill('You answer for Ana’s Bakery: open 8 to 18.')
  await page.getByLabel('Wait for more messages (ms, 0 to 30000)').fill('500')
  await page.getByRole('button', { name: 'Save assistant' }).click()
  await page.getByText('Saved: the next turns use these settings').waitFor()
  const assistant = (await call('GET', '/api/chat/accounts/default/assistant', { token })).body
  t.match(assistant, { instructions: 'You answer for Ana’s Bakery: open 8 to 18.', debounceMs: 500 })

  const optOut = page.getByLabel('Opt-out keywords, one a line')
  await optOut.fill(`${await optOut.inputValue()}\nbasta`)
  await page.getByRole('button', { name: 'Save consent keywords' }).click()
  await page.getByText('Saved: the next messages are matched').waitFor()
  const consent = (await call('GET', '/api/chat/accounts/default/consent', { token })).body
  t.ok(consent.optOutKeywords.includes('BASTA'), 'the keyword is matched in upper case')
  t.ok(consent.optOutKeywords.includes('STOP'), 'the defaults kept')

  await page.getByLabel('Wait for more messages (ms, 0 to 30000)').fill('40000')
  await page.getByRole('button', { name: 'Save assistant' }).click()
  t.equal(await page.locator('#assistant-debounce:invalid').count(), 1, 'beyond its bound the form is not sent')
  t.equal((await call('GET', '/api/chat/accounts/default/assistant', { token })).body.debounceMs, 500)
  t.same(await unlabelledControls(page), [])
  await shot('chat-settings')
})

t.test('a workflow\'s error workflow: the example that sends a WhatsApp message made from the editor, chosen and saved', async (t) => {
  const workflowId = (await call('POST', '/api/automation/workflows', { token, body: { name: 'Nightly export', triggerType: 'MANUAL' } })).body.id
  await page.goto(`${baseUrl}/console/workflows/${workflowId}/edit`)
  await page.getByRole('heading', { level: 1, name: 'Edit Nightly export' }).waitFor()
  const select = page.getByLabel('Error workflow')
  t.equal(await select.inputValue(), '', 'none yet')
  await page.getByText('Example: send me a WhatsApp message').click()
  await page.getByLabel('Your phone number').fill('+15557654321')
  await page.getByRole('button', { name: 'Create and choose it' }).click()
  await page.waitForFunction(() => (document.querySelector('#wf-error-workflow') as HTMLSelectElement | null)?.value !== '')
  t.same(await unlabelledControls(page), [])
  await shot('error-workflow')
  await page.getByRole('button', { name: 'Save changes' }).click()
  await page.getByRole('heading', { level: 1, name: 'Nightly export', exact: true }).waitFor()
  const { errorWorkflowId } = (await call('GET', `/api/automation/workflows/${workflowId}`, { token })).body
  const example = (await call('GET', `/api/automation/workflows/${errorWorkflowId}`, { token })).body
  t.match(example, { triggerType: 'MANUAL', isActive: false, nodes: [{ type: 'send_chat', config: { phone: '+15557654321', text: 'Workflow {{triggerData.run.workflowName}} failed: {{triggerData.run.error}}' } }] })
})

t.test('nothing left the origin, broke the Content-Security-Policy or threw', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
