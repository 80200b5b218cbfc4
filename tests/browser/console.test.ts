/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * The console in a real browser (Debian's Chromium, driven by playwright-core) against real
 * api and worker processes and the fake chat platform: log in, create a workflow, fire it,
 * follow its run to SUCCESS and open its nodes' outputs, watch the queue counters move,
 * answer a customer, manage users (their roles and passwords) and chat accounts, change one's own
 * password; the empty states of a fresh installation, and an editor that will not send JSON that
 * does not parse; a code node added from the palette, configured in the form its schema makes,
 * fired; an approval listed on the overview and approved on its run page, beside the child runs of
 * a foreach, and the api's answer when someone else decided first; the runs list's kinds and errors,
 * child runs collapsed under their parent. Every page is photographed into
 * tests/browser/screenshots/, with the first load's figures in metrics.json there.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Page } from 'playwright-core'
import t from 'tap'
import { TEST_ADMIN } from '@switchboard/testing/config'
import {
  deliver, FAKE_ACCESS_TOKEN, messagesDelivery, startFakeChatPlatform, statusesDelivery
} from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { unlabelledControls } from './browser.ts'

const CHROMIUM = '/usr/bin/chromium'
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CONSOLE_DIST = join(ROOT, 'apps/console/dist')
const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url))
const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'browser-chat-app-secret'
const CUSTOMER = '15557654321'
const QUIET_CUSTOMER = '15559876543'
const SESSION_KEY = 'switchboard.console.session'

if (!existsSync(CHROMIUM)) {
  // One line, no stack: `pnpm test` run as root installs it first (tests/get-debian-packages.sh).
  process.stderr.write(`${CHROMIUM} is missing: install Debian's chromium (as root: apt-get install -y chromium; pnpm test run as root installs it itself)\n`)
  process.exit(1)
}
// `pnpm build` builds the console; `pnpm test` alone may come first on a fresh clone.
if (!existsSync(join(CONSOLE_DIST, 'index.html'))) {
  execFileSync(process.execPath, [join(ROOT, 'apps/console/node_modules/vite/bin/vite.js'), 'build'], { cwd: join(ROOT, 'apps/console'), stdio: 'ignore' })
}

const fake = await startFakeChatPlatform()
t.teardown(async () => { await fake.close() })
const stack = await startStack(t, {
  env: {
    CHAT_API_URL: fake.url,
    CHAT_ACCESS_TOKEN: FAKE_ACCESS_TOKEN,
    CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    CHAT_BUSINESS_ACCOUNT_ID: '102290129340398',
    CHAT_APP_SECRET: APP_SECRET,
    CHAT_VERIFY_TOKEN: 'browser-verify-token'
  }
})
const { baseUrl } = stack
const token = await stack.adminToken()

// The assistant's browser test (assistant.test.ts) keeps its photographs in screenshots/assistant/.
await mkdir(SCREENSHOTS, { recursive: true })
// Its own photographs only: the folders are the other browser tests', which may be writing them now.
for (const entry of await readdir(SCREENSHOTS, { withFileTypes: true })) if (entry.isFile()) await rm(join(SCREENSHOTS, entry.name), { force: true })
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
page.setDefaultTimeout(15_000)
page.on('dialog', (dialog) => { dialog.accept().catch(() => {}) })

const outside: string[] = []
const cspViolations: string[] = []
const pageErrors: string[] = []
/** Records what a page of the console at `base` fetches from elsewhere, and its CSP violations and script errors. */
const watch = (watched: Page, base: string): void => {
  watched.on('request', (request) => { if (!request.url().startsWith(`${base}/`) && !request.url().startsWith('data:')) outside.push(request.url()) })
  watched.on('console', (message) => { if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text()) })
  watched.on('pageerror', (error) => { pageErrors.push(error.message) })
}
watch(page, baseUrl)

const shot = async (name: string, shown = page): Promise<void> => {
  await shown.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
}

const heading = (page: Page, name: string | RegExp) => page.getByRole('heading', { level: 1, name })

const counter = async (queue: string, name: string): Promise<number> =>
  Number(await page.locator(`tr[data-queue="${queue}"] td[data-counter="${name}"]`).textContent())

let workflowId = ''
/** The rows of the runs page for the runs of the workflow named `workflow`. */
const rowOf = (workflow: string) => page.locator('table.runs tbody tr', { has: page.getByRole('link', { name: workflow, exact: true }) })

t.test('first load: the login page, within the bundle it was built with, with nothing fetched from elsewhere', async (t) => {
  const started = Date.now()
  await page.goto(`${baseUrl}/console/`)
  await heading(page, 'Switchboard console').waitFor()
  const visibleMs = Date.now() - started
  t.match(page.url(), /\/console\/login\?next=%2Fconsole%2F$/, 'signed out, the console asks for a login and remembers where to go')
  const timing = await page.evaluate(() => {
    const [navigation] = performance.getEntriesByType('navigation') as PerformanceNavigationTiming[]
    const resources = performance.getEntriesByType('resource') as PerformanceResourceTiming[]
    return {
      domContentLoadedMs: Math.round(navigation.domContentLoadedEventEnd),
      loadMs: Math.round(navigation.loadEventEnd),
      transferredBytes: navigation.transferSize + resources.reduce((sum, resource) => sum + resource.transferSize, 0)
    }
  })
  const files = (await readdir(join(CONSOLE_DIST, 'assets'))).filter((file) => /\.(js|css)\.gz$/.test(file))
  const sizeOf = async (names: string[]): Promise<number> =>
    (await Promise.all(names.map(async (file) => (await stat(join(CONSOLE_DIST, 'assets', file))).size))).reduce((a, b) => a + b, 0)
  // The builder is a chunk of its own, loaded only when opened (README, The workflow builder).
  const gzipBytes = await sizeOf(files.filter((file) => !file.startsWith('builder-')))
  const builderGzipBytes = await sizeOf(files.filter((file) => file.startsWith('builder-')))
  const metrics = { ...timing, loginVisibleMs: visibleMs, bundleGzipBytes: gzipBytes, builderGzipBytes }
  await writeFile(join(SCREENSHOTS, 'metrics.json'), JSON.stringify(metrics, null, 2))
  t.comment(`first load on localhost: ${JSON.stringify(metrics)}`)
  t.ok(timing.loadMs < 5000, `loaded in ${timing.loadMs} ms`)
  t.ok(gzipBytes < 100_000, `script and styles: ${gzipBytes} bytes gzipped`)
  t.ok(builderGzipBytes > 0 && builderGzipBytes < 150_000, `the builder's chunk: ${builderGzipBytes} bytes gzipped`)
  t.same(await unlabelledControls(page), [])
  await shot('01-login')
})

