/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: DOM types for them.
/**
 * The assistant in the console, in a real browser (Debian's Chromium, driven by playwright-core)
 * against real api and worker processes, the fake chat platform and the fake model provider: the
 * overview says the assistant is on and counts the drafts waiting; the inbox badges the
 * conversation, shows the draft in the thread, lists the turn with the AGENT workflow it ran as a
 * tool and a link to its run; the draft is edited and sent once, exactly as edited; a draft decided
 * elsewhere meanwhile shows the api's 409; the conversation's aiMode is switched, paused by a
 * staff reply and resumed. Its pages are photographed into tests/browser/screenshots/assistant/.
 */
import { type Page } from 'playwright-core'
import t from 'tap'
import { deliver, fakeChatEnv, messagesDelivery, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { fakeModelEnv, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { openConsole, signIn, unlabelledControls } from './browser.ts'
import { orderStatusTool } from '@switchboard/testing/agent-tools'

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'browser-assistant-app-secret'
const CUSTOMER = '15557650001'
const DRAFTED = 'Your order A-1234 has shipped.'
const EDITED = 'Your order A-1234 shipped this morning: it arrives on Friday.'

const platform = await startFakeChatPlatform()
const provider = await startFakeModelProvider()
t.teardown(async () => { await Promise.all([platform.close(), provider.close()]) })
const stack = await startStack(t, {
  env: {
    ...fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET, verifyToken: 'browser-verify-token' }),
    ...fakeModelEnv(provider)
  }
})
const { baseUrl } = stack
const token = await stack.adminToken()

const { page, outside, cspViolations, pageErrors, shot } = await openConsole(t, baseUrl, { screenshots: 'assistant' })

interface Conversation { id: string, phone: string, aiMode: string, pendingApprovalCount: number, assistantPaused: boolean }
interface Message { id: string, status: string | null, content: string }
interface Turn { status: string, outcome: string | null, error: string | null, toolCalls: Array<{ name: string, workflowId: string | null, runId: string | null, status: string }> }

const conversation = async (): Promise<Conversation> => waitFor(async () =>
  ((await stack.call('GET', '/api/chat/conversations?limit=500', { token })).body as Conversation[]).find((c) => c.phone === CUSTOMER), { what: 'the customer\'s conversation' })
const draftsOf = async (conversationId: string): Promise<Message[]> => (await stack.call('GET', `/api/chat/conversations/${conversationId}/drafts`, { token })).body
const turnsOf = async (conversationId: string): Promise<Turn[]> => (await stack.call('GET', `/api/chat/conversations/${conversationId}/turns`, { token })).body
const sendsTo = (phone: string): string[] => platform.sends()
  .filter((send) => (send.body as { to?: string }).to === phone)
  .map((send) => (send.body as { text?: { body?: string } }).text?.body ?? '')

