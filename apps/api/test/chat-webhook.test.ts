import t from 'tap'
import {
  messagesDelivery, newWamid, platformJson, signature, signedDelivery, statusesDelivery
} from '@switchboard/testing/fake-chat-platform'
import { APP_SECRET, buildChatTestApp, DEFAULT_PHONE_NUMBER_ID, VERIFY_TOKEN } from './chat-helper.ts'
import { waitFor } from '@switchboard/testing/wait'
import type { RunSummary } from '@switchboard/testing/client'

const chat = await buildChatTestApp(t, { worker: true })
const { request, app, fake, receive } = chat
const member = await chat.newMember()

interface ConversationBody { id: string, phone: string, name: string | null, unreadCount: number, lastMessage: string, messages: Array<{ id: string, content: string, status: string | null, wamid: string, error: unknown }> }
const conversationOf = async (phone: string, token = member.token): Promise<ConversationBody | undefined> => {
  const res = await request({ method: 'GET', url: '/api/chat/conversations', token })
  return res.json().find((c: ConversationBody) => c.phone === phone)
}
const pendingDeliveries = async (): Promise<number> =>
  (await app.database.sql<Array<{ n: number }>>`select count(*)::int as n from chat_deliveries`)[0].n

t.test('verification handshake', async (t) => {
  const ok = await request({ method: 'GET', url: `/webhook/chat?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1158201444` })
  t.equal(ok.statusCode, 200)
  t.equal(ok.body, '1158201444')
  t.match(ok.headers['content-type'], /^text\/plain/)
  for (const query of ['hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1', `hub.mode=unsubscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1`, 'hub.mode=subscribe&hub.challenge=1']) {
    const res = await request({ method: 'GET', url: `/webhook/chat?${query}` })
    t.equal(res.statusCode, 403, query)
    t.equal(res.json().message, 'Forbidden')
  }
})

t.test('a delivery with a bad or missing signature is refused with 401 and stores nothing', async (t) => {
  const payload = messagesDelivery(DEFAULT_PHONE_NUMBER_ID, [{ from: '15551110001', text: 'forged' }])
  const body = platformJson(payload)
  for (const headers of [{ 'x-hub-signature-256': signature(body, 'another-secret') }, {}, { 'x-hub-signature-256': 'sha256=zz' }]) {
    const res = await request({ method: 'POST', url: '/webhook/chat', payload: body, headers: { 'content-type': 'application/json', ...headers } })
    t.equal(res.statusCode, 401)
    t.same(res.json(), { statusCode: 401, code: 'INVALID_SIGNATURE', error: 'Invalid signature', message: 'Invalid signature' })
  }
  t.equal(await pendingDeliveries(), 0)
  t.equal(await conversationOf('15551110001'), undefined)
})

t.test('non-ASCII payloads are verified over the raw bytes, escaped or not', async (t) => {
  const text = '¿Lo tienen en otro color? 🙂 — ありがとう'
  const now = Math.floor(Date.now() / 1000)
  const escaped = signedDelivery(messagesDelivery(DEFAULT_PHONE_NUMBER_ID, [{ from: '15551110002', name: 'Zoë Ñúñez', text, timestamp: now - 1 }]), APP_SECRET)
  t.match(escaped.body, /\\u00bf/, 'the platform escapes non-ASCII characters')
  const res = await request({ method: 'POST', url: '/webhook/chat', payload: escaped.body, headers: escaped.headers })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'received' })

  const raw = Buffer.from(JSON.stringify(messagesDelivery(DEFAULT_PHONE_NUMBER_ID, [{ from: '15551110002', withoutContacts: true, text: 'señal ✓', timestamp: now }])), 'utf8')
  const rawRes = await request({ method: 'POST', url: '/webhook/chat', payload: raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature(raw, APP_SECRET) } })
  t.equal(rawRes.statusCode, 200)

  // The worker may store the second delivery first, and a list reads the conversations before
  // their messages: a read between the two commits shows both messages under the name still unset.
  const conversation = await waitFor(async () => {
    const c = await conversationOf('15551110002')
    return c?.messages.length === 2 && c.name !== null ? c : undefined
  }, { what: 'both messages, and the name of the first' })
  t.equal(conversation.name, 'Zoë Ñúñez')
  t.same(conversation.messages.map((m) => m.content), [text, 'señal ✓'])
})

t.test('NUL characters and unpaired surrogates a customer sends become U+FFFD, not a reason to refuse the delivery', async (t) => {
  await receive([{ from: '15551110010', name: 'Nul\u0000Name', text: 'before\u0000after \ud83d' }])
  const conversation = await conversationOf('15551110010')
  t.equal(conversation?.name, 'Nul\ufffdName')
  t.same(conversation?.messages.map((m) => m.content), ['before\ufffdafter \ufffd'])
})

