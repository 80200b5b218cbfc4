/**
 * An `ai_agent` node's steps on the run page, in a real browser (Debian's Chromium, driven by
 * playwright-core) against real api and worker processes and the fake model provider: while the
 * agent waits for its tool's run, the node says what it waits for and links that run; once it
 * answered, each step in order (the model's call with its arguments and tokens, the tool's result
 * with its status and run, the answer), and the tool's run links back to the agent's. Its pages
 * are photographed into tests/browser/screenshots/agent-steps/.
 */
import t from 'tap'
import { fakeModelEnv, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { openConsole, signIn } from './browser.ts'
import { orderStatusTool } from '@switchboard/testing/agent-tools'

const ANSWER = 'Order A-1234 has shipped.'
/** The event the tool's run waits for: the run page is read while the agent waits for that run, then the test sends it. */
const RELEASE = 'order.lookup.released'

const provider = await startFakeModelProvider()
t.teardown(async () => { await provider.close() })
const stack = await startStack(t, { env: fakeModelEnv(provider) })
const { baseUrl } = stack
const token = await stack.adminToken()

const { page, outside, cspViolations, pageErrors, shot } = await openConsole(t, baseUrl, { screenshots: 'agent-steps' })

interface ChildRun { id: string }

t.test('an agent waiting for its tool\'s run, then its steps and its answer', async (t) => {
  const toolId = await stack.client.createWorkflow(token, orderStatusTool([
    { id: 'released', type: 'wait_for_event', config: { event: RELEASE, match: {}, timeoutMinutes: 5 }, next: 'lookup' }
  ]))
  const agentId = await stack.client.createWorkflow(token, {
    name: 'Order questions',
    nodes: [{ id: 'agent', type: 'ai_agent', config: { instructions: 'You answer questions about orders.', input: 'Where is order {{triggerData.orderId}}?', tools: [toolId] } }]
  })
  provider.script(
    { toolCalls: [{ name: 'order_status', arguments: { orderId: 'A-1234' } }] },
    // The tool's result is the last message: its run's node outputs as JSON.
    { handler: ({ body }) => ({ reply: JSON.parse(String(body.messages.at(-1)!.content)).lookup.status === 'shipped' ? ANSWER : 'The tool did not say.' }) }
  )
  await signIn(page, baseUrl)
  const runId = await stack.client.fire(token, agentId, { orderId: 'A-1234' })
  const toolRun = await waitFor(async () => {
    const { body } = await stack.call('GET', `/api/automation/runs?parentRunId=${runId}`, { token })
    return (body as ChildRun[])[0]
  }, { what: 'the tool\'s run' })

  await page.goto(`${baseUrl}/console/runs/${runId}`)
  const section = page.locator('[data-node-section="agent"]')
  const progress = section.locator('.agent-progress')
  await progress.filter({ hasText: 'waiting for' }).waitFor()
  t.equal(await progress.textContent(), '1 model call, 1 tool call; waiting for order_status', 'the summary says what the agent waits for')
  await section.locator('summary').click()
  const waiting = section.locator('.agent-waiting')
  t.equal(await waiting.textContent(), 'Waiting for order_status (its run)')
  t.equal(await waiting.getByRole('link', { name: 'its run' }).getAttribute('href'), `/console/runs/${toolRun.id}`, 'the tool\'s run, linked')
  const call = section.locator('[data-agent-step="model"] [data-tool-call="order_status"]')
  t.equal(await call.textContent(), 'calls order_status with {"orderId":"A-1234"}', 'the tool call with its arguments as the model wrote them')
  t.equal(await section.locator('[data-agent-step="tool"]').count(), 0, 'no tool result before its run ended')
  await shot('01-agent-waiting')

  t.equal((await stack.call('POST', '/api/automation/events', { token, body: { name: RELEASE, payload: {} } })).status, 202)
  await page.locator('.run-status .badge.status-success').waitFor()
  await waiting.waitFor({ state: 'detached' })
  t.equal(await progress.textContent(), '2 model calls, 1 tool call')
  const steps = section.locator('.agent-steps > li')
  t.same(await steps.evaluateAll((items) => items.map((item) => item.getAttribute('data-agent-step'))), ['model', 'tool', 'model'], 'the steps in order')
  const [first, tool, answer] = [steps.nth(0), steps.nth(1), steps.nth(2)]
  t.match(await first.textContent(), /^Model · fake-model · [1-9]\d* tokens in, [1-9]\d* out/, 'the model and its tokens')
  t.match(await tool.textContent(), /^Tool order_status succeeded · its run\{.*"lookup":\{"order":"A-1234","status":"shipped"\}/, 'the tool\'s status and result')
  t.equal(await tool.getByRole('link', { name: 'its run' }).getAttribute('href'), `/console/runs/${toolRun.id}`)
  t.match(await answer.locator('div').first().textContent(), /^Answer · fake-model · /)
  t.equal(await answer.locator('.agent-text').textContent(), ANSWER, 'the final answer')
  await shot('02-agent-answered')

  await tool.getByRole('link', { name: 'its run' }).click()
  await page.getByRole('heading', { level: 1, name: `Run ${toolRun.id}` }).waitFor()
  t.equal(await page.locator('#parent-run').getAttribute('href'), `/console/runs/${runId}`, 'the tool\'s run links back to the agent\'s')
})

t.test('no request left localhost, no Content-Security-Policy violation, no script error', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