t.test('log in: a wrong password is said so; the right one opens the overview', async (t) => {
  await page.getByLabel('Email').fill(TEST_ADMIN.email)
  await page.getByLabel('Password').fill('not-the-password')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await t.resolves(page.getByRole('alert').filter({ hasText: 'Invalid email or password' }).waitFor())
  await page.getByLabel('Password').fill(TEST_ADMIN.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await heading(page, 'Overview').waitFor()
  t.match(page.url(), /\/console\/$/)
  // No model provider is configured here: /health/ready says the assistant is off, and so does the overview.
  await page.locator('#assistant-state', { hasText: 'Assistant: off' }).waitFor()
  t.equal(await page.locator('#assistant-state').textContent(), 'Assistant: off: AI_MODEL is not set (an account may set its own model)')
  const session = await page.evaluate((key) => JSON.parse(window.localStorage.getItem(key) ?? 'null'), SESSION_KEY)
  t.ok(session.expiresAt - Date.now() > 23.9 * 3600_000, 'the token is kept for its 24 hours')
})

t.test('create a workflow from the form; its page draws the graph as the engine follows it', async (t) => {
  await page.getByRole('link', { name: 'Workflows', exact: true }).click()
  await heading(page, 'Workflows').waitFor()
  await page.getByRole('heading', { name: 'No workflows yet' }).waitFor()
  t.equal(await page.getByText('No workflow matches').count(), 0, 'with no filter set, the list says there are none yet, not that none matches')
  await page.getByRole('link', { name: 'Create your first workflow' }).click()
  await heading(page, 'New workflow').waitFor()
  await page.getByLabel('Name', { exact: true }).fill('Order triage')
  await page.getByLabel('Tags (comma-separated)').fill('orders, console')
  await page.getByText('No nodes yet: add one from the palette above.').waitFor()

  // JSON that does not parse cannot be sent, and the page says why.
  const create = page.getByRole('button', { name: 'Create workflow' })
  await page.getByRole('button', { name: 'JSON', exact: true }).click()
  await page.getByLabel('Nodes (JSON array)').fill('[{ "id": "receive", "type": "set",')
  await page.locator('#json-problem').waitFor()
  t.ok(await create.isDisabled(), 'Create workflow is disabled')
  t.match(await page.locator('#json-problem').textContent(), /^Nodes are not valid JSON: .+\. Fix it to create the workflow\.$/)
  t.equal(await create.getAttribute('aria-describedby'), 'json-problem', 'the reason is the button\'s description')
  t.ok(await page.getByRole('button', { name: 'Add set', exact: true }).isDisabled(), 'adding a node would overwrite the text: the palette is disabled too')
  await shot('02-workflow-new-invalid')
  await page.getByLabel('Nodes (JSON array)').fill('{ "id": "receive" }')
  t.equal(await page.locator('#json-problem').textContent(), 'Nodes must be a JSON array. Fix it to create the workflow.')
  t.ok(await create.isDisabled())

  await page.getByLabel('Nodes (JSON array)').fill(JSON.stringify([
    { id: 'receive', type: 'set', config: { values: { amount: '{{triggerData.amount}}' } }, next: 'check' },
    { id: 'check', type: 'condition', config: { field: 'triggerData.amount', operator: 'gt', value: 100, then: 'big', else: 'small' } },
    { id: 'big', type: 'set', config: { values: { lane: 'big order' } } },
    { id: 'small', type: 'set', config: { values: { lane: 'small order' } } }
  ], null, 2))
  await page.locator('svg.graph g[data-node="small"]').waitFor()
  t.equal(await page.locator('#json-problem').count(), 0)
  t.ok(await create.isEnabled(), 'valid JSON enables Create workflow again')
  t.same(await unlabelledControls(page), [])
  await shot('02-workflow-new')
  await page.getByRole('button', { name: 'Create workflow' }).click()
  await heading(page, 'Order triage').waitFor()
  workflowId = page.url().split('/').at(-1) ?? ''
  t.match(workflowId, /^[a-z0-9]{20,32}$/)
  t.equal(await page.locator('svg.graph g.node').count(), 4)
  t.same(await page.locator('svg.graph g.link').evaluateAll((links) => links.map((link) => link.getAttribute('data-link'))).then((links) => links.sort()),
    ['check->big', 'check->small', 'receive->check'], 'the next and the two branches')
  t.equal(await page.locator('svg.graph g.node.start').getAttribute('data-node'), 'receive', 'the start node is marked')
  t.equal(await page.locator('#workflow-state').textContent(), 'Active')
})

/** The rows of the run list once it shows only runs of `status`: the rows of the previous filter stay until the new page comes. */
async function runRowsOf (status: string): Promise<number> {
  await page.waitForFunction((badge) => {
    const rows = Array.from(document.querySelectorAll('table.runs tbody tr'))
    return rows.length > 0 && rows.every((row) => row.querySelector(`.badge.${badge}`) !== null)
  }, `status-${status.toLowerCase()}`)
  return await page.locator('table.runs tbody tr').count()
}

t.test('fire with a JSON payload: the run page follows it live to SUCCESS, path highlighted, node outputs open', async (t) => {
  await page.getByLabel(/Trigger data \(JSON\)/).fill('{"amount": 250}')
  await shot('03-workflow')
  await page.getByRole('button', { name: 'Fire' }).click()
  await heading(page, /^Run /).waitFor()
  await page.locator('.run-status .badge.status-success').waitFor()
  // The graph is drawn once the workflow is read too, which a run of pure nodes may outpace.
  await page.locator('svg.graph g.node-done[data-node="big"]').waitFor()
  t.same(await page.locator('svg.graph g.node-done').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-node'))), ['receive', 'check', 'big'])
  t.same((await page.locator('svg.graph g.link.taken').evaluateAll((links) => links.map((link) => link.getAttribute('data-link')))).sort(), ['check->big', 'receive->check'])
  t.equal(await page.locator('svg.graph g[data-node="small"]').getAttribute('class'), 'node', 'the branch not taken stays plain')
  await page.locator('[data-node-section="big"] summary').click()
  const output = page.locator('[data-node-section="big"] pre.json')
  await output.waitFor()
  t.same(JSON.parse(await output.textContent() ?? ''), { lane: 'big order' }, 'the node\'s output')
  t.match(await page.locator('[data-node-section="big"] .logs').textContent(), /Node big completed in \d+ms/)
  t.match(await page.locator('pre.json[aria-label="Trigger data"]').textContent(), /"amount": 250/)
  await shot('04-run')
})

t.test('the overview\'s queue counters change while it is open (polled every 5 s)', async (t) => {
  await page.getByRole('link', { name: 'Overview' }).click()
  await page.locator('tr[data-queue="workflow-runs"]').waitFor()
  t.equal(await page.locator('#queue-counters tbody tr').count(), 7, 'the seven queues the queues endpoint lists')
  const before = await counter('workflow-runs', 'completed')
  await stack.client.fire(token, workflowId, { amount: 5 })
  await waitFor(async () => await counter('workflow-runs', 'completed') > before ? true : undefined, { timeoutMs: 12_000, intervalMs: 250, what: 'the completed counter to move' })
  t.pass(`workflow-runs completed went from ${before} to ${await counter('workflow-runs', 'completed')} without a reload`)

  // A run that fails (http_request to a loopback address is refused) is listed for attention.
  const failing = await stack.client.runWorkflow(token, {
    name: 'Notify partner',
    nodes: [{ id: 'notify', type: 'http_request', config: { method: 'POST', url: 'http://127.0.0.1:9/hook' } }]
  })
  t.equal(failing.status, 'FAILED')
  await page.reload()
  const attention = page.locator('.failed-list li', { hasText: 'Notify partner' })
  await attention.waitFor()
  t.match(await attention.locator('.error-text').textContent(), /Blocked request to private address 127\.0\.0\.1/)
  t.match(await page.locator('.chart svg').getAttribute('aria-label'), /2 SUCCESS, 1 FAILED/, 'the runs of the last hour are charted by status')
  await shot('05-overview')
  await page.goto(`${baseUrl}/console/runs/${failing.id}`)
  t.match(await page.locator('.facts .error-text').textContent(), /^Blocked request to private address 127\.0\.0\.1 \(HTTP_REQUEST_ALLOW_PRIVATE=true on the worker allows private and loopback addresses\)$/,
    'the run page says which setting allows the address')
  await page.goto(`${baseUrl}/console/`)
})

t.test('a waiting run is cancelled from its page and retried with the same trigger data', async (t) => {
  const waiting = await stack.client.createWorkflow(token, { name: 'Follow-up later', nodes: [{ id: 'pause', type: 'wait', config: { minutes: 30 } }] })
  const runId = await stack.client.fire(token, waiting, { customer: 'Lena' })
  await page.goto(`${baseUrl}/console/runs/${runId}`)
  await page.locator('.run-status .badge.status-waiting').waitFor()
  t.equal(await page.locator('svg.graph g.node-current').getAttribute('data-node'), 'pause', 'the node the run waits at')
  await page.getByRole('button', { name: 'Cancel run' }).click()
  await page.locator('.run-status .badge.status-cancelled').waitFor()
  t.equal((await stack.client.getRun(token, runId)).status, 'CANCELLED')
  await page.getByRole('button', { name: 'Retry' }).click()
  await page.waitForURL((url) => url.pathname.startsWith('/console/runs/') && !url.pathname.endsWith(runId))
  const retried = page.url().split('/').at(-1) ?? ''
  await page.locator('.run-status .badge.status-waiting').waitFor()
  t.same((await stack.client.getRun(token, retried)).triggerData, { customer: 'Lena' }, 'fired again with the same trigger data')
  await page.getByRole('button', { name: 'Cancel run' }).click()
  await page.locator('.run-status .badge.status-cancelled').waitFor()
})

t.test('trigger panels: a webhook URL to copy, a cron schedule\'s next run; deactivate and activate', async (t) => {
  const webhook = await stack.client.createWorkflow(token, { name: 'Partner webhook', triggerType: 'WEBHOOK' })
  await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl })
  await page.goto(`${baseUrl}/console/workflows/${webhook}`)
  const url = `${baseUrl}/api/automation/webhook/${webhook}`
  t.equal(await page.getByLabel(/^Webhook URL/).inputValue(), url)
  await page.getByRole('button', { name: 'Copy' }).click()
  await page.getByRole('button', { name: 'Copied' }).waitFor()
  t.equal(await page.evaluate(async () => navigator.clipboard.readText()), url, 'the URL is on the clipboard')
  await page.getByRole('button', { name: 'Deactivate' }).click()
  await page.locator('#workflow-state', { hasText: 'Inactive' }).waitFor()
  t.ok(await page.getByRole('button', { name: 'Fire' }).isDisabled(), 'an inactive workflow cannot be fired')
  await page.getByRole('button', { name: 'Activate' }).click()
  await page.locator('#workflow-state', { hasText: 'Active' }).waitFor()

  const cron = await stack.client.createWorkflow(token, { name: 'Morning report', triggerType: 'CRON', triggerConfig: { cronExpression: '0 9 * * *', timezone: 'Europe/Berlin' } })
  await page.goto(`${baseUrl}/console/workflows/${cron}`)
  await page.locator('#next-run').waitFor()
  t.match(await page.locator('#next-run').textContent(), /^\d{4}-\d{2}-\d{2} \d{2}:00:00 \(in /, 'the next tick, from the schedule')
})

t.test('workflow and run lists with their filters', async (t) => {
  await page.goto(`${baseUrl}/console/workflows?triggerType=MANUAL`)
  await page.getByRole('link', { name: 'Order triage' }).waitFor()
  await page.getByLabel('Trigger').selectOption('EVENT')
  await page.getByText('No workflow matches these filters').waitFor()
  t.equal(await page.getByText('No workflows yet').count(), 0, 'a filter that matches nothing is not an empty installation')
  t.match(page.url(), /triggerType=EVENT/, 'filters live in the address')
  await page.getByLabel('Trigger').selectOption('')
  await page.getByRole('link', { name: 'Order triage' }).waitFor()
  await shot('06-workflows')

  await page.getByRole('link', { name: 'Runs', exact: true }).click()
  await page.getByLabel('Status').selectOption('SUCCESS')
  await page.getByLabel('Created').selectOption('1h')
  t.equal(await runRowsOf('SUCCESS'), 2, 'the two successful runs of the hour')
  await page.getByLabel('Status').selectOption('FAILED')
  t.equal(await runRowsOf('FAILED'), 1, 'the failed one')
  await page.getByLabel('Status').selectOption('RUNNING')
  await page.getByText('No run matches').waitFor()
  t.same(await unlabelledControls(page), [])
  await page.getByLabel('Status').selectOption('SUCCESS')
  await runRowsOf('SUCCESS')
  await shot('07-runs')
})

t.test('a code node from the palette, its config in the form its schema makes: checked as typed, saved, fired, its output on the run page', async (t) => {
  const { body } = await stack.call('GET', '/api/automation/node-types', { token })
  const nodeTypes = body.nodeTypes as Array<{ type: string, description: string }>
  await page.getByRole('link', { name: 'Workflows', exact: true }).click()
  await page.getByRole('link', { name: 'New workflow' }).click()
  await heading(page, 'New workflow').waitFor()
  await page.getByLabel('Name', { exact: true }).fill('Doubler')

  const addCode = page.getByRole('button', { name: 'Add code', exact: true })
  await addCode.waitFor()
  t.equal(await page.locator('.palette-item').count(), nodeTypes.length, 'the palette lists every node type the api describes')
  const about = nodeTypes.find((nodeType) => nodeType.type === 'code')?.description ?? ''
  t.ok(await addCode.getByText(about).isVisible(), 'each with its description')
  t.same(await page.locator('.palette h4').allTextContents(), ['Chat', 'HTTP', 'Logic', 'Flow', 'Data', 'Code', 'AI'], 'in groups')
  await addCode.click()

  // The form: the code field, a tall monospace textarea, empty with the type's example as its placeholder.
  const code = page.getByLabel(/^code/)
  t.equal(await code.inputValue(), '', 'a new node saves nothing of its type\'s example')
  t.match(await code.getAttribute('placeholder'), /^e\.g\. const items = input\.triggerData\.items/, 'which is the placeholder')
  t.equal(await code.evaluate((element) => element.tagName), 'TEXTAREA')
  t.equal(await code.getAttribute('aria-required'), 'true', 'a required field is marked')
  t.match(await page.locator('#cfg-code-help').textContent(), /^The body of an async function of `input`/, 'its description is its help')
  await code.fill('return { doubled: input.triggerData.n * 2 }')

  // A number out of bounds is flagged where it was typed, and holds the save.
  const create = page.getByRole('button', { name: 'Create workflow' })
  const timeoutMs = page.getByLabel(/^timeoutMs/)
  const timeoutError = page.locator('#cfg-timeoutMs-error')
  t.match(await page.locator('#cfg-timeoutMs-help').textContent(), /value or \{\{template\}\}$/, 'a field that may be a template says so')
  await timeoutMs.fill('0')
  t.equal(await timeoutError.textContent(), 'Expected a number from 1 to 300000, or a {{template}}')
  t.equal(await timeoutError.getAttribute('role'), 'alert', 'the error is announced')
  t.equal(await timeoutMs.getAttribute('aria-invalid'), 'true')
  t.match(await timeoutMs.getAttribute('aria-describedby'), /\bcfg-timeoutMs-error\b/, 'and is the field\'s description')
  const formProblem = page.locator('#form-problem')
  await formProblem.waitFor()
  t.ok(await create.isDisabled(), 'Create workflow is disabled')
  t.equal(await create.getAttribute('aria-describedby'), 'form-problem')
  await timeoutMs.fill('{{triggerData.timeoutMs}}')
  await timeoutError.waitFor({ state: 'detached' })
  t.pass('a template is taken')
  await timeoutMs.fill('5000')
  await formProblem.waitFor({ state: 'detached' })
  // JSON that does not parse in an object field.
  const retry = page.getByLabel(/^retry/)
  await retry.fill('{ "attempts": ')
  t.match(await page.locator('#cfg-retry-error').textContent(), /^Not valid JSON: /)
  await formProblem.waitFor()
  t.ok(await create.isDisabled())
  await retry.fill('{ "attempts": 2 }')
  await page.locator('#cfg-retry-error').waitFor({ state: 'detached' })
  await formProblem.waitFor({ state: 'detached' })
  t.ok(await create.isEnabled(), 'valid again')
  t.same(await unlabelledControls(page), [])
  await shot('14-workflow-code-node')

  // The JSON view edits the same nodes: the number is a number, the other fields left out.
  await page.getByRole('button', { name: 'JSON', exact: true }).click()
  t.same(JSON.parse(await page.getByLabel('Nodes (JSON array)').inputValue()), [
    { id: 'n1', type: 'code', config: { code: 'return { doubled: input.triggerData.n * 2 }', timeoutMs: 5000, retry: { attempts: 2 } } }
  ])
  await page.getByRole('button', { name: 'Form', exact: true }).click()
  t.equal(await code.inputValue(), 'return { doubled: input.triggerData.n * 2 }')
  await create.click()
  await heading(page, 'Doubler').waitFor()

  await page.getByLabel(/Trigger data \(JSON\)/).fill('{"n": 21}')
  await page.getByRole('button', { name: 'Fire' }).click()
  await heading(page, /^Run /).waitFor()
  await page.locator('.run-status .badge.status-success').waitFor()
  await page.locator('[data-node-section="n1"] summary').click()
  const output = page.locator('[data-node-section="n1"] pre.json')
  await output.waitFor()
  t.same(JSON.parse(await output.textContent() ?? ''), { doubled: 42 }, 'the code node\'s output')
  await shot('15-run-code-node')
})

t.test('an approval: listed on the overview, approved on its run page, beside its foreach\'s children; the run goes on to SUCCESS', async (t) => {
  const item = await stack.client.createWorkflow(token, { name: 'Refund line' })
  const refund = await stack.client.createWorkflow(token, {
    name: 'Refund approval',
    nodes: [
      { id: 'lines', type: 'foreach', config: { workflowId: item, items: ['a', 'b'] }, next: 'ask' },
      { id: 'ask', type: 'approval', config: { message: 'Refund 40?' }, next: 'pay' },
      { id: 'pay', type: 'set', config: { values: { paid: true } } }
    ]
  })
  const runId = await stack.client.fire(token, refund)
  // The run waits for its children first, then at the approval.
  await waitFor(async () => (await stack.client.getRun(token, runId)).result.ask?.status === 'waiting' ? true : undefined, { what: 'the approval to open' })

  await page.getByRole('link', { name: 'Overview' }).click()
  const listed = page.locator(`.approval-list li[data-approval="${runId}"]`)
  await listed.waitFor()
  t.match(await listed.textContent(), /^Refund 40\?Refund approval · asked just now · open until \d{4}-\d{2}-\d{2} /, 'its message, workflow, age and expiry')
  await shot('16-overview-approval')
  await listed.getByRole('link', { name: 'Refund 40?' }).click()
  await heading(page, /^Run /).waitFor()
  const panel = page.locator('.card.approval')
  t.equal(await panel.locator('.approval-message').textContent(), 'Refund 40?')
  await page.locator('svg.graph g.node-current[data-node="ask"]').waitFor()
  t.same((await page.locator('svg.graph g.link').evaluateAll((links) => links.map((link) => link.getAttribute('data-link')))).sort(), ['ask->pay', 'lines->ask'])
  t.match(await page.locator('[data-node-section="ask"] summary').textContent(), /· waiting$/)
  t.equal(await page.locator('[data-node-section="lines"] .item-progress').textContent(), '2 done / 0 failed / 2 total', 'the foreach\'s items')
  await page.getByRole('heading', { name: 'Child runs (2)' }).waitFor()
  t.equal(await runRowsOf('SUCCESS'), 2, 'its children, each with its status')
  await shot('17-run-approval')

  await panel.getByRole('button', { name: 'Approve' }).click()
  await page.locator('.run-status .badge.status-success').waitFor()
  await panel.waitFor({ state: 'detached' })
  t.pass('decided: the buttons are gone')
  await page.locator('[data-node-section="pay"] summary').click()
  t.same(JSON.parse(await page.locator('[data-node-section="pay"] pre.json').textContent() ?? ''), { paid: true }, 'the run went on past the approval')
  t.match((await stack.client.getRun(token, runId)).result.ask, { status: 'decided', decision: 'approve' })

  await page.locator('table.runs tbody tr a').first().click()
  await page.locator('#parent-run').click()
  await page.waitForURL(new RegExp(`/runs/${runId}$`))
  await page.getByRole('heading', { name: 'Child runs (2)' }).waitFor()
  t.pass('a child run links back to its parent')
})

t.test('the runs list: how each run started, its error, child runs collapsed under their parent', async (t) => {
  await page.getByRole('link', { name: 'Runs', exact: true }).click()
  const parent = rowOf('Refund approval')
  await parent.waitFor()
  await parent.locator('td[data-kind="fire"]', { hasText: 'Manual fire' }).waitFor()
  const toggle = parent.getByRole('button', { name: '2 child runs' })
  t.equal(await toggle.getAttribute('aria-expanded'), 'false')
  t.equal(await rowOf('Refund line').count(), 0, 'the foreach\'s children are collapsed under it')
  await toggle.click()
  t.equal(await toggle.getAttribute('aria-expanded'), 'true')
  t.same(await rowOf('Refund line').evaluateAll((rows) => rows.map((row) => [row.className, row.querySelector('[data-kind]')?.textContent])),
    [['child-run', 'Child run'], ['child-run', 'Child run']], 'expanded: each child, marked as one')

  const failed = rowOf('Notify partner').locator('.run-error .error-text')
  const error = 'Blocked request to private address 127.0.0.1 (HTTP_REQUEST_ALLOW_PRIVATE=true on the worker allows private and loopback addresses)'
  t.equal(await failed.getAttribute('title'), error, 'the whole error on hover')
  t.equal(await failed.textContent(), `${error.slice(0, 79)}…`, 'cut to fit the row')
  await shot('18-runs-kinds-errors')

  // A run searched for by its tag further on, after the next tests: a run is searchable some seconds after it
  // started (README, Finding runs).
  const tagged = await stack.client.createWorkflow(token, { name: 'Tagged orders', triggerType: 'MANUAL', runTags: 'order:{{triggerData.order}}' })
  await stack.call('POST', `/api/automation/workflows/${tagged}/fire`, { token, body: { order: 'A-77' } })
})

t.test('an approval decided elsewhere meanwhile: the run page says what the api answered (409)', async (t) => {
  const runId = await stack.client.fire(token, await stack.client.createWorkflow(token, {
    name: 'Late approval',
    nodes: [{ id: 'ask', type: 'approval', config: { message: 'Ship it?' } }]
  }))
  await stack.client.runReaching(token, runId, ['WAITING'])
  await page.goto(`${baseUrl}/console/runs/${runId}`)
  const reject = page.locator('.card.approval').getByRole('button', { name: 'Reject' })
  // Someone else decides between the page showing the buttons and the click reaching the api.
  await page.route('**/resume', async (route) => {
    t.equal((await stack.call('POST', `/api/automation/runs/${runId}/resume`, { token, body: { nodeId: 'ask', decision: 'approve' } })).status, 202)
    await route.continue()
  })
  t.teardown(async () => { await page.unroute('**/resume') })
  await reject.click()
  await page.getByRole('alert').filter({ hasText: 'Run is not waiting for this node' }).waitFor()
  await page.locator('.run-status .badge.status-success').waitFor()
  t.match((await stack.client.getRun(token, runId)).result.ask, { decision: 'approve' }, 'the first decision holds')
})

t.test('inbox: answer a customer the fake platform brought in; outside the 24-hour window, a template', async (t) => {
  const twoDaysAgo = Math.floor(Date.now() / 1000) - 2 * 86_400
  for (const payload of [
    messagesDelivery(PHONE_NUMBER_ID, [{ from: QUIET_CUSTOMER, name: 'Omar', text: 'Thanks for last time', timestamp: twoDaysAgo }]),
    messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Lena', text: 'Hello, is my order ready?' }])
  ]) {
    const res = await deliver(`${baseUrl}/webhook/chat`, payload, APP_SECRET)
    t.equal(res.status, 200)
  }
  await page.getByRole('link', { name: 'Inbox' }).click()
  const lena = page.locator(`a[data-conversation="${CUSTOMER}"]`)
  await lena.waitFor()
  t.equal(await lena.getByLabel('1 unread').textContent(), '1', 'an unread badge')
  await lena.click()
  await page.getByRole('heading', { name: 'Lena' }).waitFor()
  t.match(await page.locator('.message.inbound .bubble').last().textContent(), 'Hello, is my order ready?')
  await page.locator('#assistant-off').waitFor()
  t.match(await page.locator('#assistant-off').textContent(), /^The assistant is off: no model is configured/, 'no provider here: the inbox says the assistant is off')
  await page.getByLabel(/^Reply/).fill('Yes, it ships today.')
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  await page.locator('.message.outbound', { hasText: 'Yes, it ships today.' }).waitFor()
  const send = fake.sends().find((request) => (request.body as { text?: { body?: string } }).text?.body === 'Yes, it ships today.')
  t.match(send?.body, { to: CUSTOMER, type: 'text' }, 'the platform received the reply')
  t.equal(await lena.locator('.unread').count(), 0, 'reading the conversation cleared its badge')
  t.equal(await page.locator('.message.outbound .ticks').last().getAttribute('title'), 'Sent')

  // The platform reports the reply read: the tick follows on the next poll.
  const { body: messages } = await stack.call('GET', `/api/chat/conversations/${await lena.evaluate((a) => new URL((a as HTMLAnchorElement).href).searchParams.get('c'))}/messages`, { token })
  const wamid = messages.at(-1).wamid
  await deliver(`${baseUrl}/webhook/chat`, statusesDelivery(PHONE_NUMBER_ID, [{ wamid, status: 'read', recipientId: CUSTOMER }]), APP_SECRET)
  await page.locator('.message.outbound .ticks-read').waitFor({ timeout: 15_000 })
  t.same(await unlabelledControls(page), [])
  await shot('08-inbox')

  await page.locator(`a[data-conversation="${QUIET_CUSTOMER}"]`).click()
  await page.getByRole('heading', { name: 'Omar' }).waitFor()
  await page.getByText('only an approved template can be sent').waitFor()
  t.equal(await page.getByLabel(/^Reply/).count(), 0, 'no free text outside the window')
  await page.getByLabel('Template').selectOption('order_update|en_US')
  await page.getByLabel('Value of {{1}}').fill('Omar')
  await page.getByLabel('Value of {{2}}').fill('B-12')
  t.match(await page.locator('.template-preview').textContent(), 'Good news Omar! Order B-12 has shipped.')
  await shot('09-inbox-template')
  await page.getByRole('button', { name: 'Send template' }).click()
  await page.locator('.message.outbound', { hasText: 'Good news Omar! Order B-12 has shipped.' }).waitFor()
  const templateSend = fake.sends().find((request) => (request.body as { to?: string, type?: string }).to === QUIET_CUSTOMER)
  t.match(templateSend?.body, {
    type: 'template',
    template: { name: 'order_update', language: { code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'Omar' }, { type: 'text', text: 'B-12' }] }] }
  })
})

