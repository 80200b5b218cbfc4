/// <reference lib="dom" />
/**
 * The builder's reference workflow (README, The workflow builder), built in a real browser as a new
 * user builds it: webhook → code computes a total → condition on it → http_request, else
 * send_chat, from an empty builder. The trigger set on the canvas, a real request to the webhook
 * captured as pinned data, fields filled with the data picker, a node renamed, a test run that
 * succeeds. Every click, drag and key press that is not typing into a field counts: at most 15
 * clicks and 2 drags, and nothing done for the user by `page.evaluate`.
 */
import t from 'tap'
import type { Locator } from 'playwright-core'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { openConsole, signIn } from './browser.ts'

const sink = await startDeliverySink(t)
const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
const { baseUrl, call } = stack
const token = await stack.adminToken()
const { page, pageErrors, cspViolations, outside, shot } = await openConsole(t, baseUrl, { screenshots: 'builder-reference', timeoutMs: 20_000 })
await signIn(page, baseUrl)

/** What the user does beyond typing into fields. */
const counted = { clicks: 0, drags: 0 }
const click = async (locator: Locator): Promise<void> => { counted.clicks++; await locator.click() }
const press = async (locator: Locator, key: string): Promise<void> => { counted.clicks++; await locator.press(key) }

/** The whole workflow in view, for a photograph (not counted: it is the photographer's, not the user's). */
const fitView = async (): Promise<void> => { await page.locator('.react-flow__controls-fitview').click() }
const canvasNode = (id: string): Locator => page.locator(`.react-flow__node[data-id="${id}"]`)
/** A field of the selected node's form. */
const field = (name: string): Locator => page.locator('fieldset.config-form').getByLabel(new RegExp(`^${name}`)).first()
const ORDER = { name: 'Ana', phone: '+15550000001', items: [{ sku: 'a', price: 200 }, { sku: 'b', price: 300 }] }

t.test('the reference workflow from an empty builder, by clicks and the data picker, runs', async (t) => {
  await page.getByRole('link', { name: 'Workflows' }).click()
  await page.getByRole('button', { name: 'New in the builder' }).click()
  await page.getByLabel('Workflow name').waitFor()
  const workflowId = /workflows\/([^/]+)\/builder/.exec(page.url())![1]!
  // Counting starts at the empty builder.

  // The trigger, on the canvas: a webhook, and a real request to it captured as the pinned data.
  await click(canvasNode(':trigger'))
  counted.clicks++
  await page.getByLabel('Trigger type').selectOption('WEBHOOK')
  await click(page.getByRole('button', { name: 'Listen for a test request' }))
  await page.getByText(/^Waiting for a request to /).waitFor()
  const partner = await fetch(`${baseUrl}/api/automation/webhook/${workflowId}?source=shop`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer partner-secret', cookie: 'session=partner' },
    body: JSON.stringify(ORDER)
  })
  t.equal(partner.status, 200, 'the partner\'s request is answered')
  await page.getByText(/^Captured the request of /).waitFor()
  const captured = (await call('GET', `/api/automation/workflows/${workflowId}`, { token })).body.pinnedData
  t.match(captured, { body: ORDER, query: { source: 'shop' } }, 'the request is the pinned data, as a real run reads it')
  t.notOk('authorization' in captured.headers || 'cookie' in captured.headers, 'without its authorization and cookie headers')

  // The code node, its output from a run to it: what the nodes after it pick from.
  await click(page.getByRole('button', { name: 'Add code', exact: true }))
  await canvasNode('code').waitFor()
  await field('code').fill('return { total: input.triggerData.body.items.reduce((sum, item) => sum + item.price, 0) }')
  await click(page.getByRole('button', { name: 'Run to here' }))
  await page.getByText(/^Run \S+: SUCCESS \(test\)/).waitFor()

  // The condition follows the selected code node; http_request takes its then, send_chat its else.
  await click(page.getByRole('button', { name: 'Add condition', exact: true }))
  await canvasNode('condition').waitFor()
  await field('field').fill('code.total')
  await field('operator').fill('gt')
  await field('value').fill('400')

  await click(page.getByRole('button', { name: 'Add http_request', exact: true }))
  await canvasNode('http_request').waitFor()
  await field('url').fill(`${sink.url}/orders`)
  await field('method').fill('POST')
  const body = field('body')
  await body.fill('{"total": "')
  await body.press('End')
  await body.pressSequentially('{{')
  const picker = page.getByRole('group', { name: 'Data to insert' })
  await picker.waitFor()
  t.ok(await picker.getByRole('button', { name: /\(triggerData\.body\.name\)/ }).isVisible(), 'the picker offers the captured request')
  await click(picker.getByRole('button', { name: /\(code\.total\)/ }))
  await body.pressSequentially('"}')
  t.equal(await body.inputValue(), '{"total": "{{code.total}}"}', 'the placeholder went where the cursor was')
  t.equal(await page.getByLabel('Preview of body').textContent(), 'Preview: {"total":500}', 'and the preview renders it against the run')

  await click(canvasNode('condition'))
  await click(page.getByRole('button', { name: 'Add send_chat', exact: true }))
  await canvasNode('send_chat').waitFor()
  await field('phone').pressSequentially('{{')
  await click(page.getByRole('group', { name: 'Data to insert' }).getByRole('button', { name: /\(triggerData\.body\.phone\)/ }))
  await field('text').fill('Hi {{triggerData.body.name}}, your total is {{code.total}}')
  t.equal(await page.getByLabel('Preview of text').textContent(), 'Preview: Hi Ana, your total is 500')

  // The rename rewrites what reads the node: the condition's field and both templates.
  await click(canvasNode('code'))
  await page.getByLabel('Id', { exact: true }).fill('compute_total')
  await press(page.getByLabel('Id', { exact: true }), 'Enter')
  await page.getByText('Renamed code to compute_total, and 3 references to it').waitFor()
  await fitView()
  await shot('01-built')

  const toCode = await page.getByText(/^Run \S+: SUCCESS \(test\)/).textContent()
  await click(page.getByRole('button', { name: 'Test run' }))
  await page.getByText('Test run started').waitFor()
  await page.getByText(/^Run \S+: SUCCESS \(test\)/).filter({ hasNotText: toCode!.split(':')[0]! }).waitFor()
  t.same(JSON.parse(sink.deliveries.at(-1)?.body ?? 'null'), { total: 500 }, 'the order of 500 took the then branch with its total')
  t.match(await canvasNode('send_chat').locator('.flow-node').getAttribute('class') ?? '', /^(?!.*state-)/, 'the else branch did not run')
  await fitView()
  await shot('02-run')

  t.ok(counted.clicks <= 15, `${counted.clicks} clicks`)
  t.ok(counted.drags <= 2, `${counted.drags} drags`)
  const stored = (await call('GET', `/api/automation/workflows/${workflowId}`, { token })).body as { nodes: Array<{ id: string, type: string, config: Record<string, unknown>, next?: string }> }
  const byId = new Map(stored.nodes.map((node) => [node.id, node]))
  t.match(byId.get('compute_total'), { next: 'condition' })
  t.match(byId.get('condition')?.config, { field: 'compute_total.total', operator: 'gt', value: 400, then: 'http_request', else: 'send_chat' })
  t.same(byId.get('http_request')?.config.body, { total: '{{compute_total.total}}' })
  t.match(byId.get('send_chat')?.config, { phone: '{{triggerData.body.phone}}', text: 'Hi {{triggerData.body.name}}, your total is {{compute_total.total}}' })
})

