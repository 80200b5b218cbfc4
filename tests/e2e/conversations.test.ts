import postgres from 'postgres'
import t from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import {
  deliver, fakeChatEnv, inboundFlowReply, inboundInteractiveReply, inboundLocation, inboundReaction, messagesDelivery, startFakeChatPlatform
} from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { RunBody, RunSummary } from '@switchboard/testing/client'

/**
 * Conversations that workflows hold (README, Conversations), through the real api and worker and
 * the fake platform: the order-status bot (ask, check, ask again, look up, offer a person), and
 * who gets an inbound message while an `ask` waits: the ask, once, and nothing else.
 */
const PHONE_NUMBER_ID = '106540352242977'
const APP_SECRET = 'e2e-conversations-app-secret'

const fake = await startFakeChatPlatform()
t.teardown(async () => { await fake.close() })
const orders = await startDeliverySink(t, {
  answer: (request) => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: request.path.split('/').at(-1), status: 'shipped on Monday' }) })
})
// RECONCILER_RUNNING_AFTER_MS: a run resumed by an answer started long before, so the reconciler checks its job while it runs (engine/README.md, Claims).
const stack = await startStack(t, {
  env: { ...fakeChatEnv(fake, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }), HTTP_REQUEST_ALLOW_PRIVATE: 'true', RECONCILER_INTERVAL_MS: '500', RECONCILER_GRACE_MS: '1000', RECONCILER_RUNNING_AFTER_MS: '1000' }
})
const token = await stack.adminToken()
const sql = postgres(stack.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
t.teardown(async () => { await sql.end() })
const { client } = stack

let wamids = 0
const say = async (from: string, text: string, wamid = `wamid.conv.${from}.${++wamids}`): Promise<string> => {
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from, name: 'Ana', text, wamid }]), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
  return wamid
}
const tap = async (from: string, id: string, title: string): Promise<void> => {
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from, message: inboundInteractiveReply('button_reply', { id, title }) }]), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
}

const send = async (from: string, message: Record<string, unknown>, wamid = `wamid.conv.${from}.${++wamids}`): Promise<string> => {
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from, message, wamid }]), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
  return wamid
}

/** What the platform was asked to send to `to`, as text (a text's body, an interactive's body). */
const sentTo = (to: string): string[] => fake.sends().flatMap((send) => {
  const body = send.body as { to?: string, type?: string, text?: { body?: string }, interactive?: { body?: { text?: string } } }
  if (body.to !== to) return []
  const text = body.type === 'text' ? body.text?.body : body.interactive?.body?.text
  return text === undefined ? [] : [text]
})
const waitForSent = async (to: string, count: number): Promise<string[]> =>
  await waitFor(async () => { const sent = sentTo(to); return sent.length >= count ? sent : undefined }, { what: `${count} messages sent to ${to}` })

const runOf = async (workflowId: string, n = 1): Promise<RunSummary> => await waitFor(async () => (await client.runsOf(token, workflowId)).at(-n), { what: `run ${n} of ${workflowId}` })
const finished = async (runId: string): Promise<RunBody> => await client.runReaching(token, runId)
const waiting = async (runId: string): Promise<RunBody> => await client.runReaching(token, runId, ['WAITING'])

// Every inbound message a workflow may see: the answers an ask takes must start none of these.
const everyMessage = await client.createWorkflow(token, {
  name: 'every message',
  triggerType: 'EVENT',
  triggerConfig: { eventName: 'chat.message.received' },
  nodes: [{ id: 'noted', type: 'set', config: { values: { text: '{{triggerData.text}}' } } }]
})
const messagesSeenByWorkflows = async (): Promise<string[]> => (await client.runsOf(token, everyMessage, { limit: 500 })).map((run) => String((run.triggerData as { text?: unknown }).text))

