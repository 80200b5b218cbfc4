import t from 'tap'
import {
  deliver, FAKE_ACCESS_TOKEN, fakeChatEnv, inboundInteractiveReply, inboundLocation, inboundQuickReply, inboundReaction, messagesDelivery, startFakeChatPlatform
} from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { RunBody } from '@switchboard/testing/client'

/**
 * Interactive messages through the real api and worker: a workflow offers a menu of reply
 * buttons, the customer's tap comes back as `triggerData.interactive`, and a KEYWORD workflow
 * matching the tap's id answers each choice differently; the platform's limits are 400s.
 */
const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'e2e-chat-interactive-app-secret'
const CUSTOMER = '15557654321'

const fake = await startFakeChatPlatform()
t.teardown(async () => { await fake.close() })
const stack = await startStack(t, {
  env: {
    ...fakeChatEnv(fake, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET })
  }
})
const token = await stack.adminToken()
const { client } = stack

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

/** The `n`th run of a workflow (1 is its first; the list is newest first), once it has finished. */
const nthRun = async (workflowId: string, n: number): Promise<RunBody> => {
  const run = await waitFor(async () => {
    const nth = (await client.runsOf(token, workflowId)).at(-n)
    return nth !== undefined && ['SUCCESS', 'FAILED'].includes(nth.status) ? nth : undefined
  }, { what: `run ${n} of ${workflowId} to finish` })
  return client.getRun(token, run.id)
}

const textsSent = (): string[] => fake.sends().flatMap((send) => {
  const body = send.body as { type?: string, text?: { body?: string } }
  return body.type === 'text' && body.text?.body !== undefined ? [body.text.body] : []
})

// The menu: a customer who writes "menu" is offered two buttons; ids that are not in the titles,
// so that only the tap's id can start the workflow below.
const menuId = await client.createWorkflow(token, {
  name: 'menu',
  triggerType: 'KEYWORD',
  triggerConfig: { keywords: ['menu'] },
  nodes: [{
    id: 'offer',
    type: 'send_chat_interactive',
    config: {
      phone: '{{triggerData.phone}}',
      type: 'button',
      header: 'Hello {{triggerData.name}}',
      body: 'How can we help?',
      footer: 'Tap a button',
      buttons: [{ id: 'menu.orders', title: 'My orders' }, { id: 'menu.human', title: 'A person' }]
    }
  }]
})
// The choice: a KEYWORD equal to a tap's id matches it; the tap's id picks the reply.
const choiceId = await client.createWorkflow(token, {
  name: 'menu choice',
  triggerType: 'KEYWORD',
  triggerConfig: { keywords: ['MENU.ORDERS', 'menu.human'], match: 'exact' },
  nodes: [
    { id: 'route', type: 'condition', config: { field: '{{triggerData.interactive.id}}', cases: { 'menu.orders': 'orders', 'menu.human': 'human' } } },
    { id: 'orders', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Your last order shipped on Monday.' } },
    { id: 'human', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'A person will answer you shortly.' } }
  ]
})

await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Lena', text: 'menu please' }]))

t.test('the menu workflow sends reply buttons in the platform\'s wire format', async (t) => {
  const run = await nthRun(menuId, 1)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.result.offer, { kind: 'interactive', to: CUSTOMER, wamid: /^wamid\./ })
  t.same(fake.sends().at(-1)?.body, {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: CUSTOMER,
    type: 'interactive',
    interactive: {
      type: 'button',
      header: { type: 'text', text: 'Hello Lena' },
      body: { text: 'How can we help?' },
      footer: { text: 'Tap a button' },
      action: { buttons: [{ type: 'reply', reply: { id: 'menu.orders', title: 'My orders' } }, { type: 'reply', reply: { id: 'menu.human', title: 'A person' } }] }
    }
  })
  const { body } = await stack.call('GET', '/api/chat/conversations', { token })
  t.match(body[0].messages.at(-1), { direction: 'outbound', type: 'interactive', content: 'How can we help?', wamid: run.result.offer.wamid })
})

