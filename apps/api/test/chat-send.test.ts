import t from 'tap'
import { newWamid } from '@switchboard/testing/fake-chat-platform'
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
