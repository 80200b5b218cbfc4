import t from 'tap'
import {
  deliver, FAKE_ACCESS_TOKEN, fakeChatEnv, inboundFlowReply, inboundInteractiveReply, inboundLocation, inboundQuickReply, inboundReaction, messagesDelivery, startFakeChatPlatform
} from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { RunBody } from '@switchboard/testing/client'

/**
 * Interactive messages through the real api and worker: a workflow offers a menu of reply
 * buttons, the customer's tap comes back as `triggerData.interactive`, and a KEYWORD workflow
 * matching the tap's id answers each choice differently; the platform's limits are 400s. Flows:
 * sent in the platform's wire format, a completed one stored and given to workflows as
 * `triggerData.flowReply`, bounded however large the customer's response.
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
    [{ type: 'carousel', body: 'Pick' }, 'type must be one of button, list, flow']
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

const flowSend = (flow: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ to: CUSTOMER, type: 'flow', body: 'Book a table', flow, ...extra })

t.test('POST /api/chat/send/interactive sends a flow in the platform\'s wire format', async (t) => {
  const navigate = await stack.call('POST', '/api/chat/send/interactive', {
    token,
    body: flowSend({ id: '1234567890', cta: 'Book now', screen: 'BOOKING', data: { guests: [2, 4], note: { text: 'Window seat' } }, token: 'booking-7' }, { header: 'Tables', footer: 'Open daily' })
  })
  t.equal(navigate.status, 200, JSON.stringify(navigate.body))
  t.same(fake.sends().at(-1)?.body, {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: CUSTOMER,
    type: 'interactive',
    interactive: {
      type: 'flow',
      header: { type: 'text', text: 'Tables' },
      body: { text: 'Book a table' },
      footer: { text: 'Open daily' },
      action: {
        name: 'flow',
        parameters: {
          flow_message_version: '3',
          flow_id: '1234567890',
          flow_cta: 'Book now',
          flow_token: 'booking-7',
          flow_action: 'navigate',
          flow_action_payload: { screen: 'BOOKING', data: { guests: [2, 4], note: { text: 'Window seat' } } }
        }
      }
    }
  })
  const exchange = await stack.call('POST', '/api/chat/send/interactive', { token, body: flowSend({ name: 'signup', cta: 'Sign up', action: 'data_exchange' }) })
  t.equal(exchange.status, 200, JSON.stringify(exchange.body))
  t.same((fake.sends().at(-1)?.body as { interactive: unknown }).interactive, {
    type: 'flow',
    body: { text: 'Book a table' },
    action: { name: 'flow', parameters: { flow_message_version: '3', flow_name: 'signup', flow_cta: 'Sign up', flow_action: 'data_exchange' } }
  }, 'by name; a data exchange has no payload')
  const { body } = await stack.call('GET', '/api/chat/conversations', { token })
  t.match(body[0].messages.at(-1), { direction: 'outbound', type: 'interactive', content: 'Book a table', wamid: exchange.body.messages[0].id })
})

t.test('a send_chat_interactive node sends a flow, its fields rendered', async (t) => {
  const run = await client.runWorkflow(token, {
    name: 'send a flow',
    triggerType: 'MANUAL',
    nodes: [{
      id: 'form',
      type: 'send_chat_interactive',
      config: { phone: CUSTOMER, type: 'flow', body: 'Your repair, {{triggerData.name}}', flow: { name: 'repair_booking', cta: 'Book a repair', action: 'NAVIGATE', screen: 'START', data: { bike: '{{triggerData.bike}}' }, token: 'repair-{{triggerData.order}}' } }
    }]
  }, { name: 'Lena', bike: 'City 3', order: 7 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same((fake.sends().at(-1)?.body as { interactive: unknown }).interactive, {
    type: 'flow',
    body: { text: 'Your repair, Lena' },
    action: { name: 'flow', parameters: { flow_message_version: '3', flow_name: 'repair_booking', flow_cta: 'Book a repair', flow_token: 'repair-7', flow_action: 'navigate', flow_action_payload: { screen: 'START', data: { bike: 'City 3' } } } }
  })
})

t.test('flows past the platform\'s rules and our bounds are 400s naming the field, and never reach the platform', async (t) => {
  const sendsBefore = fake.sends().length
  const nested = (levels: number): Record<string, unknown> => levels === 1 ? { leaf: 1 } : { next: nested(levels - 1) }
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ to: CUSTOMER, type: 'flow', body: 'Book' }, 'flow is required for type flow: {id or name, cta, screen?, data?, token?, action?}'],
    [flowSend({ cta: 'Book' }), 'flow needs exactly one of flow.id and flow.name'],
    [flowSend({ id: '1', name: 'booking', cta: 'Book' }), 'flow needs exactly one of flow.id and flow.name'],
    [flowSend({ id: '1', cta: 'x'.repeat(31) }), 'flow.cta must NOT have more than 30 characters'],
    [flowSend({ id: '1', cta: 'Book 🍽️' }), 'flow.cta must have no emoji'],
    [flowSend({ id: '1' }), 'flow.cta is required'],
    [flowSend({ id: '1', cta: 'Book', action: 'open' }), 'flow.action must be one of navigate, data_exchange'],
    [flowSend({ id: '1', cta: 'Book', action: 'data_exchange', screen: 'BOOKING' }), 'flow.screen and flow.data are only for action navigate'],
    [flowSend({ id: '1', cta: 'Book', data: { guests: 2 } }), 'flow.data needs flow.screen, the screen it is for'],
    [flowSend({ id: '1', cta: 'Book', screen: 'BOOKING', data: {} }), 'flow.data must be a non-empty object'],
    [flowSend({ id: '1', cta: 'Book', screen: 'BOOKING', data: 'guests' }), 'flow.data must be a non-empty object'],
    [flowSend({ id: '1', cta: 'Book', screen: 'BOOKING', data: nested(11) }), 'flow.data must nest at most 10 levels'],
    [flowSend({ id: '1', cta: 'Book', screen: 'BOOKING', data: { note: 'x'.repeat(10 * 1024) } }), 'flow.data must be at most 10240 bytes as JSON'],
    [{ ...flowSend({ id: '1', cta: 'Book' }), buttons: [{ id: 'a', title: 'A' }] }, 'buttons is only for type button'],
    [{ to: CUSTOMER, type: 'button', body: 'Pick', buttons: [{ id: 'a', title: 'A' }], flow: { id: '1', cta: 'Book' } }, 'flow is only for type flow']
  ]
  for (const [body, message] of cases) {
    const res = await stack.call('POST', '/api/chat/send/interactive', { token, body })
    t.match(res, { status: 400, body: { code: 'VALIDATION_ERROR', message } }, message)
  }
  t.equal(fake.sends().length, sendsBefore, 'none reached the platform')
})

t.test('the fake refuses a flow as the platform does: error 100 naming the parameter', async (t) => {
  const send = async (parameters: Record<string, unknown>) => await fetch(`${fake.url}/${PHONE_NUMBER_ID}/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${FAKE_ACCESS_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messaging_product: 'whatsapp', to: CUSTOMER, type: 'interactive', interactive: { type: 'flow', body: { text: 'Book' }, action: { name: 'flow', parameters } } })
  })
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ flow_id: '1', flow_cta: 'Book' }, /flow_message_version/],
    [{ flow_message_version: '3', flow_cta: 'Book' }, /exactly one of flow_id or flow_name/],
    [{ flow_message_version: '3', flow_id: '1', flow_cta: 'Book 📅' }, /flow_cta/],
    [{ flow_message_version: '3', flow_id: '1', flow_cta: 'Book', flow_action: 'data_exchange', flow_action_payload: { screen: 'A' } }, /only for flow_action navigate/],
    [{ flow_message_version: '3', flow_id: '1', flow_cta: 'Book', flow_action_payload: { screen: 'A', data: {} } }, /non-empty object/]
  ]
  for (const [parameters, details] of cases) {
    const res = await send(parameters)
    t.equal(res.status, 400)
    t.match(await res.json(), { error: { code: 100, message: '(#100) Invalid parameter', type: 'OAuthException', error_data: { messaging_product: 'whatsapp', details } } }, String(details))
  }
  t.equal((await send({ flow_message_version: '3', flow_id: '1', flow_cta: 'Book', mode: 'draft' })).status, 200, 'a draft flow with the defaults is taken')
})

/** A workflow of every message workflows see, with what a completed flow carries: made by the first test of flow replies. */
let listenerId = ''

