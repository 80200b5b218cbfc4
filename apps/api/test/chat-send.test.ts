import t from 'tap'
import { inboundContacts, inboundContext, inboundLocation, inboundReaction, newWamid } from '@switchboard/testing/fake-chat-platform'
import { buildTestApp } from './helper.ts'
import { buildChatTestApp, DEFAULT_PHONE_NUMBER_ID } from './chat-helper.ts'

const chat = await buildChatTestApp(t, { worker: true })
const { request, fake, receive, adminToken, scrape } = chat
const member = await chat.newMember()

/** A customer who wrote a minute ago, so that free text is inside the window. */
async function customerInWindow (): Promise<string> {
  const phone = `1650555${Math.floor(1000 + Math.random() * 8999)}`
  await receive([{ from: phone, name: 'Customer', text: 'hello there' }])
  return phone
}

const lastSend = () => fake.sends().at(-1)

t.test('send text: the exact platform request, the platform body passed through, the message stored', async (t) => {
  const phone = await customerInWindow()
  const res = await request({
    method: 'POST',
    url: '/api/chat/send/text',
    token: member.token,
    payload: { to: phone, text: 'Your order shipped', agentId: 'agent-7', agentName: 'Ada', unknownField: 'dropped' }
  })
  t.equal(res.statusCode, 200, res.body)
  const sent = lastSend()
  t.equal(sent?.path, `/v21.0/${DEFAULT_PHONE_NUMBER_ID}/messages`)
  t.equal(sent?.headers.authorization, 'Bearer fake-platform-token')
  t.same(sent?.body, {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: phone,
    type: 'text',
    text: { preview_url: false, body: 'Your order shipped' }
  })
  const body = res.json()
  t.same(Object.keys(body).sort(), ['contacts', 'messages', 'messaging_product'])
  t.same(body.contacts, [{ input: phone, wa_id: phone }])
  t.match(body.messages[0].id, /^wamid\./)

  const list = await request({ method: 'GET', url: '/api/chat/conversations', token: member.token })
  const conversation = list.json().find((c: { phone: string }) => c.phone === phone)
  t.equal(conversation.lastMessage, 'Your order shipped')
  t.match(conversation.messages.at(-1), {
    direction: 'outbound', status: 'sent', content: 'Your order shipped', wamid: body.messages[0].id, agentId: 'agent-7', agentName: 'Ada', type: 'text'
  })
})

t.test('text Postgres cannot hold is sent as given and stored with U+FFFD, so the message still shows in the inbox', async (t) => {
  const phone = await customerInWindow()
  const text = 'nul\u0000 and half an emoji \ud83d'
  const res = await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: phone, text, agentName: 'A\u0000da' } })
  t.equal(res.statusCode, 200, res.body)
  t.equal((lastSend()?.body as { text: { body: string } }).text.body, text)
  const template = await request({ method: 'POST', url: '/api/chat/send/template', token: member.token, payload: { to: phone, templateName: 'hello_world', templateContent: { footer: 'x\u0000' } } })
  t.equal(template.statusCode, 200, template.body)

  const list = await request({ method: 'GET', url: '/api/chat/conversations', token: member.token })
  const conversation = list.json().find((c: { phone: string }) => c.phone === phone)
  t.match(conversation.messages.slice(-2), [
    { direction: 'outbound', content: 'nul\ufffd and half an emoji \ufffd', agentName: 'A\ufffdda' },
    { direction: 'outbound', templateContent: { footer: 'x\ufffd', templateName: 'hello_world' } }
  ])
})