t.test('a signed body that is JSON but not an object is 400 and stores nothing', async (t) => {
  for (const body of ['null', '5', '[]', '"text"']) {
    const res = await request({ method: 'POST', url: '/webhook/chat', payload: body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature(body, APP_SECRET) } })
    t.equal(res.statusCode, 400, body)
    t.same(res.json(), { statusCode: 400, code: 'INVALID_BODY', error: 'Body must be a JSON object', message: 'Body must be a JSON object' })
  }
  t.equal(await pendingDeliveries(), 0)
})

t.test('a message stamped in the future counts as received now: it does not hold the free-text window open', async (t) => {
  const phone = '15551110011'
  const before = Date.now()
  await receive([{ from: phone, text: 'from the future', timestamp: Math.floor(before / 1000) + 2 * 86400 }])
  const res = await request({ method: 'GET', url: '/api/chat/conversations', token: member.token })
  const conversation = res.json().find((c: { phone: string }) => c.phone === phone)
  t.ok(Date.parse(conversation.lastIncomingAt) <= Date.now(), conversation.lastIncomingAt)
  t.ok(Date.parse(conversation.lastIncomingAt) >= before - 1000)
  t.ok(Date.parse(conversation.messages[0].createdAt) <= Date.now())
})

t.test('a duplicate delivery stores the message once', async (t) => {
  const payload = messagesDelivery(DEFAULT_PHONE_NUMBER_ID, [{ from: '15551110003', name: 'Dup', text: 'only once', wamid: newWamid() }])
  await chat.deliver(payload)
  await chat.deliver(payload)
  const conversation = await conversationOf('15551110003')
  t.equal(conversation?.messages.length, 1)
  t.equal(conversation?.unreadCount, 1)
  t.equal(conversation?.lastMessage, 'only once')
})

t.test('messages without contacts keep the stored name; unknown platform numbers are ignored', async (t) => {
  await receive([{ from: '15551110004', name: 'Known Name', text: 'hi' }])
  await receive([{ from: '15551110004', withoutContacts: true, text: 'again' }])
  const conversation = await conversationOf('15551110004')
  t.equal(conversation?.name, 'Known Name')
  t.equal(conversation?.unreadCount, 2)
  t.equal(conversation?.lastMessage, 'again')

  await receive([{ from: '15551110005', text: 'to a stranger' }], '999999999')
  t.equal(await conversationOf('15551110005'), undefined)
})

t.test('statuses move forward only, arrive without contacts, and record failures', async (t) => {
  const phone = '15551110006'
  await receive([{ from: phone, text: 'hello' }])
  const sendText = async (text: string): Promise<string> => {
    const res = await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: phone, text } })
    return res.json().messages[0].id
  }
  const first = await sendText('one')
  const second = await sendText('two')
  const statusOf = async (wamid: string) => (await conversationOf(phone))?.messages.find((m) => m.wamid === wamid)?.status

  const readFirst = statusesDelivery(DEFAULT_PHONE_NUMBER_ID, [{ wamid: first, status: 'read', recipientId: phone }])
  t.notOk('contacts' in (readFirst.entry as any)[0].changes[0].value, 'status deliveries carry no contacts')
  await chat.deliver(readFirst)
  t.equal(await statusOf(first), 'read')
  await chat.statuses([{ wamid: first, status: 'sent', recipientId: phone }, { wamid: first, status: 'delivered', recipientId: phone }])
  t.equal(await statusOf(first), 'read', 'late sent and delivered do not undo read')

  const errors = [{ code: 131047, title: 'Re-engagement message', message: 'Re-engagement message', error_data: { details: 'more than 24 hours' } }]
  await chat.statuses([{ wamid: second, status: 'failed', recipientId: phone, errors }])
  t.equal(await statusOf(second), 'failed')
  const failed = (await conversationOf(phone))?.messages.find((m) => m.wamid === second)
  t.same(failed?.error, { code: 131047, title: 'Re-engagement message', details: 'more than 24 hours' }, 'the platform\'s first error, as {code, title, details}')
  await chat.statuses([{ wamid: second, status: 'sent', recipientId: phone }])
  t.equal(await statusOf(second), 'failed', 'a late sent does not undo failed')
  await chat.statuses([{ wamid: second, status: 'delivered', recipientId: phone }])
  t.equal(await statusOf(second), 'delivered', 'proof of delivery overrides failed')
})