t.test('admin: create and delete a user; link, verify and delete a chat account', async (t) => {
  await page.getByRole('link', { name: 'Admin' }).click()
  await heading(page, 'Admin').waitFor()
  await page.getByLabel('Email', { exact: true }).fill('agent@example.com')
  await page.getByLabel(/^Password/).fill('agent-password')
  await page.getByRole('button', { name: 'Add user' }).click()
  const agent = page.locator('tr[data-user="agent@example.com"]')
  await agent.waitFor()
  t.equal(await agent.getByLabel('Role of agent@example.com').inputValue(), 'member')
  const agentRole = async (): Promise<string> =>
    ((await stack.call('GET', '/api/users', { token })).body as Array<{ email: string, role: string }>).find((user) => user.email === 'agent@example.com')!.role

  await agent.getByLabel('Role of agent@example.com').selectOption('admin')
  await agent.getByText('Now an admin').waitFor()
  t.equal(await agentRole(), 'admin', 'the role is changed')
  await agent.getByLabel('Role of agent@example.com').selectOption('member')
  await agent.getByText('Now a member').waitFor()
  t.equal(await agentRole(), 'member')

  const agentToken = await stack.client.login({ email: 'agent@example.com', password: 'agent-password' })
  await agent.getByRole('button', { name: 'Set a password for agent@example.com' }).click()
  await agent.getByLabel(/^New password for agent@example\.com/).fill('reset-by-the-admin')
  await agent.getByRole('button', { name: 'Save password' }).click()
  await agent.getByText('Password set: their sessions were signed out').waitFor()
  t.equal((await stack.call('GET', '/api/automation/workflows', { token: agentToken })).status, 401, 'the agent\'s earlier token is ended')
  t.equal((await stack.call('POST', '/api/auth/login', { body: { email: 'agent@example.com', password: 'reset-by-the-admin' } })).status, 200, 'the new password signs in')
  t.match(await page.locator(`tr[data-user="${TEST_ADMIN.email}"]`).textContent(), 'Change my password', 'an admin\'s own row links to their account page')

  await page.getByLabel('Name', { exact: true }).fill('Support line')
  await page.getByLabel('Phone number id (digits)').fill('106540352242999')
  await page.getByLabel(/^Access token/).fill(FAKE_ACCESS_TOKEN)
  await page.getByRole('button', { name: 'Link account' }).click()
  const account = page.locator('tr[data-account="106540352242999"]')
  await account.waitFor()
  await account.getByRole('button', { name: 'Verify Support line' }).click()
  await account.getByText('Verified: the platform accepts this number with its token').waitFor()
  t.ok(fake.requests.some((request) => request.method === 'GET' && request.path === '/v21.0/106540352242999'), 'the platform was asked')
  t.same(await unlabelledControls(page), [])
  await shot('10-admin')

  // Two accounts to choose from now: the inbox offers the switcher, and each account has its own conversations.
  await page.getByRole('link', { name: 'Inbox' }).click()
  await page.getByLabel('Chat account').selectOption({ label: 'Support line' })
  await page.getByText('No conversation yet: a customer\'s first message opens one.').waitFor()
  await page.getByLabel('Chat account').selectOption({ label: 'Default account (installation)' })
  await page.locator(`a[data-conversation="${CUSTOMER}"]`).waitFor()
  await page.getByRole('link', { name: 'Admin' }).click()
  await account.getByRole('button', { name: 'Delete Support line' }).click()
  await account.waitFor({ state: 'detached' })
  // A sandbox number (README, Sandbox numbers): badged, nothing to verify on a platform, never the default.
  await page.getByLabel('Sandbox number name').fill('Try line')
  await page.getByRole('button', { name: 'Create sandbox number' }).click()
  const sandbox = page.locator('tr', { hasText: 'Try line' })
  await sandbox.locator('.badge', { hasText: 'sandbox' }).waitFor()
  t.equal(await sandbox.getByRole('button', { name: /^Verify|^Make/ }).count(), 0, 'a sandbox number offers neither Verify nor Make default')
  await sandbox.getByRole('button', { name: 'Delete Try line' }).click()
  await sandbox.waitFor({ state: 'detached' })
  await agent.getByRole('button', { name: 'Delete agent@example.com' }).click()
  await agent.waitFor({ state: 'detached' })
  const { body: users } = await stack.call('GET', '/api/users', { token })
  t.notOk(users.some((user: { email: string }) => user.email === 'agent@example.com'), 'the user is gone')
})