/** The stored message of the customer's conversation with this wamid. */
async function stored (wamid: string): Promise<Record<string, any> | undefined> {
  const { body } = await stack.call('GET', '/api/chat/conversations', { token })
  const conversation = body.find((c: { phone: string }) => c.phone === CUSTOMER)
  const { body: messages } = await stack.call('GET', `/api/chat/conversations/${conversation.id}/messages?limit=100`, { token })
  return (messages as Array<Record<string, any>>).find((message) => message.wamid === wamid)
}

t.test('a completed flow is stored as details.flowReply and reaches workflows as triggerData.flowReply', async (t) => {
  listenerId = await client.createWorkflow(token, {
    name: 'every message',
    triggerType: 'EVENT',
    triggerConfig: { eventName: 'chat.message.received' },
    nodes: [{ id: 'seen', type: 'set', config: { values: { guests: '{{triggerData.flowReply.response.guests}}' } } }]
  })
  const response = { flow_token: 'booking-7', guests: 4, date: '2026-12-24', seating: { area: 'terrace' } }
  await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, wamid: 'wamid.flow.done', message: inboundFlowReply(JSON.stringify(response), 'wamid.flow.sent') }]))
  const run = await nthRun(listenerId, 1)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.triggerData, { type: 'interactive', text: '[flow]', flowReply: { name: 'flow', body: 'Sent', response } })
  t.notOk('interactive' in run.triggerData, 'a completed flow is no tap')
  t.same(run.result.seen, { guests: 4 })
  t.match(await stored('wamid.flow.done'), { direction: 'inbound', type: 'interactive', content: '[flow]', details: { flowReply: { name: 'flow', body: 'Sent', response } } })
})