t.test('a tap on each button reaches the KEYWORD workflow by its id, and each gets its own reply', async (t) => {
  await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Lena', message: inboundInteractiveReply('button_reply', { id: 'menu.orders', title: 'My orders' }) }]))
  const orders = await nthRun(choiceId, 1)
  t.equal(orders.status, 'SUCCESS', orders.error ?? '')
  t.match(orders.triggerData, { type: 'interactive', text: 'My orders', keyword: 'MENU.ORDERS', interactive: { type: 'button_reply', id: 'menu.orders', title: 'My orders' } })
  t.equal(textsSent().at(-1), 'Your last order shipped on Monday.')

  await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Lena', message: inboundInteractiveReply('button_reply', { id: 'menu.human', title: 'A person' }) }]))
  const human = await nthRun(choiceId, 2)
  t.equal(human.status, 'SUCCESS', human.error ?? '')
  t.match(human.triggerData.interactive, { type: 'button_reply', id: 'menu.human', title: 'A person' })
  t.equal(textsSent().at(-1), 'A person will answer you shortly.')
  t.equal((await client.runsOf(token, menuId)).length, 1, 'a tap is no new "menu" message')
})

t.test('a list row and a template\'s quick reply are taps too', async (t) => {
  await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, message: inboundInteractiveReply('list_reply', { id: 'menu.orders', title: 'Orders', description: 'Where is my parcel?' }) }]))
  const row = await nthRun(choiceId, 3)
  t.match(row.triggerData.interactive, { type: 'list_reply', id: 'menu.orders', title: 'Orders' })
  await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, message: inboundQuickReply('menu.human', 'Talk to us') }]))
  const quick = await nthRun(choiceId, 4)
  t.match(quick.triggerData, { type: 'button', text: 'Talk to us', interactive: { type: 'quick_reply', id: 'menu.human', title: 'Talk to us' } })
  t.equal(textsSent().at(-1), 'A person will answer you shortly.')
})

t.test('a reaction and a location reach KEYWORD workflows as any message does, with what they carry', async (t) => {
  const thanks = await client.createWorkflow(token, {
    name: 'thanks for the thumbs up',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['👍'], match: 'exact' },
    nodes: [{ id: 'noted', type: 'set', config: { values: { reactedTo: '{{triggerData.reaction.messageId}}' } } }]
  })
  const { body } = await stack.call('GET', '/api/chat/conversations', { token })
  const menu = body[0].messages.find((m: { type: string }) => m.type === 'interactive')
  await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, message: inboundReaction(menu.wamid, '👍') }]))
  const run = await nthRun(thanks, 1)
  t.match(run.triggerData, { type: 'reaction', text: '👍', reaction: { messageId: menu.id, emoji: '👍' } })
  t.match(run.result.noted, { reactedTo: menu.id })

  const where = await client.createWorkflow(token, {
    name: 'where',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['[location]'] },
    nodes: [{ id: 'noted', type: 'set', config: { values: { lat: '{{triggerData.location.latitude}}' } } }]
  })
  await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, message: inboundLocation({ latitude: 48.8584, longitude: 2.2945, name: 'Eiffel Tower' }) }]))
  t.match((await nthRun(where, 1)).triggerData, { type: 'location', text: '[location] Eiffel Tower', location: { latitude: 48.8584, longitude: 2.2945, name: 'Eiffel Tower' } })
})

t.test('a tap whose id is no keyword starts nothing', async (t) => {
  const before = (await client.runsOf(token, choiceId)).length
  await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, message: inboundInteractiveReply('button_reply', { id: 'menu.other', title: 'Something else' }) }]))
  t.equal((await client.runsOf(token, choiceId)).length, before)
})

t.test('POST /api/chat/send/interactive sends buttons and lists inside the window', async (t) => {
  const buttons = await stack.call('POST', '/api/chat/send/interactive', {
    token,
    body: { to: CUSTOMER, type: 'button', body: 'Confirm your booking?', buttons: [{ id: 'yes', title: 'Yes' }, { id: 'no', title: 'No' }, { id: 'later', title: 'Ask me later' }] }
  })
  t.equal(buttons.status, 200, JSON.stringify(buttons.body))
  t.match(buttons.body, { messages: [{ id: /^wamid\./ }] })
  const sections = [{ title: 'Bikes', rows: [{ id: 'city', title: 'City bike', description: 'For every day' }, { id: 'road', title: 'Road bike' }] }, { title: 'Service', rows: [{ id: 'repair', title: 'Repair' }] }]
  const list = await stack.call('POST', '/api/chat/send/interactive', { token, body: { to: CUSTOMER, type: 'list', body: 'What are you looking for?', list: { button: 'Choose', sections } } })
  t.equal(list.status, 200, JSON.stringify(list.body))
  t.same((fake.sends().at(-1)?.body as { interactive: unknown }).interactive, {
    type: 'list',
    body: { text: 'What are you looking for?' },
    action: { button: 'Choose', sections }
  })
})