const orderBot = await client.createWorkflow(token, {
  name: 'order status',
  triggerType: 'KEYWORD',
  triggerConfig: { keywords: ['order'] },
  nodes: [
    {
      id: 'number',
      type: 'ask',
      config: { text: 'What is your order number?', expect: 'pattern', pattern: '[0-9]{4,10}', invalidReply: 'An order number has digits only.', exitKeywords: ['never mind'], invalid: 'giveUp', exited: 'bye' },
      next: 'lookup'
    },
    { id: 'lookup', type: 'http_request', config: { method: 'GET', url: `${orders.url}/orders/{{number.value}}` }, next: 'status' },
    { id: 'status', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Order {{number.value}}: {{lookup.body.status}}' }, next: 'person' },
    {
      id: 'person',
      type: 'ask',
      config: { text: 'Anything else?', buttons: [{ id: 'human', title: 'Talk to a person' }, { id: 'done', title: 'No, thanks' }], expect: 'choice' },
      next: 'route'
    },
    { id: 'route', type: 'condition', config: { field: '{{person.value}}', cases: { human: 'handover', done: 'thanks' } } },
    {
      id: 'handover',
      type: 'handoff',
      config: { phone: '{{triggerData.phone}}', assignTo: 'least_busy', labels: ['orders'], priority: 'high', note: 'Asked about order {{number.value}}' },
      next: 'told'
    },
    { id: 'told', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'A person will answer you shortly.' } },
    { id: 'thanks', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Thank you!' } },
    { id: 'giveUp', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Please call us.' } },
    { id: 'bye', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Bye.' } }
  ]
})

t.test('the order-status bot: asks, checks, asks again, looks the order up and offers a person', async (t) => {
  const customer = '15550001001'
  await say(customer, 'I have a question about my order')
  const run = await runOf(orderBot)
  t.same(await waitForSent(customer, 1), ['What is your order number?'])
  await waiting(run.id)

  await say(customer, 'my order is abc')
  t.same((await waitForSent(customer, 3)).slice(1), ['An order number has digits only.', 'What is your order number?'], 'an answer that is no order number is answered and asked again')
  await say(customer, ' 48213 ')
  t.same((await waitForSent(customer, 5)).slice(3), ['Order 48213: shipped on Monday', 'Anything else?'])
  t.equal(orders.deliveries.at(-1)?.path, '/orders/48213', 'the lookup used the parsed answer')
  await waiting(run.id)
  await tap(customer, 'human', 'Talk to a person')
  const done = await finished(run.id)
  t.equal(done.status, 'SUCCESS', done.error ?? '')
  t.equal(sentTo(customer).at(-1), 'A person will answer you shortly.')
  t.match(done.result.number, { answer: '48213', value: '48213', attempts: 2, messageId: /\w+/ })
  t.match(done.result.person, { value: 'human', interactive: { type: 'button_reply', id: 'human', title: 'Talk to a person' } })
  const { body: list } = await stack.call('GET', '/api/chat/conversations', { token })
  const conversation = list.find((c: { phone: string }) => c.phone === customer)
  t.match(conversation, { assignedAgentId: done.result.handover.assignedTo, labels: ['orders'], priority: 'high', assistantPaused: true }, 'handed over to a person')
  const { body: notes } = await stack.call('GET', `/api/chat/conversations/${conversation.id}/notes`, { token })
  t.match(notes, [{ text: 'Asked about order 48213', runId: run.id, authorId: null }], 'with a note for them')
  t.same(await messagesSeenByWorkflows(), ['I have a question about my order'], 'the answers started no chat.message.received workflow')
  t.equal((await client.runsOf(token, orderBot)).length, 1, 'and no KEYWORD workflow, though the first answer says "order"')
})

t.test('attempts used up, an exit keyword: the invalid and exited links', async (t) => {
  const giveUp = '15550001002'
  await say(giveUp, 'order')
  await waitForSent(giveUp, 1)
  const first = (await client.runsOf(token, orderBot))[0]!
  // Each answer but the last is answered and asked again: two messages more each time.
  for (const [i, text] of ['no', 'nope'].entries()) {
    await say(giveUp, text)
    await waitForSent(giveUp, 3 + 2 * i)
  }
  await say(giveUp, 'still no')
  const ended = await finished(first.id)
  t.equal(ended.status, 'SUCCESS')
  t.match(ended.result.number, { answer: 'still no', value: null, attempts: 3 })
  t.equal(sentTo(giveUp).at(-1), 'Please call us.')

  const leaver = '15550001003'
  await say(leaver, 'order')
  await waitForSent(leaver, 1)
  const second = (await client.runsOf(token, orderBot))[0]!
  await waiting(second.id)
  await say(leaver, 'Never  Mind')
  const left = await finished(second.id)
  t.match(left.result.number, { reason: 'exit_keyword', answer: 'Never  Mind' })
  t.equal(sentTo(leaver).at(-1), 'Bye.')
})

t.test('an answer delivered twice, and twice at once, resumes the run once', async (t) => {
  const customer = '15550001004'
  await say(customer, 'order')
  await waitForSent(customer, 1)
  const run = (await client.runsOf(token, orderBot))[0]!
  await waiting(run.id)
  const before = orders.deliveries.length
  const wamid = 'wamid.conv.twice'
  await Promise.all([say(customer, '777777', wamid), say(customer, '777777', wamid)])
  await say(customer, '777777', wamid)
  await waitForSent(customer, 3)
  await waiting(run.id)
  t.equal(orders.deliveries.length - before, 1, 'the order was looked up once')
  t.same(sentTo(customer).slice(1), ['Order 777777: shipped on Monday', 'Anything else?'], 'and answered once')
})

t.test('while an ask waits, a burst of messages: one answer taken, the rest stored', async (t) => {
  const single = await client.createWorkflow(token, {
    name: 'one question',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['question'] },
    nodes: [
      { id: 'answer', type: 'ask', config: { text: 'Your question?' }, next: 'noted' },
      { id: 'noted', type: 'http_request', config: { method: 'POST', url: `${orders.url}/questions`, body: { text: '{{answer.value}}' } } }
    ]
  })
  const customer = '15550001005'
  await say(customer, 'question')
  await waitForSent(customer, 1)
  const run = await runOf(single)
  await waiting(run.id)
  const burst = Array.from({ length: 30 }, (_, i) => ({ from: customer, text: `part ${i}`, wamid: `wamid.conv.burst.${i}` }))
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, burst), APP_SECRET)
  t.equal(res.status, 200)
  const done = await finished(run.id)
  t.match(done.result.answer, { answer: 'part 0', attempts: 1 }, 'the first message of the burst was the answer')
  const { body } = await stack.call('GET', '/api/chat/conversations', { token })
  const conversation = body.find((c: { phone: string }) => c.phone === customer)
  const inbound = async (): Promise<number> => {
    const { body: thread } = await stack.call('GET', `/api/chat/conversations/${conversation.id}/messages?limit=100`, { token })
    return (thread as Array<{ direction: string }>).filter((m) => m.direction === 'inbound').length
  }
  t.equal(await waitFor(async () => await inbound() === 31 ? 31 : undefined, { what: 'the burst stored' }), 31, 'every message of the burst is stored')
  t.equal(orders.deliveries.filter((request) => request.path === '/questions').length, 1, 'the run went on once')
})