t.test('admin: create an API key, see it once, use it, revoke it', async (t) => {
  await page.getByRole('link', { name: 'Admin' }).click()
  await page.getByLabel('Key name').fill('dashboard poller')
  await page.getByRole('checkbox', { name: /queues:read/ }).check()
  await page.getByRole('button', { name: 'Create key' }).click()
  const shown = page.getByLabel('New API key')
  await shown.waitFor()
  const key = (await shown.textContent()) ?? ''
  t.match(key, /^sbk_/)
  const row = page.locator('tr[data-api-key="dashboard poller"]')
  await row.waitFor()
  t.notOk((await row.textContent())?.includes(key), 'the list shows its hint, not the key')
  await shot('10b-api-key')
  t.equal((await stack.call('GET', '/api/automation/queues', { token: key })).status, 200, 'the key reads the queues')
  t.equal((await stack.call('GET', '/api/automation/workflows', { token: key })).status, 403, 'and nothing else')
  await page.getByRole('button', { name: 'Done' }).click()
  await shown.waitFor({ state: 'detached' })
  await row.getByRole('button', { name: 'Revoke dashboard poller' }).click()
  await row.getByText(/^revoked/).waitFor()
  t.equal((await stack.call('GET', '/api/automation/queues', { token: key })).status, 401, 'revoked: refused')
  t.same(await unlabelledControls(page), [])
})