t.test('an inbound message starts matching KEYWORD workflows and chat.message.received workflows', async (t) => {
  const keywordId = await chat.client.createWorkflow(member.token, { name: 'pricing', triggerType: 'KEYWORD', triggerConfig: { keywords: ['Pricing', 'cost'] } })
  const exactId = await chat.client.createWorkflow(member.token, { name: 'menu', triggerType: 'KEYWORD', triggerConfig: { keywords: ['menu'], match: 'exact' } })
  const eventId = await chat.client.createWorkflow(member.token, { name: 'log', triggerType: 'EVENT', triggerConfig: { eventName: 'chat.message.received' } })
  const runsOf = async (workflowId: string): Promise<RunSummary[]> => chat.client.runsOf(member.token, workflowId)

  await receive([{ from: '15551110007', name: 'Buyer', text: 'What is your PRICING for teams?' }])
  const [run] = await waitFor(async () => { const runs = await runsOf(keywordId); return runs.length > 0 ? runs : undefined }, { what: 'keyword run' })
  const detail = (await request({ method: 'GET', url: `/api/automation/runs/${run.id}`, token: member.token })).json()
  const conversation = await conversationOf('15551110007')
  t.match(detail.triggerData, {
    phone: '15551110007',
    name: 'Buyer',
    text: 'What is your PRICING for teams?',
    messageId: conversation!.messages[0].id,
    conversationId: conversation!.id,
    accountId: 'default',
    keyword: 'Pricing'
  })
  t.equal((await runsOf(exactId)).length, 0, 'exact match needs the whole text')
  const [event] = await waitFor(async () => { const runs = await runsOf(eventId); return runs.length > 0 ? runs : undefined }, { what: 'event run' })
  const eventRun = (await request({ method: 'GET', url: `/api/automation/runs/${event.id}`, token: member.token })).json()
  t.match(eventRun.triggerData, { phone: '15551110007', text: 'What is your PRICING for teams?', phoneNumberId: DEFAULT_PHONE_NUMBER_ID })

  await receive([{ from: '15551110007', text: 'costly pricingplan' }])
  await receive([{ from: '15551110007', text: ' MENU ' }])
  await waitFor(async () => (await runsOf(exactId)).length === 1 ? true : undefined, { what: 'exact keyword run' })
  t.equal((await runsOf(keywordId)).length, 1, 'keywords match whole words only')

  const duplicate = messagesDelivery(DEFAULT_PHONE_NUMBER_ID, [{ from: '15551110007', text: 'cost?', wamid: newWamid() }])
  await chat.deliver(duplicate)
  await chat.deliver(duplicate)
  await waitFor(async () => (await runsOf(keywordId)).length >= 2 ? true : undefined, { what: 'second keyword run' })
  t.equal((await runsOf(keywordId)).length, 2, 'a duplicate delivery starts nothing twice')
})

t.test('a send_chat node replies through the platform and its result holds wamid and kind text', async (t) => {
  const workflowId = await chat.client.createWorkflow(member.token, {
    name: 'auto reply',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['hours'] },
    nodes: [{ id: 'reply', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Hi {{triggerData.name}}, we open at 9.' } }]
  })
  await receive([{ from: '15551110008', name: 'Early Bird', text: 'opening hours?' }])
  const run = await chat.client.latestRunReaching(member.token, workflowId, ['SUCCESS', 'FAILED'])
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.result.reply, { wamid: /^wamid\./, kind: 'text', to: '15551110008' })
  const sent = fake.sends().find((s) => (s.body as { to: string }).to === '15551110008')
  t.same((sent?.body as { text: unknown }).text, { preview_url: false, body: 'Hi Early Bird, we open at 9.' })
  const conversation = await conversationOf('15551110008')
  t.match(conversation?.messages.at(-1), { content: 'Hi Early Bird, we open at 9.', wamid: run.result.reply.wamid, status: 'sent' })
})