t.test('a cancelled run\'s ask takes nothing; opting out ends an ask at exited with nothing sent', async (t) => {
  const customer = '15550001006'
  await say(customer, 'order')
  await waitForSent(customer, 1)
  const run = (await client.runsOf(token, orderBot))[0]!
  await waiting(run.id)
  t.equal((await stack.call('POST', `/api/automation/runs/${run.id}/cancel`, { token })).status, 200)
  const seen = (await messagesSeenByWorkflows()).length
  await say(customer, '123456')
  await waitFor(async () => (await messagesSeenByWorkflows()).length > seen ? true : undefined, { what: 'the message to reach the workflows' })
  t.equal((await client.getRun(token, run.id)).status, 'CANCELLED', 'the answer did not resume the cancelled run')
  t.equal(sentTo(customer).length, 1)

  const quitter = '15550001007'
  await say(quitter, 'order')
  await waitForSent(quitter, 1)
  const asked = (await client.runsOf(token, orderBot))[0]!
  await waiting(asked.id)
  await say(quitter, 'STOP')
  const ended = await finished(asked.id)
  t.match(ended.result.number, { reason: 'opted_out', answer: null })
  t.notOk(sentTo(quitter).includes('Bye.'), 'the exited link sends nothing to a customer who opted out')
})