async function say (text: string): Promise<void> {
  const res = await deliver(`${baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Mia', text }]), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
}

/** The conversation's turns once `count` of them have ended. */
const endedTurns = async (conversationId: string, count: number): Promise<Turn[]> => waitFor(async () => {
  const turns = await turnsOf(conversationId)
  return turns.length >= count && turns.every((turn) => turn.status === 'done' || turn.status === 'failed') ? turns : undefined
}, { what: `${count} ended turns` })

const heading = (shown: Page, name: string | RegExp) => shown.getByRole('heading', { level: 1, name })

let conversationId = ''
let toolRunId = ''

t.test('a customer asks; the assistant runs an AGENT workflow as a tool and drafts a reply (HYBRID, the default)', async (t) => {
  const toolId = await stack.client.createWorkflow(token, orderStatusTool())
  provider.script({ toolCalls: [{ name: 'order_status', arguments: { orderId: 'A-1234' } }] }, { reply: DRAFTED })
  await say('Where is my order A-1234?')
  conversationId = (await conversation()).id
  const [turn] = await endedTurns(conversationId, 1)
  t.equal(turn!.outcome, 'drafted', turn!.error ?? '')
  t.match(turn!.toolCalls, [{ name: 'order_status', workflowId: toolId, status: 'succeeded', runId: /./ }])
  toolRunId = turn!.toolCalls[0]!.runId!
  t.same((await draftsOf(conversationId)).map((draft) => draft.content), [DRAFTED])
})

t.test('the overview: the assistant is on, one draft waits', async (t) => {
  await signIn(page, baseUrl)
  await page.locator('#assistant-state', { hasText: 'Assistant: on' }).waitFor()
  t.equal(await page.locator('#assistant-state').textContent(), 'Assistant: on (model fake-model)', 'from /health/ready details')
  await page.locator('#drafts-waiting').waitFor()
  t.match(await page.locator('#drafts-waiting').textContent(), /^1 draft waiting for approval in 1 conversation: open the inbox/)
  await shot('01-overview')
})

t.test('the inbox: the badge, the draft in the thread, the turn with its tool call and the run it started', async (t) => {
  await page.locator('#drafts-waiting').getByRole('link', { name: 'open the inbox' }).click()
  const mia = page.locator(`a[data-conversation="${CUSTOMER}"]`)
  await mia.waitFor()
  t.equal(await mia.locator('.drafts-badge').textContent(), '1 draft', 'the conversation\'s pendingApprovalCount')
  await mia.click()
  await page.getByRole('heading', { name: 'Mia' }).waitFor()
  const draft = page.locator('.message.draft[data-draft="pending_approval"]')
  await draft.waitFor()
  t.equal(await draft.locator('.bubble').textContent(), DRAFTED)
  t.match(await draft.textContent(), 'waiting for approval')
  for (const name of ['Approve', 'Edit', 'Reject']) t.ok(await draft.getByRole('button', { name }).isEnabled(), name)
  t.equal(await page.getByRole('group', { name: 'Assistant' }).getByRole('button', { name: 'HYBRID' }).getAttribute('aria-pressed'), 'true', 'the conversation\'s aiMode')
  t.equal(await page.locator('#assistant-off').count(), 0, 'a model is configured: the assistant is not said to be off')

  await page.locator('.assistant-activity summary').click()
  const turn = page.locator('.turn').first()
  await turn.waitFor()
  t.equal(await turn.locator('.turn-outcome').textContent(), 'drafted')
  t.match(await turn.textContent(), /fake-model · [1-9]\d* tokens in, [1-9]\d* out/, 'the model and its tokens')
  const call = turn.locator('[data-tool-call="order_status"]')
  await call.getByRole('link', { name: 'Order status' }).waitFor()
  t.match(await call.textContent(), /^order_status succeeded · workflow Order status · its run$/, 'which workflow ran')
  t.equal(await call.getByRole('link', { name: 'its run' }).getAttribute('href'), `/console/runs/${toolRunId}`)
  t.same(await unlabelledControls(page), [])
  await shot('02-inbox-draft')

  await call.getByRole('link', { name: 'its run' }).click()
  await heading(page, `Run ${toolRunId}`).waitFor()
  await page.locator('.run-status .badge.status-success').waitFor()
  t.match(await page.locator('pre.json[aria-label="Trigger data"]').textContent(), /"orderId": "A-1234"/, 'the run the tool call started')
  await page.goBack()
  await page.getByRole('heading', { name: 'Mia' }).waitFor()
})

t.test('Edit, change the text, Send edited: the platform receives exactly the edited text, once; no draft waits', async (t) => {
  const draft = page.locator('.message.draft[data-draft="pending_approval"]')
  await draft.getByRole('button', { name: 'Edit' }).click()
  const text = page.getByLabel('Edit the draft')
  t.equal(await text.inputValue(), DRAFTED, 'the draft as the assistant wrote it')
  await text.fill(EDITED)
  t.same(await unlabelledControls(page), [])
  await shot('03-inbox-draft-edit')
  await page.getByRole('button', { name: 'Send edited' }).click()
  await page.locator('.message.outbound:not(.draft)', { hasText: EDITED }).waitFor()
  await draft.waitFor({ state: 'detached' })
  t.same(sendsTo(CUSTOMER), [EDITED], 'sent once, as edited')
  t.equal((await conversation()).pendingApprovalCount, 0)
  t.same(await draftsOf(conversationId), [], 'no draft waits')
  await page.locator(`a[data-conversation="${CUSTOMER}"] .drafts-badge`).waitFor({ state: 'detached' })
  t.pass('the badge is gone')
})

t.test('a draft decided elsewhere meanwhile: the api\'s 409 in the thread, the draft muted with its status, nothing sent', async (t) => {
  await say('And my other order?')
  await endedTurns(conversationId, 2)
  const [second] = await draftsOf(conversationId)
  t.equal(second!.content, 'Echo: And my other order?', 'the fake provider\'s default answer')
  const draft = page.locator('.message.draft[data-draft="pending_approval"]')
  await draft.waitFor()
  // Someone else rejects between the page showing the buttons and the click reaching the api.
  await page.route('**/approve', async (route) => {
    t.equal((await stack.call('POST', `/api/chat/conversations/${conversationId}/drafts/${second!.id}/reject`, { token })).status, 200)
    await route.continue()
  })
  t.teardown(async () => { await page.unroute('**/approve') })
  await draft.getByRole('button', { name: 'Approve' }).click()
  const rejected = page.locator('.message.draft[data-draft="rejected"]')
  await rejected.getByRole('alert').filter({ hasText: 'Draft is no longer pending approval (it is rejected)' }).waitFor()
  t.match(await rejected.textContent(), 'Rejected draft: never sent')
  t.equal(await rejected.getByRole('button').count(), 0, 'no decision is offered any more')
  t.same(sendsTo(CUSTOMER), [EDITED], 'nothing more was sent')
  await shot('04-inbox-draft-409')
})

t.test('the aiMode switch: AUTO, paused by a staff reply, resumed by choosing a mode', async (t) => {
  const modes = page.getByRole('group', { name: 'Assistant' })
  await modes.getByRole('button', { name: 'AUTO' }).click()
  await modes.getByRole('button', { name: 'AUTO', pressed: true }).waitFor()
  t.equal((await conversation()).aiMode, 'AUTO', 'the api has it')

  await page.getByLabel(/^Reply/).fill('Hi Mia, this is Sam from the shop.')
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  const paused = page.locator('#assistant-paused')
  await paused.waitFor()
  t.equal(await paused.textContent(), 'Paused after a staff reply or an assignment — choose a mode to resume')
  t.equal((await conversation()).assistantPaused, true)
  t.equal(await modes.getByRole('button', { pressed: true }).count(), 0, 'no mode shows as on while paused')
  t.match(await page.locator('#assistant-paused-badge').textContent(), /^Paused \(AUTO when resumed\)$/)
  await shot('05-inbox-paused')

  await modes.getByRole('button', { name: 'HYBRID' }).click()
  await paused.waitFor({ state: 'detached' })
  await modes.getByRole('button', { name: 'HYBRID', pressed: true }).waitFor()
  t.match(await conversation(), { aiMode: 'HYBRID', assistantPaused: false }, 'resumed, in the mode chosen')
})

t.test('no request left localhost, no Content-Security-Policy violation, no script error', async (t) => {
  t.same(outside, [])
  t.same(cspViolations, [])
  t.same(pageErrors, [])
})