t.test('tablet width: the navigation wraps, nothing overflows sideways, the keyboard reaches the skip link first', async (t) => {
  await page.setViewportSize({ width: 768, height: 1024 })
  for (const [path, name] of [['/console/', 'overview'], [`/console/workflows/${workflowId}`, 'workflow'], ['/console/inbox', 'inbox']] as const) {
    await page.goto(`${baseUrl}${path}`)
    await page.locator('main h1').waitFor()
    if (name === 'inbox') {
      // The inbox keeps its event stream open, so it is never network-idle: it is ready once live, with its conversations.
      await page.locator('#inbox-live').waitFor()
      await page.locator('a[data-conversation]').first().waitFor()
    } else {
      await page.waitForLoadState('networkidle')
    }
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
    t.ok(overflow <= 0, `${path}: ${overflow} px beyond the width`)
    await shot(`11-tablet-${name}`)
  }
  await page.keyboard.press('Tab')
  t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content')
  await page.setViewportSize({ width: 1366, height: 900 })
})

t.test('the runs page: searched by the words of an error, a tag chip listing the runs carrying it, a run its flow control holds', async (t) => {
  await page.goto(`${baseUrl}/console/runs`)
  // Searched by a word of its error (README, Finding runs), then a run's tag chip lists the runs carrying it.
  await page.getByLabel('Search').fill('private 127.0.0.1')
  await page.getByRole('button', { name: 'Search', exact: true }).click()
  await page.waitForURL(/q=private/)
  await waitFor(async () => await page.locator('table.runs tbody tr[data-run]').count() === 1 ? true : undefined, { what: 'the one run whose error has the words' })
  t.equal(await rowOf('Notify partner').count(), 1, 'the failed run, found by its error')
  // The page opened once the api finds the tagged run, rather than left to its next refresh (every 5 s).
  await waitFor(async () => ((await stack.call('GET', '/api/automation/runs?tag=order%3AA-77', { token })).body as unknown[]).length === 1 ? true : undefined,
    { timeoutMs: 30_000, intervalMs: 200, what: 'the tagged run to be searchable' })
  await page.goto(`${baseUrl}/console/runs`)
  await rowOf('Tagged orders').getByRole('link', { name: 'Runs tagged order:A-77' }).click()
  await page.waitForURL(/tag=order%3AA-77/)
  await waitFor(async () => await page.locator('table.runs tbody tr[data-run]').count() === 1 ? true : undefined, { what: 'the runs tagged order:A-77' })
  t.equal(await rowOf('Tagged orders').count(), 1)
  t.same(await unlabelledControls(page), [])
  await shot('19-runs-search-and-tags')
  await page.getByRole('button', { name: 'Show runs with any tag, not only order:A-77' }).click()
  await page.waitForURL((url) => !url.search.includes('tag='))

  // A run its flow control holds says what it waits for and its key, in the list and on its page (README, Flow control).
  const debounced = await stack.client.createWorkflow(token, { name: 'Debounced orders', triggerType: 'MANUAL', flowControl: { debounce: { key: 'order-{{triggerData.order}}', periodSeconds: 3600 } } })
  const held = await stack.client.fire(token, debounced, { order: 9 })
  await page.goto(`${baseUrl}/console/runs`)
  const waiting = rowOf('Debounced orders').locator('[data-waiting-for="debounce"]')
  t.equal(await waiting.textContent(), 'Waiting for its burst to settle (order-9)')
  await rowOf('Debounced orders').getByRole('link', { name: held }).click()
  t.match(await page.locator('#run-flow-control').textContent(), /^Waiting for its burst to settle \(order-9\) since /)
  await shot('19b-run-waiting-for-its-flow-control')
  await stack.call('POST', `/api/automation/runs/${held}/cancel`, { token })
})