t.test('a newer ask of the conversation takes over; an unanswered ask times out', async (t) => {
  const quick = await client.createWorkflow(token, {
    name: 'quick question',
    nodes: [
      { id: 'rating', type: 'ask', config: { text: 'Rate us from 1 to 5', expect: 'number', timeoutMinutes: 0.05, timedOut: 'late' } },
      { id: 'late', type: 'set', config: { values: { late: true } } }
    ]
  })
  const customer = '15550001008'
  await say(customer, 'order')
  await waitForSent(customer, 1)
  const older = (await client.runsOf(token, orderBot))[0]!
  await waiting(older.id)
  const newer = await client.fire(token, quick, { phone: customer })
  const superseded = await finished(older.id)
  t.equal(superseded.status, 'SUCCESS')
  t.match(superseded.result.number, { reason: 'superseded' })
  const timedOut = await client.runReaching(token, newer, ['SUCCESS', 'FAILED'], { timeoutMs: 20_000 })
  t.match(timedOut.result, { rating: { reason: 'timeout', attempts: 0 }, late: { late: true } })
  const seen = (await messagesSeenByWorkflows()).length
  await say(customer, '5')
  await waitFor(async () => (await messagesSeenByWorkflows()).length > seen ? true : undefined, { what: 'a message after the timeout to reach the workflows' })
})

t.test('a customer who never wrote is asked with the template, and their answer is taken', async (t) => {
  const outreach = await client.createWorkflow(token, {
    name: 'outreach',
    nodes: [
      { id: 'confirm', type: 'ask', config: { text: 'Shall we deliver tomorrow?', template: { name: 'hello_world', lang: 'en_US' }, buttons: [{ id: 'yes', title: 'Yes' }, { id: 'no', title: 'No' }], expect: 'choice' } },
      { id: 'again', type: 'ask', config: { text: 'Which time suits you?', template: { name: 'hello_world' }, expect: 'text' } }
    ]
  })
  const customer = '15550001010'
  const runId = await client.fire(token, outreach, { phone: customer })
  await waiting(runId)
  const first = fake.sends().filter((send) => (send.body as { to?: string }).to === customer)
  t.match(first, [{ body: { type: 'template', template: { name: 'hello_world' } } }], 'outside the window: the template, the one message the platform allows')
  await say(customer, 'yes')
  await waitForSent(customer, 1)
  await waiting(runId)
  t.match(fake.sends().filter((send) => (send.body as { to?: string }).to === customer).at(-1)?.body, { type: 'text', text: { body: 'Which time suits you?' } }, 'the customer wrote: inside the window, the question itself')
  t.match((await client.getRun(token, runId)).result.confirm, { value: 'yes', attempts: 1 })
})

t.test('a reaction is no answer: the ask waits on; with typing, the answer is marked read with the typing indicator', async (t) => {
  const courier = await client.createWorkflow(token, {
    name: 'courier',
    nodes: [
      { id: 'time', type: 'ask', config: { text: 'When shall the courier come?', expect: 'text', typing: true } },
      { id: 'noted', type: 'set', config: { values: { time: '{{time.answer}}' } } }
    ]
  })
  const customer = '15550001013'
  const before = (await messagesSeenByWorkflows()).length
  const hello = await say(customer, 'hello')
  // Its delivery processed (the window open) before the run asks, or the question could not be sent.
  await waitFor(async () => (await messagesSeenByWorkflows()).length > before ? true : undefined, { what: 'the customer\'s hello to be processed' })
  const runId = await client.fire(token, courier, { phone: customer })
  await waiting(runId)
  const seen = (await messagesSeenByWorkflows()).length
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: customer, message: inboundReaction(hello, '👍') }]), APP_SECRET)
  t.equal(res.status, 200)
  await waitFor(async () => (await messagesSeenByWorkflows()).length > seen ? true : undefined, { what: 'the reaction to reach the workflows' })
  t.equal((await client.getRun(token, runId)).status, 'WAITING', 'the reaction did not answer the ask')
  const answer = await say(customer, 'at noon')
  const run = await finished(runId)
  t.match(run.result, { time: { answer: 'at noon' }, noted: { time: 'at noon' } })
  const receipts = fake.sends().filter((send) => (send.body as { status?: string }).status === 'read')
  t.same(receipts.at(-1)?.body, { messaging_product: 'whatsapp', status: 'read', message_id: answer, typing_indicator: { type: 'text' } })
})

