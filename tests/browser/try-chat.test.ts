/// <reference lib="dom" />
/**
 * The order-status bot played in the builder's "Try it in chat" pane (README, Sandbox numbers and
 * Conversations), in a real browser against real api and worker processes: the user types as a
 * customer of a sandbox number, the bot asks for the order number, asks again when the answer is
 * no number, looks the order up, offers a person and hands over; the run shows on the canvas as it
 * waits and goes on. Nothing reaches the chat platform.
 */
import t from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { fakeChatEnv, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { openConsole, signIn } from './browser.ts'

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const orders = await startDeliverySink(t, {
  answer: (request) => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: request.path.split('/').at(-1), status: 'shipped on Monday' }) })
})
const stack = await startStack(t, { env: { ...fakeChatEnv(platform, { phoneNumberId: '106540352242999', appSecret: 'browser-try-chat-secret' }), HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
const { baseUrl, client, call } = stack
const token = await stack.adminToken()

const sandbox = await call('POST', '/api/chat/accounts', { token, body: { name: 'Sandbox', sandbox: true } })
if (sandbox.status !== 201) throw new Error(`sandbox number not created: ${sandbox.status}`)
const onTriggerNumber = { accountId: '{{triggerData.accountId}}', phone: '{{triggerData.phone}}' }
const workflowId = await client.createWorkflow(token, {
  name: 'order status',
  triggerType: 'KEYWORD',
  triggerConfig: { keywords: ['order'] },
  nodes: [
    { id: 'number', type: 'ask', config: { text: 'What is your order number?', expect: 'pattern', pattern: '[0-9]{4,10}', invalidReply: 'An order number has digits only.' }, next: 'lookup' },
    { id: 'lookup', type: 'http_request', config: { method: 'GET', url: `${orders.url}/orders/{{number.value}}` }, next: 'status' },
    { id: 'status', type: 'send_chat', config: { ...onTriggerNumber, text: 'Order {{number.value}}: {{lookup.body.status}}' }, next: 'person' },
    { id: 'person', type: 'ask', config: { text: 'Anything else?', buttons: [{ id: 'human', title: 'Talk to a person' }, { id: 'done', title: 'No, thanks' }], expect: 'choice' }, next: 'route' },
    { id: 'route', type: 'condition', config: { field: '{{person.value}}', cases: { human: 'handover', done: 'thanks' } } },
    { id: 'handover', type: 'handoff', config: { assignTo: 'least_busy', note: 'Asked about order {{number.value}}' }, next: 'told' },
    { id: 'told', type: 'send_chat', config: { ...onTriggerNumber, text: 'A person will answer you shortly.' } },
    { id: 'thanks', type: 'send_chat', config: { ...onTriggerNumber, text: 'Thank you!' } }
  ]
})

const { page, pageErrors } = await openConsole(t, baseUrl, { screenshots: 'try-chat', timeoutMs: 20_000 })
await signIn(page, baseUrl)

const pane = page.locator('#try-chat')
const thread = pane.getByRole('list', { name: 'Conversation' })
const canvasNode = (id: string) => page.locator(`.react-flow__node[data-id="${id}"]`)
async function customerTypes (text: string): Promise<void> {
  await pane.getByLabel('Message as the customer').fill(text)
  await pane.getByRole('button', { name: 'Send' }).click()
  await thread.getByText(text, { exact: true }).waitFor()
}

t.test('the order bot in the sandbox pane: asked, asked again, answered, handed over; the run on the canvas as it goes', async (t) => {
  await page.goto(`${baseUrl}/console/workflows/${workflowId}/builder`)
  await pane.getByRole('heading', { name: 'Try it in chat' }).waitFor()
  t.equal(await pane.locator('.notice').count(), 0, 'no chat node answers from a real number: no warning')

  await customerTypes('I want to know about my order')
  await thread.getByText('What is your order number?').waitFor()
  await canvasNode('number').locator('.flow-node.state-current').waitFor()
  t.match(page.url(), /\?run=/, 'the run the message started is on the canvas, waiting at the ask')

  await customerTypes('it is abc')
  await thread.getByText('An order number has digits only.').waitFor()
  await customerTypes('48213')
  await thread.getByText('Order 48213: shipped on Monday').waitFor()
  await thread.getByText('Anything else?').waitFor()
  await canvasNode('person').locator('.flow-node.state-current').waitFor()
  await customerTypes('talk to a person')
  await thread.getByText('A person will answer you shortly.').waitFor()
  await canvasNode('told').locator('.flow-node.state-done').waitFor()
  t.pass('the run went on to its end on the canvas')

  const runs = await client.runsOf(token, workflowId)
  t.equal(runs.length, 1, 'the answers started no second run')
  t.match(await client.getRun(token, runs[0]!.id), { status: 'SUCCESS', result: { number: { value: '48213', attempts: 2 }, person: { value: 'human' } } })
  t.same(platform.sends(), [], 'nothing reached the chat platform')
  t.same(pageErrors, [])
})