t.test('a hostile flow response (1 MB, 30,000 levels deep, not JSON) is stored with a marker instead, and the delivery completes', async (t) => {
  // Just under the webhook's 1 MiB body limit with its envelope: the largest delivery the api takes.
  const huge = JSON.stringify({ flow_token: 't', note: 'x'.repeat(1_000_000) })
  const deep = `{"a":${'['.repeat(30_000)}${']'.repeat(30_000)}}`
  const cases: Array<[string, string, string]> = [['huge', huge, 'too_large'], ['deep', deep, 'too_deep'], ['garbage', '{"flow_token": "t", ', 'not_json']]
  for (const [i, [what, json, unreadable]] of cases.entries()) {
    await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, wamid: `wamid.flow.hostile.${what}`, message: inboundFlowReply(json) }]))
    const run = await nthRun(listenerId, 2 + i)
    t.equal(run.status, 'SUCCESS', run.error ?? '')
    t.same(run.triggerData.flowReply, { name: 'flow', body: 'Sent', response: {}, unreadable }, what)
    t.match(await stored(`wamid.flow.hostile.${what}`), { details: { flowReply: { response: {}, unreadable } } })
  }
  const { body } = await stack.call('GET', '/api/automation/queues', { token })
  t.equal(body.queues.find((queue: { name: string }) => queue.name === 'assistant-main').failed, 0, 'no delivery failed')
})