t.test('a run waiting for an event: its page says which, and follows it on when the event comes', async (t) => {
  const waiting = await stack.client.createWorkflow(token, {
    name: 'Wait for the payment',
    nodes: [{ id: 'paid', type: 'wait_for_event', config: { event: 'order.paid', match: { 'order.id': '{{triggerData.orderId}}' }, timeoutMinutes: 30 } }]
  })
  const runId = await stack.client.fire(token, waiting, { orderId: 'B-7' })
  await page.goto(`${baseUrl}/console/runs/${runId}`)
  const panel = page.locator('#event-wait')
  await panel.waitFor()
  t.match(await panel.innerText(), /At node paid: the event order\.paid where order\.id is "B-7", until/)
  t.equal((await stack.call('POST', '/api/automation/events', { token, body: { name: 'order.paid', payload: { order: { id: 'B-7' } } } })).status, 202)
  await page.locator('.run-status .badge.status-success').waitFor()
  t.equal(await panel.count(), 0, 'the panel is gone once the run went on')
})

t.test('a token the api refuses (401) returns to the login page', async (t) => {
  await page.evaluate((key) => {
    const session = JSON.parse(window.localStorage.getItem(key) ?? '{}')
    window.localStorage.setItem(key, JSON.stringify({ ...session, token: 'not.a.token' }))
  }, SESSION_KEY)
  await page.goto(`${baseUrl}/console/runs`)
  await heading(page, 'Switchboard console').waitFor()
  t.match(page.url(), /\/console\/login\?next=%2Fconsole%2Fruns$/)
  t.equal(await page.evaluate((key) => window.localStorage.getItem(key), SESSION_KEY), null, 'the refused token is forgotten')
})