t.test('send text as a quoted reply: our message id becomes the platform wamid in context', async (t) => {
  const phone = `1650556${Math.floor(1000 + Math.random() * 8999)}`
  const wamid = newWamid()
  await receive([{ from: phone, text: 'which colour?', wamid }])
  const list = await request({ method: 'GET', url: '/api/chat/conversations', token: member.token })
  const inbound = list.json().find((c: { phone: string }) => c.phone === phone).messages[0]

  const byId = await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: phone, text: 'Blue', replyToId: inbound.id } })
  t.equal(byId.statusCode, 200)
  t.same(lastSend()?.body, { messaging_product: 'whatsapp', recipient_type: 'individual', to: phone, type: 'text', text: { preview_url: false, body: 'Blue' }, context: { message_id: wamid } })

  const byWamid = await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: `+${phone}`, text: 'Or red', replyToId: wamid } })
  t.equal(byWamid.statusCode, 200)
  t.same((lastSend()?.body as { context: unknown, to: string }).context, { message_id: wamid })
  t.equal((lastSend()?.body as { to: string }).to, phone, 'a leading plus is dropped')
})

t.test('send template: the exact platform request, components as given, content stored', async (t) => {
  const phone = '16505550199'
  const components = [{ type: 'body', parameters: [{ type: 'text', text: 'Mark' }, { type: 'text', text: 'A-42' }] }]
  const res = await request({
    method: 'POST',
    url: '/api/chat/send/template',
    token: member.token,
    payload: { to: phone, templateName: 'order_update', components, templateContent: { body: 'Good news Mark! Order A-42 has shipped.', footer: 'Reply STOP' } }
  })
  t.equal(res.statusCode, 200, res.body)
  t.same(lastSend()?.body, {
    messaging_product: 'whatsapp',
    to: phone,
    type: 'template',
    template: { name: 'order_update', language: { code: 'en_US' }, components }
  })
  t.match(res.json(), { messaging_product: 'whatsapp', messages: [{ id: /^wamid\./ }] })

  const arabic = await request({
    method: 'POST',
    url: '/api/chat/send/template',
    token: member.token,
    payload: { to: phone, templateName: 'order_update', lang: 'ar', components }
  })
  t.equal(arabic.statusCode, 200)
  t.same((lastSend()?.body as { template: { language: unknown } }).template.language, { code: 'ar' })

  const list = await request({ method: 'GET', url: '/api/chat/conversations', token: member.token })
  const conversation = list.json().find((c: { phone: string }) => c.phone === phone)
  t.match(conversation.messages[0], {
    direction: 'outbound',
    type: 'template',
    content: 'Good news Mark! Order A-42 has shipped.',
    templateContent: { body: 'Good news Mark! Order A-42 has shipped.', footer: 'Reply STOP', templateName: 'order_update', lang: 'en_US' }
  })
  t.equal(conversation.messages[1].content, '[template] order_update')
})

t.test('the 24-hour window refuses free text and accepts a template', async (t) => {
  const stale = '16505550777'
  await receive([{ from: stale, text: 'old message', timestamp: Math.floor(Date.now() / 1000) - 25 * 3600 }])
  const before = fake.sends().length
  const text = await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: stale, text: 'hi' } })
  t.equal(text.statusCode, 400)
  t.same(text.json(), { statusCode: 400, code: 'OUTSIDE_WINDOW', error: 'Outside the 24-hour window: send a template', message: 'Outside the 24-hour window: send a template' })
  const never = await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: '16505550778', text: 'hi' } })
  t.equal(never.statusCode, 400, 'a number that never wrote is outside the window too')
  t.equal(fake.sends().length, before, 'the platform was not called')

  const template = await request({ method: 'POST', url: '/api/chat/send/template', token: member.token, payload: { to: stale, templateName: 'hello_world' } })
  t.equal(template.statusCode, 200)
  t.same(lastSend()?.body, { messaging_product: 'whatsapp', to: stale, type: 'template', template: { name: 'hello_world', language: { code: 'en_US' } } })
})

