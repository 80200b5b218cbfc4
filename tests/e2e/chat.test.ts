import t from 'tap'
import {
  deliver, FAKE_ACCESS_TOKEN, messagesDelivery, newWamid, startFakeChatPlatform
} from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { RunBody } from '@switchboard/testing/client'

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'e2e-chat-app-secret'
const CUSTOMER = '15557654321'

const fake = await startFakeChatPlatform()
t.teardown(async () => { await fake.close() })
const stack = await startStack(t, {
  env: {
    CHAT_API_URL: fake.url,
    CHAT_ACCESS_TOKEN: FAKE_ACCESS_TOKEN,
    CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    CHAT_BUSINESS_ACCOUNT_ID: '102290129340398',
    CHAT_APP_SECRET: APP_SECRET,
    CHAT_VERIFY_TOKEN: 'e2e-verify-token'
  }
})
const token = await stack.adminToken()

const { client } = stack
const finishedRunOf = async (workflowId: string): Promise<RunBody> => client.latestRunReaching(token, workflowId, ['SUCCESS', 'FAILED'])

/** assistant-main jobs completed so far: each processed delivery adds one. */
const processedDeliveries = async (): Promise<number> => {
  const { body } = await stack.call('GET', '/api/automation/queues', { token })
  return body.queues.find((queue: { name: string }) => queue.name === 'assistant-main').completed
}

async function deliverAndWait (payload: unknown): Promise<void> {
  const before = await processedDeliveries()
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, payload, APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status} ${await res.text()}`)
  await waitFor(async () => await processedDeliveries() > before ? true : undefined, { what: 'the delivery to be processed' })
}

const replyId = await client.createWorkflow(token, {
  name: 'price reply',
  triggerType: 'KEYWORD',
  triggerConfig: { keywords: ['price'] },
  nodes: [
    { id: 'reply', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Hi {{triggerData.name}}, the price is 10 EUR.' }, next: 'follow' },
    {
      id: 'follow',
      type: 'send_chat_template',
      config: {
        phone: '{{triggerData.phone}}',
        templateName: 'order_update',
        components: [{ type: 'body', parameters: [{ type: 'text', text: '{{triggerData.name}}' }, { type: 'text', text: 'A-7' }] }]
      }
    }
  ]
})
const listenerId = await client.createWorkflow(token, {
  name: 'inbox log',
  triggerType: 'EVENT',
  triggerConfig: { eventName: 'chat.message.received' },
  nodes: [{ id: 'note', type: 'set', config: { values: { from: '{{triggerData.phone}}', said: '{{triggerData.text}}' } } }]
})

const wamid = newWamid()
const inbound = messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Lena', text: 'What is the price?', wamid }])
await deliverAndWait(inbound)

t.test('an inbound message starts the KEYWORD workflow, whose send_chat node replies through the platform', async (t) => {
  const run = await finishedRunOf(replyId)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.triggerData, { phone: CUSTOMER, name: 'Lena', text: 'What is the price?', wamid, keyword: 'price', accountId: 'default' })

  const [textSend, templateSend] = fake.sends()
  t.same(textSend.body, {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: CUSTOMER,
    type: 'text',
    text: { preview_url: false, body: 'Hi Lena, the price is 10 EUR.' }
  }, 'the platform received the exact text send')
  t.equal(textSend.path, `/v21.0/${PHONE_NUMBER_ID}/messages`)
  t.equal(textSend.headers.authorization, `Bearer ${FAKE_ACCESS_TOKEN}`)
  t.match(run.result.reply, { kind: 'text', to: CUSTOMER, wamid: /^wamid\./ })

  t.test('its send_chat_template node sends the template with the templated parameters', async (t) => {
    t.same(templateSend.body, {
      messaging_product: 'whatsapp',
      to: CUSTOMER,
      type: 'template',
      template: {
        name: 'order_update',
        language: { code: 'en_US' },
        components: [{ type: 'body', parameters: [{ type: 'text', text: 'Lena' }, { type: 'text', text: 'A-7' }] }]
      }
    })
    t.match(run.result.follow, { kind: 'template', to: CUSTOMER, templateName: 'order_update', wamid: /^wamid\./ })
    t.not(run.result.follow.wamid, run.result.reply.wamid)
  })

  t.test('the conversation holds the inbound message and both replies, with the platform ids', async (t) => {
    const { body } = await stack.call('GET', '/api/chat/conversations', { token })
    const conversation = body.find((c: { phone: string }) => c.phone === CUSTOMER)
    t.match(conversation, { name: 'Lena', unreadCount: 1 })
    t.match(conversation.messages, [
      { direction: 'inbound', wamid, content: 'What is the price?' },
      { direction: 'outbound', wamid: run.result.reply.wamid, type: 'text', content: 'Hi Lena, the price is 10 EUR.', status: 'sent' },
      { direction: 'outbound', wamid: run.result.follow.wamid, type: 'template' }
    ])
    t.equal(conversation.messages.length, 3)
    t.equal(run.triggerData.conversationId, conversation.id)
    t.equal(run.triggerData.messageId, conversation.messages[0].id)
  })
})

t.test('the same delivery starts the chat.message.received EVENT workflow', async (t) => {
  const run = await finishedRunOf(listenerId)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.triggerData, { phone: CUSTOMER, name: 'Lena', text: 'What is the price?', wamid, phoneNumberId: PHONE_NUMBER_ID })
  t.same(run.result.note, { from: CUSTOMER, said: 'What is the price?' })
})

t.test('a duplicate delivery of the same message starts nothing more and stores nothing more', async (t) => {
  await finishedRunOf(replyId)
  const sendsBefore = fake.sends().length
  await deliverAndWait(inbound)
  t.equal((await client.runsOf(token, replyId)).length, 1, 'one KEYWORD run')
  t.equal((await client.runsOf(token, listenerId)).length, 1, 'one EVENT run')
  t.equal(fake.sends().length, sendsBefore, 'no second reply')
  const { body } = await stack.call('GET', '/api/chat/conversations', { token })
  const conversation = body.find((c: { phone: string }) => c.phone === CUSTOMER)
  t.equal(conversation.unreadCount, 1)
  t.equal(conversation.messages.filter((m: { direction: string }) => m.direction === 'inbound').length, 1)
})

t.test('demo mode: the fake posts the customer message it is given to the webhook as a signed delivery', async (t) => {
  fake.options.webhook = { url: `${stack.baseUrl}/webhook/chat`, appSecret: APP_SECRET, phoneNumberId: PHONE_NUMBER_ID }
  const res = await fetch(new URL('/_fake/inbound', fake.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ from: '15550001111', name: 'Demo', text: 'price please' })
  })
  const sent = await res.json() as { wamid: string, webhookStatus: number }
  t.equal(sent.webhookStatus, 200, 'the webhook accepted the signature')
  const conversation = await waitFor(async () => {
    const { body } = await stack.call('GET', '/api/chat/conversations', { token })
    return body.find((c: { phone: string }) => c.phone === '15550001111')
  }, { what: 'the demo conversation' })
  t.match(conversation, { name: 'Demo', messages: [{ wamid: sent.wamid, content: 'price please' }] })
  await waitFor(async () => (await client.runsOf(token, replyId)).length === 2 ? true : undefined, { what: 'the demo message to start the KEYWORD workflow' })
  t.notOk(fake.requests.some((request) => request.path.startsWith('/_fake/')), 'control requests are not platform requests')
})