t.test('payloads over the platform\'s limits are 400s naming the limit, and never reach the platform', async (t) => {
  const sendsBefore = fake.sends().length
  const rows = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, title: `Row ${i}` }))
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ type: 'button', body: 'Pick', buttons: rows(4, 'b') }, 'buttons must hold 1 to 3 buttons'],
    [{ type: 'button', body: 'Pick', buttons: [] }, 'buttons must hold 1 to 3 buttons'],
    [{ type: 'button', body: 'Pick', buttons: [{ id: 'a', title: 'x'.repeat(21) }] }, 'buttons[0].title must NOT have more than 20 characters'],
    [{ type: 'button', body: 'x'.repeat(1025), buttons: rows(1, 'b') }, 'body must be 1 to 1024 characters'],
    [{ type: 'button', body: 'Pick', header: 'x'.repeat(61), buttons: rows(1, 'b') }, 'header must be 1 to 60 characters'],
    [{ type: 'button', body: 'Pick', buttons: [{ id: 'a', title: 'A' }, { id: 'a', title: 'B' }] }, 'buttons[1].id repeats buttons[0].id: ids must be unique'],
    [{ type: 'list', body: 'Pick', list: { button: 'Open', sections: [{ title: 'A', rows: rows(6, 'a') }, { title: 'B', rows: rows(5, 'b') }] } }, 'list.sections must hold at most 10 rows in all'],
    [{ type: 'list', body: 'Pick', list: { button: 'Open', sections: [{ rows: rows(11, 'a') }] } }, 'list.sections must hold at most 10 rows in all'],
    [{ type: 'list', body: 'Pick', list: { button: 'Open', sections: [{ rows: [{ id: 'a', title: 'A', description: 'x'.repeat(73) }] }] } }, 'list.sections[0].rows[0].description must NOT have more than 72 characters'],
    [{ type: 'list', body: 'Pick' }, 'list is required for type list: {button, sections}'],
    [{ type: 'carousel', body: 'Pick' }, 'type must be one of button, list']
  ]
  for (const [body, message] of cases) {
    const res = await stack.call('POST', '/api/chat/send/interactive', { token, body: { to: CUSTOMER, ...body } })
    t.match(res, { status: 400, body: { code: 'VALIDATION_ERROR', message } }, message)
  }
  const outside = await stack.call('POST', '/api/chat/send/interactive', { token, body: { to: '15550009999', type: 'button', body: 'Hi', buttons: rows(1, 'b') } })
  t.match(outside, { status: 400, body: { code: 'OUTSIDE_WINDOW', message: 'Outside the 24-hour window: send a template' } })
  t.equal(fake.sends().length, sendsBefore, 'none reached the platform')
})

t.test('a node whose rendered buttons pass the limit fails naming it, and sends nothing', async (t) => {
  const sendsBefore = fake.sends().length
  const run = await client.runWorkflow(token, {
    name: 'too many buttons',
    triggerType: 'MANUAL',
    nodes: [{ id: 'offer', type: 'send_chat_interactive', config: { phone: CUSTOMER, type: 'button', body: 'Pick', buttons: '{{triggerData.choices}}', retry: { attempts: 3, backoffMs: 10 } } }]
  }, { choices: [{ id: 'a', title: 'A' }, { id: 'b', title: 'B' }, { id: 'c', title: 'C' }, { id: 'd', title: 'D' }] })
  t.equal(run.status, 'FAILED')
  t.match(run.error, /buttons must hold 1 to 3 buttons/)
  t.notOk(run.logs.some((line: { message: string }) => /attempt 2/.test(line.message)), 'a refusal is not retried')
  t.equal(fake.sends().length, sendsBefore)
})

t.test('the fake refuses what the platform refuses: four buttons are error 100', async (t) => {
  const res = await fetch(`${fake.url}/${PHONE_NUMBER_ID}/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${FAKE_ACCESS_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      messaging_product: 'whatsapp',
      to: CUSTOMER,
      type: 'interactive',
      interactive: { type: 'button', body: { text: 'Pick' }, action: { buttons: ['a', 'b', 'c', 'd'].map((id) => ({ type: 'reply', reply: { id, title: id } })) } }
    })
  })
  t.equal(res.status, 400)
  t.match(await res.json(), { error: { code: 100, message: '(#100) Invalid parameter', error_data: { details: /buttons/ } } })
})