t.test('platform errors answer 500 with our message for the code and the platform details', async (t) => {
  const phone = await customerInWindow()
  const cases = [
    {
      name: 'unknown template',
      url: '/api/chat/send/template',
      payload: { to: phone, templateName: 'no_such_template' },
      message: 'Template name does not exist',
      code: 132001,
      subcode: 2388040
    },
    {
      name: 'wrong language',
      url: '/api/chat/send/template',
      payload: { to: phone, templateName: 'welcome', lang: 'en_US', components: [{ type: 'body', parameters: [{ type: 'text', text: 'x' }] }] },
      message: 'Template name does not exist',
      code: 132001,
      subcode: 2388040
    },
    {
      name: 'parameter count',
      url: '/api/chat/send/template',
      payload: { to: phone, templateName: 'order_update', components: [{ type: 'body', parameters: [{ type: 'text', text: 'only one' }] }] },
      message: 'Number of parameters mismatch',
      code: 132000,
      subcode: 2388043
    }
  ]
  for (const c of cases) {
    const res = await request({ method: 'POST', url: c.url, token: member.token, payload: c.payload })
    t.equal(res.statusCode, 500, c.name)
    const body = res.json()
    t.match(body, { statusCode: 500, code: 'CHAT_PLATFORM_ERROR', error: c.message, message: c.message }, c.name)
    t.match(body.details, { code: c.code, subcode: c.subcode, fbtraceId: String, platformMessage: /^\(#13200/ }, c.name)
  }

  fake.options.allowedRecipients = ['16505550001']
  const notAllowed = await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: phone, text: 'hi' } })
  fake.options.allowedRecipients = undefined
  t.equal(notAllowed.statusCode, 500)
  t.match(notAllowed.json(), { message: 'Recipient phone number not in allowed list', error: 'Recipient phone number not in allowed list', details: { code: 131030, subcode: null, platformMessage: '(#131030) Recipient phone number not in allowed list' } })

  fake.options.messagesPerSecond = 1
  const statuses = []
  for (let i = 0; i < 3; i++) {
    statuses.push(await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: phone, text: `burst ${i}` } }))
  }
  fake.options.messagesPerSecond = undefined
  const limited = statuses.find((res) => res.statusCode !== 200)
  t.equal(limited?.statusCode, 500, 'throughput limit')
  t.match(limited?.json(), { message: '(#130429) Rate limit hit', details: { code: 130429 } }, 'other codes keep the platform message')
})

t.test('a wrong platform token answers 500 Invalid OAuth access token', async (t) => {
  const phone = await customerInWindow()
  fake.options.accessTokens = ['rotated-token']
  const res = await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: phone, text: 'hi' } })
  fake.options.accessTokens = ['fake-platform-token']
  t.equal(res.statusCode, 500)
  t.match(res.json(), {
    statusCode: 500,
    code: 'CHAT_PLATFORM_ERROR',
    error: 'Invalid OAuth access token',
    message: 'Invalid OAuth access token',
    details: { code: 190, fbtraceId: String, platformMessage: 'Invalid OAuth access token - Cannot parse access token' }
  })
})

t.test('bad send bodies are 400 with the field named', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['/api/chat/send/text', { text: 'hi' }, 'to is required'],
    ['/api/chat/send/text', { to: '16505550100' }, 'text is required'],
    ['/api/chat/send/text', { to: 'not a phone', text: 'hi' }, 'to must be a phone number in international format'],
    ['/api/chat/send/text', { to: '16505550100', text: 'x'.repeat(4097) }, 'text must be 1 to 4096 characters'],
    ['/api/chat/send/template', { to: '16505550100' }, 'templateName is required'],
    ['/api/chat/send/template', { to: '16505550100', templateName: 'hello_world', lang: 'english' }, 'lang must be a language code such as en_US or ar']
  ]
  for (const [url, payload, message] of cases) {
    const res = await request({ method: 'POST', url, token: member.token, payload })
    t.equal(res.statusCode, 400, message)
    t.equal(res.json().message, message)
  }
  const unauthenticated = await request({ method: 'POST', url: '/api/chat/send/text', payload: { to: '16505550100', text: 'hi' } })
  t.equal(unauthenticated.statusCode, 401)
})