t.test('a fresh installation without a chat account: the inbox says how to set one up; a user changes their own password', async (t) => {
  const bare = await startStack(t, { workers: 0 })
  const other = await browser.newPage()
  t.teardown(async () => { await other.close() })
  watch(other, bare.baseUrl)
  await other.goto(`${bare.baseUrl}/console/login`)
  await other.getByLabel('Email').fill(TEST_ADMIN.email)
  await other.getByLabel('Password').fill(TEST_ADMIN.password)
  await other.getByRole('button', { name: 'Sign in' }).click()
  await heading(other, 'Overview').waitFor()

  await other.getByRole('link', { name: 'Inbox' }).click()
  await other.getByRole('heading', { name: 'No chat account is set up' }).waitFor()
  const advice = await other.locator('#no-chat-account').textContent()
  t.match(advice, 'Admin → Chat accounts', 'says where to link a number')
  t.match(advice, 'CHAT_PHONE_NUMBER_ID', 'and which settings give the installation its default account')
  t.equal(await other.getByRole('alert').count(), 0, 'no error is shown')
  t.equal(await other.getByText('Chat account not found').count(), 0)
  await shot('12-inbox-no-account', other)

  const sessionToken = async (): Promise<string> => other.evaluate((key) => JSON.parse(window.localStorage.getItem(key) ?? '{}').token, SESSION_KEY)
  const before = await sessionToken()
  await other.getByRole('link', { name: 'Account', exact: true }).click()
  await heading(other, 'Account').waitFor()
  t.same(await unlabelledControls(other), [])
  const change = async (current: string, next: string, confirmation = next): Promise<void> => {
    await other.getByLabel('Current password').fill(current)
    await other.getByLabel('New password (at least 8 characters)').fill(next)
    await other.getByLabel('Confirm the new password').fill(confirmation)
    await other.getByRole('button', { name: 'Change password' }).click()
  }
  await change('not-the-password', 'console-new-password')
  await other.getByRole('alert').filter({ hasText: 'Current password is incorrect' }).waitFor()
  t.match(other.url(), /\/console\/account$/, 'a wrong current password does not sign the user out')
  await change(TEST_ADMIN.password, 'console-new-password', 'console-new-passwrod')
  await other.getByRole('alert').filter({ hasText: 'The new password and its confirmation differ' }).waitFor()
  await change(TEST_ADMIN.password, 'console-new-password')
  await other.getByText('Password changed. Every other session was signed out.').waitFor()
  await shot('13-account', other)
  const after = await sessionToken()
  t.not(after, before, 'the session holds the token the change returned')
  t.equal((await bare.call('GET', '/api/automation/workflows', { token: before })).status, 401, 'the token from before the change is ended')

  await other.getByRole('link', { name: 'Workflows', exact: true }).click()
  await other.getByRole('heading', { name: 'No workflows yet' }).waitFor()
  t.pass('this session goes on with the new token')
  await other.getByRole('button', { name: 'Log out' }).click()
  await other.getByLabel('Email').fill(TEST_ADMIN.email)
  await other.getByLabel('Password').fill('console-new-password')
  await other.getByRole('button', { name: 'Sign in' }).click()
  await heading(other, 'Workflows').waitFor()
  t.pass('the new password signs in, back to the page the user left')
})

t.test('no request left localhost, no Content-Security-Policy violation, no script error', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