t.test('a node side by side: its input and output as tables, a key dragged into a field as its placeholder', async (t) => {
  await canvasNode('http_request').click()
  await page.getByRole('button', { name: 'Input, settings and output side by side' }).click()
  const details = page.getByRole('dialog')
  await details.waitFor()
  t.match(await details.getByLabel('Output of http_request (side by side)', { exact: true }).textContent(), '"ok": true')
  await details.getByRole('group', { name: 'View of Input of http_request (side by side)' }).getByRole('button', { name: 'Table' }).click()
  const input = details.getByRole('table', { name: 'Input of http_request (side by side)' })
  t.same((await input.locator('th[scope=row]').allTextContents()).sort(), ['compute_total', 'condition', 'triggerData'], 'the trigger\'s data and the nodes before it')
  const headers = details.getByLabel(/^headers/)
  await input.getByText('compute_total', { exact: true }).dragTo(headers)
  t.equal(await headers.inputValue(), '{{compute_total}}', 'the dragged key is its placeholder')
  await shot('03-side-by-side')
  await page.keyboard.press('Escape')
  await details.waitFor({ state: 'detached' })
})

t.test('the workflow a run_workflow node calls: picked by name, or made on the spot', async (t) => {
  await canvasNode('send_chat').click()
  await page.getByRole('button', { name: 'Add run_workflow', exact: true }).click()
  await canvasNode('run_workflow').waitFor()
  const picker = field('workflowId')
  t.equal(await picker.inputValue(), '', 'nothing made up is picked')
  await page.getByRole('button', { name: 'Create a sub-workflow' }).click()
  await page.getByRole('link', { name: 'Open the workflow it calls in the builder' }).waitFor()
  const workflows = (await call('GET', '/api/automation/workflows', { token })).body as Array<{ id: string, name: string, triggerType: string }>
  const created = workflows.find((workflow) => workflow.name === 'run_workflow (sub-workflow)')
  t.match(created, { triggerType: 'MANUAL' })
  t.equal(await picker.inputValue(), created?.id, 'the new workflow is picked')
  t.equal(await picker.locator('option:checked').textContent(), 'run_workflow (sub-workflow)', 'by its name')
})

t.test('the tablet builder', async () => {
  await page.setViewportSize({ width: 820, height: 1180 })
  await fitView()
  await shot('04-tablet')
  await page.setViewportSize({ width: 1366, height: 900 })
})

t.test('no page error, no CSP violation, nothing requested off localhost', async (t) => {
  t.same(pageErrors, [])
  t.same(cspViolations, [])
  t.same(outside, [])
})