t.test('an unreachable platform answers 502 Chat platform unavailable', async (t) => {
  const offline = await buildTestApp(t, {
    CHAT_API_URL: 'http://127.0.0.1:9/v21.0',
    CHAT_ACCESS_TOKEN: 'token',
    CHAT_PHONE_NUMBER_ID: '1',
    CHAT_BUSINESS_ACCOUNT_ID: '2'
  })
  for (const [method, url, payload] of [['POST', '/api/chat/send/template', { to: '16505550100', templateName: 'hello_world' }], ['GET', '/api/chat/templates', undefined]] as const) {
    const res = await offline.request({ method, url, token: offline.adminToken, payload })
    t.equal(res.statusCode, 502, url)
    t.same(res.json(), { statusCode: 502, code: 'CHAT_PLATFORM_UNAVAILABLE', error: 'Chat platform unavailable', message: 'Chat platform unavailable' })
  }
})

t.test('the admin uses the default account like everyone without one', async (t) => {
  const res = await request({ method: 'POST', url: '/api/chat/send/template', token: adminToken, payload: { to: '16505550123', templateName: 'hello_world' } })
  t.equal(res.statusCode, 200)
  t.equal(lastSend()?.path, `/v21.0/${DEFAULT_PHONE_NUMBER_ID}/messages`)
})