t.test('100 conversations waiting at an ask, answered in a burst: each resumed once, with its own answer', async (t) => {
  const survey = await client.createWorkflow(token, {
    name: 'hundred',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['poll'] },
    nodes: [
      { id: 'answer', type: 'ask', config: { text: 'Your number?', expect: 'number' }, next: 'thanks' },
      { id: 'thanks', type: 'http_request', config: { method: 'POST', url: `${orders.url}/answers`, body: { value: '{{answer.value}}', phone: '{{triggerData.phone}}' } } }
    ]
  })
  const customers = Array.from({ length: 100 }, (_, i) => `1555100${String(i).padStart(4, '0')}`)
  await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, customers.map((from, i) => ({ from, text: 'poll', wamid: `wamid.poll.${i}` }))), APP_SECRET)
  await waitFor(async () => {
    const runs = await client.runsOf(token, survey, { limit: 200 })
    return runs.length === 100 && runs.every((run) => run.status === 'WAITING') ? true : undefined
  }, { what: '100 runs waiting at their ask', timeoutMs: 60_000 })
  const before = orders.deliveries.length
  await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, customers.map((from, i) => ({ from, text: String(i), wamid: `wamid.poll.answer.${i}` }))), APP_SECRET)
  await waitFor(async () => {
    const runs = await client.runsOf(token, survey, { limit: 200 })
    return runs.every((run) => run.status === 'SUCCESS') ? true : undefined
  }, { what: '100 runs to end', timeoutMs: 60_000 })
  const deliveries = orders.deliveries.slice(before).filter((request) => request.path === '/answers')
  const answers = deliveries.map((request) => JSON.parse(request.body) as { value: number, phone: string })
  t.same(new Set(answers.map((answer) => `${answer.phone}:${answer.value}`)), new Set(customers.map((phone, i) => `${phone}:${i}`)), 'each run went on with its own customer\'s answer')
  // Never taken over while its wake drove it (engine/README.md, Claims). An effect is at least once
  // (README, Guarantees): a second delivery is the same node's, with its Idempotency-Key; its run's
  // log is printed so that a repeat can be read in the test's output.
  const runs = await Promise.all((await client.runsOf(token, survey, { limit: 200 })).map(async (run) => await client.getRun(token, run.id)))
  t.same(runs.filter((run) => run.logs.some((line) => line.message.startsWith('Run taken over'))).map((run) => run.logs), [], 'no run was taken over')
  t.same(runs.filter((run) => run.logs.filter((line) => line.message === 'Run resumed').length !== 1).map((run) => run.logs), [], 'each run resumed once, by its answer: its ask\'s suspension stood')
  const keys = new Map<string, number>()
  for (const request of deliveries) keys.set(String(request.headers['idempotency-key']), (keys.get(String(request.headers['idempotency-key'])) ?? 0) + 1)
  t.same([...keys.keys()].sort(), runs.map((run) => `${run.id}:thanks`).sort(), 'each delivery carries its run\'s Idempotency-Key')
  for (const run of runs.filter((candidate) => (keys.get(`${candidate.id}:thanks`) ?? 0) > 1)) t.comment(`delivered more than once: ${JSON.stringify(run.logs.map((line) => line.message))}`)
})