t.test('a sandbox number: a played customer goes the webhook\'s way, and what the number sends is delivered without the platform', async (t) => {
  const tester = await chat.newMember()
  const sandbox = (await request({ method: 'POST', url: '/api/chat/accounts', token: tester.token, payload: { name: 'Sandbox', sandbox: true } })).json()
  const headers = { 'x-account-id': sandbox.id }
  const workflowId = await chat.client.createWorkflow(tester.token, {
    name: 'sandbox reply',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['quote'] },
    nodes: [{ id: 'reply', type: 'send_chat', config: { phone: '{{triggerData.phone}}', text: 'Hi {{triggerData.name}}, 10 EUR.', accountId: '{{triggerData.accountId}}' } }]
  })
  const platformCalls = fake.requests.length
  const play = async (payload: Record<string, unknown>) => request({ method: 'POST', url: `/api/chat/accounts/${sandbox.id}/sandbox/inbound`, token: tester.token, payload })
  const played = await play({ from: '15551110020', name: 'Tess', text: 'a quote please' })
  t.equal(played.statusCode, 202, played.body)
  t.match(played.json(), { wamid: /^wamid\.sandbox-/ })

  const run = await chat.client.latestRunReaching(tester.token, workflowId, ['SUCCESS', 'FAILED'])
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.triggerData, { phone: '15551110020', name: 'Tess', text: 'a quote please', accountId: sandbox.id, keyword: 'quote' })
  const inbox = async () => (await request({ method: 'GET', url: '/api/chat/conversations', token: tester.token, headers })).json() as ConversationBody[]
  const [conversation] = await waitFor(async () => { const list = await inbox(); return list[0]?.messages.length === 2 ? list : undefined }, { what: 'the reply stored' })
  t.match(conversation, { phone: '15551110020', name: 'Tess' })
  t.match(conversation!.messages, [{ content: 'a quote please', wamid: played.json().wamid }, { content: 'Hi Tess, 10 EUR.', wamid: run.result.reply.wamid, status: 'delivered' }])

  const sends = [
    ['text', { to: '15551110020', text: 'Anything else?' }],
    ['media', { to: '15551110020', kind: 'image', link: 'https://example.com/bike.jpg', caption: 'Our bike' }],
    ['interactive', { to: '15551110020', type: 'button', body: 'Pick one', buttons: [{ id: 'red', title: 'Red' }, { id: 'blue', title: 'Blue' }] }]
  ] as const
  for (const [kind, payload] of sends) {
    const res = await request({ method: 'POST', url: `/api/chat/send/${kind}`, token: tester.token, headers, payload })
    t.equal(res.statusCode, 200, `${kind}: ${res.body}`)
  }
  t.same((await inbox())[0]!.messages.slice(2).map((m) => [m.content, m.status]), [['Anything else?', 'delivered'], ['Our bike', 'delivered'], ['Pick one', 'delivered']])

  const tap = await play({ from: '15551110020', interactive: { type: 'button_reply', id: 'red', title: 'Red' } })
  const document = await play({ from: '15551110020', media: { kind: 'document', mimeType: 'application/pdf', filename: 'order.pdf' } })
  t.same([tap.statusCode, document.statusCode], [202, 202])
  // Inbound messages carry the platform's whole-second stamps: found by wamid, not by place.
  const last = await waitFor(async () => {
    const messages = (await inbox())[0]!.messages
    const played = [tap, document].map((res) => messages.find((m) => m.wamid === res.json().wamid))
    return played.every((m) => m !== undefined) ? played : undefined
  }, { what: 'the tap and the document' })
  t.same(last.map((m) => m!.content), ['Red', '[document]'])
  const media = await request({ method: 'GET', url: `/api/chat/messages/${last[1]!.id}/media`, token: tester.token, headers })
  t.equal(media.statusCode, 404)
  t.equal(media.json().message, 'A sandbox number\'s media has no content to download')
  t.equal(fake.requests.length, platformCalls, 'the platform was never called')

  const unstorable = await play({ from: '15551110020', text: 'a\u0000b\ud800' })
  t.equal(unstorable.statusCode, 202, 'what Postgres cannot hold is no reason to refuse a played customer')
  const kept = await waitFor(async () => (await inbox())[0]!.messages.find((m) => m.wamid === unstorable.json().wamid), { what: 'the unstorable text' })
  t.equal(kept.content, 'a\ufffdb\ufffd', 'it becomes U+FFFD, as in the webhook\'s deliveries')

  // The platform's webhook never reaches a sandbox number, whatever a delivery names.
  await chat.deliver(messagesDelivery(sandbox.phoneNumberId, [{ from: '15551110020', name: 'Forger', text: 'a forged quote' }]))
  t.equal(await pendingDeliveries(), 0)
  t.equal((await inbox())[0]!.messages.length, 8, 'the forged message was ignored')
  t.equal((await chat.client.runsOf(tester.token, workflowId)).length, 1, 'and started nothing')

  t.equal((await play({ from: '15551110020', text: 'STOP' })).statusCode, 202)
  // The confirmation is stored (claimed) before it is sent, then takes the send's status: wait for that.
  const confirmation = await waitFor(async () => (await inbox())[0]!.messages.find((m) => m.content.startsWith('You have been unsubscribed') && m.status !== 'sent'), { what: 'the opt-out confirmation sent' })
  t.equal(confirmation.status, 'delivered', 'a consent keyword answers on a sandbox number too, delivered')
  t.equal(fake.requests.length, platformCalls, 'without the platform')
})