t.test('/metrics counts sends by outcome and platform error code, and accepted inbound deliveries', async (t) => {
  const sample = async (series: string): Promise<number> => {
    const text = await scrape()
    const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `))
    return line === undefined ? 0 : Number(line.slice(series.length + 1))
  }
  const sent = 'switchboard_chat_sends_total{outcome="sent",error_code="none"}'
  const rejected = 'switchboard_chat_sends_total{outcome="rejected",error_code="131030"}'
  const inbound = 'switchboard_chat_inbound_deliveries_total'
  const before = { sent: await sample(sent), rejected: await sample(rejected), inbound: await sample(inbound) }

  const phone = await customerInWindow()
  t.equal((await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: phone, text: 'counted' } })).statusCode, 200)
  fake.options.allowedRecipients = ['16505550001']
  t.equal((await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: phone, text: 'refused' } })).statusCode, 500)
  fake.options.allowedRecipients = undefined

  t.equal(await sample(sent), before.sent + 1)
  t.equal(await sample(rejected), before.rejected + 1)
  t.equal(await sample(inbound), before.inbound + 1, 'the customer\'s message')
})

/* Message kinds (README, Message kinds): locations, contact cards, reactions, quoted replies, read receipts with typing. */

interface ListedMessage {
  id: string
  wamid: string | null
  type: string
  content: string
  direction: string
  replyToId: string | null
  replyTo: { id: string, content: string, type: string, direction: string } | null
  location: Record<string, unknown> | null
  contacts: Array<Record<string, unknown>> | null
  reaction: { messageId: string | null, wamid: string, emoji: string } | null
  reactions: { customer?: string, business?: string } | null
}

const conversationOf = async (phone: string, token = member.token, headers: Record<string, string> = {}): Promise<{ id: string, messages: ListedMessage[] }> =>
  (await request({ method: 'GET', url: '/api/chat/conversations', token, headers })).json().find((c: { phone: string }) => c.phone === phone)
const messagesOf = async (conversationId: string): Promise<ListedMessage[]> =>
  (await request({ method: 'GET', url: `/api/chat/conversations/${conversationId}/messages`, token: member.token })).json()

t.test('inbound locations, contact cards and quotes are kept; a list reads each quoted message with the quote', async (t) => {
  const phone = `1650557${Math.floor(1000 + Math.random() * 8999)}`
  const asked = newWamid()
  await receive([{ from: phone, text: 'where are you?', wamid: asked }])
  const place = { latitude: 52.52, longitude: 13.405, name: 'Brandenburg Gate', address: 'Pariser Platz, Berlin', url: 'https://example.com/gate' }
  const card = { name: { formatted_name: 'Ada Lovelace', first_name: 'Ada' }, phones: [{ phone: '+44 20 7946 0000', wa_id: '442079460000', type: 'WORK' }], emails: [{ email: 'ada@example.com', type: 'WORK' }], org: { company: 'Engines' }, ignored: 'x' }
  await receive([
    { from: phone, message: inboundLocation(place) },
    { from: phone, message: inboundContacts([card]) },
    { from: phone, message: inboundContext(asked, 'this one') },
    { from: phone, message: inboundContext(newWamid(), 'a message we never saw') }
  ])
  const conversation = await conversationOf(phone)
  // One delivery's messages share their second: found by what they are, not by place.
  const find = (test: (m: ListedMessage) => boolean): ListedMessage => conversation.messages.find(test)!
  const question = find((m) => m.content === 'where are you?')
  const location = find((m) => m.type === 'location')
  const contacts = find((m) => m.type === 'contacts')
  const quote = find((m) => m.content === 'this one')
  const unknownQuote = find((m) => m.content === 'a message we never saw')
  t.match(location, { type: 'location', content: '[location] Brandenburg Gate', location: place, contacts: null, reaction: null })
  t.match(contacts, { type: 'contacts', content: '[contacts] Ada Lovelace' })
  t.same(contacts.contacts, [{ name: { formatted_name: 'Ada Lovelace', first_name: 'Ada' }, org: { company: 'Engines' }, phones: [card.phones[0]], emails: [card.emails[0]] }], 'the platform\'s fields only')
  t.equal(quote.replyToId, question.id, 'a quoted message of the conversation is stored as ours')
  t.same(quote.replyTo, { id: question.id, content: 'where are you?', type: 'text', direction: 'inbound' })
  t.match(unknownQuote, { replyToId: /^wamid\./, replyTo: null }, 'an unknown quote keeps its wamid')
  const page = await messagesOf(conversation.id)
  t.same(page.find((m) => m.id === quote.id)?.replyTo, quote.replyTo, 'the messages page reads the quote too')
})

t.test('inbound kinds are bounded: a huge contacts array and huge fields are cut, never refused', async (t) => {
  const phone = `1650558${Math.floor(1000 + Math.random() * 8999)}`
  const cards = Array.from({ length: 100 }, (_, i) => ({ name: { formatted_name: `Card ${i} ${'x'.repeat(1000)}` }, phones: Array.from({ length: 30 }, () => ({ phone: '1' })) }))
  await receive([
    { from: phone, message: inboundContacts(cards) },
    { from: phone, message: inboundLocation({ latitude: 91, longitude: 0 }) },
    { from: phone, message: inboundLocation({ latitude: 1, longitude: 2, name: 'nul\u0000 and half an emoji \ud83d' }) }
  ])
  const { messages } = await conversationOf(phone)
  t.match(messages.find((m) => m.location?.latitude === 1), { location: { name: 'nul\ufffd and half an emoji \ufffd' } }, 'what jsonb cannot hold is stored as U+FFFD')
  const contacts = messages.find((m) => m.type === 'contacts')!
  const location = messages.find((m) => m.type === 'location' && m.location === null)!
  t.equal(contacts.contacts?.length, 20)
  t.equal((contacts.contacts?.[0].name as { formatted_name: string }).formatted_name.length, 256)
  t.equal((contacts.contacts?.[0].phones as unknown[]).length, 10)
  t.match(location, { type: 'location', location: null, content: '[location]' }, 'a place off the globe is not kept')
})

t.test('reactions: the customer\'s is a message of type reaction and sits on its target; another number\'s message is never touched', async (t) => {
  const phone = await customerInWindow()
  const [hello] = (await conversationOf(phone)).messages
  const reacted = newWamid()
  await receive([{ from: phone, message: inboundReaction(hello.wamid!, '👍'), wamid: reacted }])
  let messages = (await conversationOf(phone)).messages
  const byWamid = (wamid: string): ListedMessage | undefined => messages.find((m) => m.wamid === wamid)
  t.match(byWamid(reacted), { type: 'reaction', direction: 'inbound', content: '👍', reaction: { messageId: hello.id, wamid: hello.wamid, emoji: '👍' } })
  t.same(byWamid(hello.wamid!)?.reactions, { customer: '👍' })

  const removed = newWamid()
  await receive([{ from: phone, message: inboundReaction(hello.wamid!, ''), wamid: removed }])
  messages = (await conversationOf(phone)).messages
  t.match(byWamid(removed), { type: 'reaction', reaction: { messageId: hello.id, emoji: '' } })
  t.equal(byWamid(hello.wamid!)?.reactions, null, 'an empty emoji removes the reaction')

  // Another user's number holds a message from the same customer: a reaction on the default number naming its wamid touches nothing.
  const other = await chat.newMember()
  const otherNumber = '106540352249999'
  await chat.linkAccount(other.token, otherNumber)
  const elsewhere = newWamid()
  await receive([{ from: phone, text: 'on the other number', wamid: elsewhere }], otherNumber)
  const foreign = newWamid()
  await receive([{ from: phone, message: inboundReaction(elsewhere, '❤️'), wamid: foreign }])
  messages = (await conversationOf(phone)).messages
  t.match(byWamid(foreign), { type: 'reaction', reaction: { messageId: null, wamid: elsewhere, emoji: '❤️' } })
  const theirs = (await conversationOf(phone, other.token)).messages
  t.match(theirs, [{ wamid: elsewhere, reactions: null }])
})

t.test('POST /api/chat/messages/:id/reaction sends the platform\'s reaction and keeps it on the message', async (t) => {
  const phone = await customerInWindow()
  const [hello] = (await conversationOf(phone)).messages
  const res = await request({ method: 'POST', url: `/api/chat/messages/${hello.id}/reaction`, token: member.token, payload: { emoji: '🎉' } })
  t.equal(res.statusCode, 200, res.body)
  t.match(res.json(), { messages: [{ id: /^wamid\./ }] })
  t.same(lastSend()?.body, { messaging_product: 'whatsapp', recipient_type: 'individual', to: phone, type: 'reaction', reaction: { message_id: hello.wamid, emoji: '🎉' } })
  const messages = (await conversationOf(phone)).messages
  t.same(messages[0].reactions, { business: '🎉' })
  t.equal(messages.length, 1, 'the reaction is no message of the thread')

  t.equal((await request({ method: 'POST', url: `/api/chat/messages/${hello.id}/reaction`, token: member.token, payload: { emoji: '' } })).statusCode, 200)
  t.same((lastSend()?.body as { reaction: unknown }).reaction, { message_id: hello.wamid, emoji: '' })
  t.equal((await conversationOf(phone)).messages[0].reactions, null, 'removed')

  const sends = fake.sends().length
  for (const [emoji, why] of [['a', 'a letter'], ['👍👍', 'two emoji'], ['👍'.repeat(100), 'a long string']] as const) {
    const refused = await request({ method: 'POST', url: `/api/chat/messages/${hello.id}/reaction`, token: member.token, payload: { emoji } })
    t.equal(refused.statusCode, 400, why)
    t.equal(refused.json().message, 'emoji must be one emoji, or "" to remove the reaction', why)
  }
  const huge = await request({ method: 'POST', url: `/api/chat/messages/${hello.id}/reaction`, token: member.token, payload: { emoji: '👍'.repeat(512 * 1024) } })
  t.match(huge.json(), { statusCode: 413, message: 'Request body is too large' }, 'a 2 MiB emoji is beyond the body limit')
  const other = await chat.newMember()
  await chat.linkAccount(other.token, '106540352248888')
  const foreign = await request({ method: 'POST', url: `/api/chat/messages/${hello.id}/reaction`, token: other.token, payload: { emoji: '👍' } })
  t.equal(foreign.statusCode, 404, 'a message of another account')
  t.equal(foreign.json().message, 'Message not found')
  t.equal(fake.sends().length, sends, 'nothing refused reached the platform')
})

t.test('send location and contacts: the platform\'s format, stored with their details; bounds are 400s', async (t) => {
  const phone = await customerInWindow()
  const location = await request({ method: 'POST', url: '/api/chat/send/location', token: member.token, payload: { to: phone, latitude: -33.8568, longitude: 151.2153, name: 'Opera House', address: 'Bennelong Point' } })
  t.equal(location.statusCode, 200, location.body)
  t.same(lastSend()?.body, { messaging_product: 'whatsapp', recipient_type: 'individual', to: phone, type: 'location', location: { latitude: -33.8568, longitude: 151.2153, name: 'Opera House', address: 'Bennelong Point' } })
  const card = { name: { formatted_name: 'Support', first_name: 'Support' }, phones: [{ phone: '+1 650 555 0100', type: 'WORK' }], urls: [{ url: 'https://example.com', type: 'WORK' }] }
  const contacts = await request({ method: 'POST', url: '/api/chat/send/contacts', token: member.token, payload: { to: phone, contacts: [card] } })
  t.equal(contacts.statusCode, 200, contacts.body)
  t.same(lastSend()?.body, { messaging_product: 'whatsapp', recipient_type: 'individual', to: phone, type: 'contacts', contacts: [card] })
  const [, sentLocation, sentContacts] = (await conversationOf(phone)).messages
  t.match(sentLocation, { direction: 'outbound', type: 'location', content: '[location] Opera House', location: { latitude: -33.8568, longitude: 151.2153, name: 'Opera House' } })
  t.match(sentContacts, { direction: 'outbound', type: 'contacts', content: '[contacts] Support', contacts: [card] })

  const sends = fake.sends().length
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['/api/chat/send/location', { to: phone, latitude: 90.5, longitude: 0 }, 'latitude must be a number from -90 to 90'],
    ['/api/chat/send/location', { to: phone, latitude: 0, longitude: -181 }, 'longitude must be a number from -180 to 180'],
    ['/api/chat/send/location', { to: phone, latitude: 0, longitude: 0, name: 'x'.repeat(1001) }, 'name must be 1 to 1000 characters'],
    ['/api/chat/send/contacts', { to: phone, contacts: [] }, 'contacts must hold 1 to 20 cards'],
    ['/api/chat/send/contacts', { to: phone, contacts: Array.from({ length: 21 }, () => card) }, 'contacts must hold 1 to 20 cards'],
    ['/api/chat/send/contacts', { to: phone, contacts: [{ phones: [] }] }, 'contacts[0].name is required'],
    ['/api/chat/send/contacts', { to: phone, contacts: [{ name: { first_name: 'A' } }] }, 'contacts[0].name.formatted_name is required'],
    ['/api/chat/send/contacts', { to: phone, contacts: [{ ...card, phones: Array.from({ length: 11 }, () => card.phones[0]) }] }, 'contacts[0].phones must NOT have more than 10 items'],
    ['/api/chat/send/contacts', { to: phone, contacts: [{ name: { formatted_name: 'x'.repeat(257) } }] }, 'contacts[0].name.formatted_name must NOT have more than 256 characters']
  ]
  for (const [url, payload, message] of cases) {
    const res = await request({ method: 'POST', url, token: member.token, payload })
    t.equal(res.statusCode, 400, message)
    t.match(res.json().message, message, message)
  }
  t.equal(fake.sends().length, sends, 'nothing refused reached the platform')
})

t.test('POST /api/chat/conversations/:id/typing marks the customer\'s latest message read with the typing indicator', async (t) => {
  const phone = `1650559${Math.floor(1000 + Math.random() * 8999)}`
  const latest = newWamid()
  await receive([{ from: phone, text: 'hello', timestamp: Math.floor(Date.now() / 1000) - 60 }])
  await receive([{ from: phone, text: 'are you there?', wamid: latest }])
  const conversation = await conversationOf(phone)
  const res = await request({ method: 'POST', url: `/api/chat/conversations/${conversation.id}/typing`, token: member.token })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), { wamid: latest })
  t.same(lastSend()?.body, { messaging_product: 'whatsapp', status: 'read', message_id: latest, typing_indicator: { type: 'text' } })

  const other = await chat.newMember()
  await chat.linkAccount(other.token, '106540352247777')
  t.equal((await request({ method: 'POST', url: `/api/chat/conversations/${conversation.id}/typing`, token: other.token })).statusCode, 404, 'another account\'s conversation')

  // A conversation the business started: the customer never wrote.
  const silent = '16505550999'
  t.equal((await request({ method: 'POST', url: '/api/chat/send/template', token: member.token, payload: { to: silent, templateName: 'hello_world' } })).statusCode, 200)
  const never = await request({ method: 'POST', url: `/api/chat/conversations/${(await conversationOf(silent)).id}/typing`, token: member.token })
  t.equal(never.statusCode, 409)
  t.match(never.json(), { code: 'NO_CUSTOMER_MESSAGE', message: 'The customer has not written in this conversation: there is no message to mark read' })
})

t.test('the fake platform refuses malformed kinds as the platform does: 400, code 100, what is wrong in error_data.details', async (t) => {
  const post = async (body: Record<string, unknown>): Promise<{ status: number, body: any }> => {
    const res = await fetch(`${fake.url}/${DEFAULT_PHONE_NUMBER_ID}/messages`, {
      method: 'POST', headers: { authorization: 'Bearer fake-platform-token', 'content-type': 'application/json' }, body: JSON.stringify(body)
    })
    return { status: res.status, body: await res.json() }
  }
  const message = { messaging_product: 'whatsapp', recipient_type: 'individual', to: '16505550100' }
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ...message, type: 'location', location: { latitude: 'north', longitude: 0 } }, "Param location['latitude'] must be a number from -90 to 90"],
    [{ ...message, type: 'contacts', contacts: [{ phones: [] }] }, "Param contacts[0]['name']['formatted_name'] is required"],
    [{ ...message, type: 'reaction', reaction: { message_id: 'wamid.x', emoji: 'ok' } }, "Param reaction['emoji'] must be an emoji or empty"],
    [{ messaging_product: 'whatsapp', status: 'read', message_id: 'nope' }, 'Param message_id must be the id of a received message'],
    [{ messaging_product: 'whatsapp', status: 'read', message_id: 'wamid.x', typing_indicator: { type: 'audio' } }, "Param typing_indicator['type'] must be text"]
  ]
  for (const [body, details] of cases) {
    const res = await post(body)
    t.equal(res.status, 400, details)
    t.match(res.body, { error: { message: '(#100) Invalid parameter', type: 'OAuthException', code: 100, error_data: { messaging_product: 'whatsapp', details }, fbtrace_id: String } }, details)
  }
  t.same((await post({ messaging_product: 'whatsapp', status: 'read', message_id: 'wamid.x', typing_indicator: { type: 'text' } })).body, { success: true })
  t.match((await post({ ...message, type: 'location', location: { latitude: '37.44', longitude: '-122.16' } })).body, { messages: [{ id: /^wamid\./ }] }, 'degrees as strings, as the platform\'s reference writes them')
})

t.test('a customer known by username (phone withheld): reactions and places go to their platform user id as recipient', async (t) => {
  const userId = `US.kinds${Math.floor(Math.random() * 1e9)}`
  const wamid = newWamid()
  await receive([{ from: '0', withholdPhone: true, userId, text: 'hi, no phone here', wamid }])
  const conversation = (await request({ method: 'GET', url: '/api/chat/conversations', token: member.token })).json().find((c: { platformUserId: string | null }) => c.platformUserId === userId)
  const [hello] = conversation.messages as ListedMessage[]
  t.equal((await request({ method: 'POST', url: `/api/chat/messages/${hello.id}/reaction`, token: member.token, payload: { emoji: '👋' } })).statusCode, 200)
  t.same(lastSend()?.body, { messaging_product: 'whatsapp', recipient_type: 'individual', recipient: userId, type: 'reaction', reaction: { message_id: wamid, emoji: '👋' } })
  const place = await request({ method: 'POST', url: '/api/chat/send/location', token: member.token, payload: { to: userId, latitude: 1.5, longitude: 2.5 } })
  t.equal(place.statusCode, 200, place.body)
  t.same(lastSend()?.body, { messaging_product: 'whatsapp', recipient_type: 'individual', recipient: userId, type: 'location', location: { latitude: 1.5, longitude: 2.5 } })
  const typing = await request({ method: 'POST', url: `/api/chat/conversations/${conversation.id}/typing`, token: member.token })
  t.same(typing.json(), { wamid })
})