t.test('an ask for a flow: the question is the flow, a typed answer is asked again, the completed flow is the value', async (t) => {
  const booking = await client.createWorkflow(token, {
    name: 'book a table',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['table'] },
    nodes: [
      {
        id: 'booking',
        type: 'ask',
        config: {
          text: 'When would you like to come?',
          flow: { id: '1234567890', cta: 'Book a table', screen: 'BOOKING', data: { name: '{{triggerData.name}}' }, token: 'booking-{{triggerData.messageId}}' },
          expect: 'flow',
          invalidReply: 'Please fill in the booking form.'
        },
        next: 'booked'
      },
      { id: 'booked', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Booked for {{booking.value.guests}} on {{booking.value.date}}.' } }
    ]
  })
  const customer = '15550001011'
  await say(customer, 'a table please')
  const run = await runOf(booking)
  t.same(await waitForSent(customer, 1), ['When would you like to come?'])
  const question = fake.sends().filter((sent) => (sent.body as { to?: string }).to === customer).at(-1)
  t.same((question?.body as { interactive: unknown }).interactive, {
    type: 'flow',
    body: { text: 'When would you like to come?' },
    action: {
      name: 'flow',
      parameters: { flow_message_version: '3', flow_id: '1234567890', flow_cta: 'Book a table', flow_token: `booking-${(await client.getRun(token, run.id)).triggerData.messageId as string}`, flow_action: 'navigate', flow_action_payload: { screen: 'BOOKING', data: { name: 'Ana' } } }
    }
  }, 'the question is the flow message, its fields rendered')
  await waiting(run.id)
  await say(customer, 'tomorrow at 8, four of us')
  t.same((await waitForSent(customer, 3)).slice(1), ['Please fill in the booking form.', 'When would you like to come?'], 'typed text is no completed flow: asked again, with the flow')
  await waiting(run.id)
  const response = { flow_token: 'booking-1', guests: 4, date: '2026-12-24' }
  await send(customer, inboundFlowReply(JSON.stringify(response)))
  const done = await finished(run.id)
  t.equal(done.status, 'SUCCESS', done.error ?? '')
  t.match(done.result.booking, { value: response, attempts: 2, flowReply: { name: 'flow', body: 'Sent', response } })
  t.equal(sentTo(customer).at(-1), 'Booked for 4 on 2026-12-24.')
  t.same(await messagesSeenByWorkflows().then((seen) => seen.filter((text) => text === '[flow]')), [], 'the completed flow started no chat.message.received workflow')
})

t.test('an ask for a location: a typed address is asked again, a shared location is the value', async (t) => {
  const pickup = await client.createWorkflow(token, {
    name: 'pickup',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['pickup'] },
    nodes: [
      { id: 'where', type: 'ask', config: { text: 'Where shall we pick you up?', expect: 'location', invalidReply: 'Please share a location.', maxAttempts: 2, invalid: 'noPlace' }, next: 'coming' },
      { id: 'coming', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'On our way to {{where.value.name}} ({{where.value.latitude}}, {{where.value.longitude}}).' } },
      { id: 'noPlace', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Please call us.' } }
    ]
  })
  const customer = '15550001012'
  await say(customer, 'pickup')
  const run = await runOf(pickup)
  await waitForSent(customer, 1)
  await waiting(run.id)
  await say(customer, 'Unter den Linden 1, Berlin')
  t.same((await waitForSent(customer, 3)).slice(1), ['Please share a location.', 'Where shall we pick you up?'])
  await waiting(run.id)
  const place = { latitude: 52.5170365, longitude: 13.3888599, name: 'Humboldt Forum', address: 'Unter den Linden 1, Berlin', url: 'https://example.com/humboldt' }
  const wamid = await send(customer, inboundLocation(place))
  const done = await finished(run.id)
  t.equal(done.status, 'SUCCESS', done.error ?? '')
  t.match(done.result.where, { value: place, location: place, attempts: 2, answer: '[location]' })
  t.equal(sentTo(customer).at(-1), 'On our way to Humboldt Forum (52.5170365, 13.3888599).')
  const [stored] = await sql<Array<{ details: unknown }>>`select details from messages where wamid = ${wamid}`
  t.same(stored?.details, { location: place }, 'stored with its place')
})

t.test('an answer stored whose wake was lost (the worker killed in between): the reconciler resumes the run, once', async (t) => {
  const customer = '15550001009'
  await say(customer, 'order')
  await waitForSent(customer, 1)
  const run = (await client.runsOf(token, orderBot))[0]!
  await waiting(run.id)
  const [message] = await sql<Array<{ id: string }>>`select m.id from messages m join conversations c on c.id = m.conversation_id where c.phone = ${customer} order by m.created_at desc limit 1`
  // What a worker that died right after taking the answer leaves: the ask answered, no wake.
  await sql`update chat_asks set status = 'answered', updated_at = now() - interval '1 minute',
    answer = ${sql.json({ messageId: message!.id, wamid: 'wamid.lost', type: 'text', text: '5150' })}
    where run_id = ${run.id}`
  await waitForSent(customer, 3)
  await waiting(run.id)
  t.same(sentTo(customer).slice(1), ['Order 5150: shipped on Monday', 'Anything else?'])
})
