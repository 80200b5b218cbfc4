import { request as httpRequest } from 'node:http'
import t from 'tap'
import { deliver, fakeChatEnv, inboundQuickReply, messagesDelivery, newWamid, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { fakeModelEnv, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/**
 * Contacts and consent end to end (README, Contacts and consent): real api and worker processes,
 * the fake chat platform and the fake model provider (so that an assistant turn would happen if
 * anything let one). Each test uses customers of its own.
 */

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'e2e-contacts-app-secret'
const OPT_OUT_CONFIRMATION = 'You have been unsubscribed and will receive no more messages. Reply START to subscribe again.'
const OPT_IN_CONFIRMATION = 'You are subscribed again.'
const OPTED_OUT_MESSAGE = 'The contact opted out of messages (STOP): no message can be sent'

const platform = await startFakeChatPlatform()
const provider = await startFakeModelProvider()
t.teardown(async () => { await Promise.all([platform.close(), provider.close()]) })
const stack = await startStack(t, {
  env: {
    ...fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }),
    ...fakeModelEnv(provider)
  }
})
const token = await stack.adminToken()
const { client } = stack
// A turn per message at once, as these tests time their messages against the turns (README, The assistant: debounceMs).
await stack.call('PUT', '/api/chat/accounts/default/assistant', { token, body: { instructions: '', debounceMs: 0 } })

let customers = 0
const newCustomer = (): string => `1555200${String(++customers).padStart(4, '0')}`
const nowSeconds = (): number => Math.floor(Date.now() / 1000)

/** A customer's message; `secondsAgo` stamps it earlier, so that a later one is later by the platform's whole seconds. */
async function say (phone: string, text: string, secondsAgo = 0): Promise<string> {
  const wamid = newWamid()
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: phone, name: 'Mia', text, wamid, timestamp: nowSeconds() - secondsAgo }]), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
  return wamid
}

interface Contact { id: string, phone: string, name: string | null, labels: string[], attributes: Record<string, string>, optedOut: boolean, consentChangedAt: string | null, consentSource: string | null }
interface Message { id: string, content: string, direction: string, status: string | null, agentName: string | null, wamid: string | null }

const sendsTo = (phone: string): Array<{ text?: { body: string }, type: string }> =>
  platform.sends().map((send) => send.body as { to?: string, type: string, text?: { body: string } }).filter((body) => body.to === phone)

async function contactOf (phone: string): Promise<Contact> {
  return waitFor(async () => {
    const { body } = await stack.call('GET', `/api/chat/contacts?search=${phone}`, { token })
    return (body as Contact[]).find((contact) => contact.phone === phone)
  }, { what: `the contact ${phone}` })
}

async function conversationOf (phone: string): Promise<{ id: string, optedOut: boolean }> {
  return waitFor(async () => {
    const { body } = await stack.call('GET', '/api/chat/conversations?limit=500', { token })
    return (body as Array<{ id: string, phone: string, optedOut: boolean }>).find((c) => c.phone === phone)
  }, { what: `the conversation of ${phone}` })
}

const messagesOf = async (conversationId: string): Promise<Message[]> =>
  (await stack.call('GET', `/api/chat/conversations/${conversationId}/messages`, { token })).body

/** Waits until the conversation holds a message with `content`, the sign that its delivery was processed. */
async function stored (phone: string, content: string): Promise<{ id: string, optedOut: boolean }> {
  const conversation = await conversationOf(phone)
  await waitFor(async () => (await messagesOf(conversation.id)).some((m) => m.content === content) ? true : undefined, { what: `"${content}" stored` })
  return conversation
}

const turnsOf = async (conversationId: string): Promise<Array<{ status: string, outcome: string | null, log: Array<{ event: string, detail?: { reason?: string } }> }>> =>
  (await stack.call('GET', `/api/chat/conversations/${conversationId}/turns`, { token })).body

async function importCsv (csv: string | Uint8Array, headers: Record<string, string> = { 'content-type': 'text/csv' }): Promise<{ status: number, body: any }> {
  const res = await fetch(`${stack.baseUrl}/api/chat/contacts/import`, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...headers }, body: csv as BodyInit })
  const text = await res.text()
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
}

/**
 * An import whose answer may come before its body is all sent (a 413): the answer is read as soon as it comes,
 * and the failure of the writes after it (the server closed the connection) is not the test's.
 */
async function earlyAnswer (headers: Record<string, string>, chunks: Buffer[]): Promise<{ status: number, body: any }> {
  return new Promise((resolve, reject) => {
    let answered = false
    const req = httpRequest(`${stack.baseUrl}/api/chat/contacts/import`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv', ...headers } }, (res) => {
      answered = true
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => {
        req.destroy()
        resolve({ status: res.statusCode!, body: JSON.parse(text) })
      })
    })
    req.on('error', (err) => { if (!answered) reject(err) })
    const next = (): void => {
      const chunk = chunks.shift()
      if (answered || chunk === undefined) return
      if (req.write(chunk)) setImmediate(next)
      else req.once('drain', next)
    }
    req.flushHeaders()
    next()
  })
}

// A KEYWORD workflow on the opt-out word itself, and a listener of every message: consent keywords come before both.
const keywordId = await client.createWorkflow(token, {
  name: 'stop words',
  triggerType: 'KEYWORD',
  triggerConfig: { keywords: ['stop', 'start', 'basta'] },
  nodes: [{ id: 'noop', type: 'set', config: { values: { ok: true } } }]
})
const listenerId = await client.createWorkflow(token, {
  name: 'every message',
  triggerType: 'EVENT',
  triggerConfig: { eventName: 'chat.message.received' },
  nodes: [{ id: 'note', type: 'set', config: { values: { said: '{{triggerData.text}}' } } }]
})
const runsOf = async (workflowId: string): Promise<Array<{ triggerData: Record<string, any> }>> => client.runsOf(token, workflowId, { limit: 500 })

t.test('an inbound message makes its sender a contact named after their profile; staff change it', async (t) => {
  const phone = newCustomer()
  await say(phone, 'hello there')
  const contact = await contactOf(phone)
  t.match(contact, { phone, name: 'Mia', labels: [], attributes: {}, optedOut: false, consentChangedAt: null, consentSource: null })
  const read = await stack.call('GET', `/api/chat/contacts/${contact.id}`, { token })
  t.equal(read.status, 200)
  t.equal(read.body.id, contact.id)

  const patched = await stack.call('PATCH', `/api/chat/contacts/${contact.id}`, {
    token,
    body: { name: 'Mia Rossi', labels: ['vip', 'retail', 'vip'], attributes: { city: 'Rome', 'plan.tier': 'gold' } }
  })
  t.equal(patched.status, 200)
  t.match(patched.body, { name: 'Mia Rossi', labels: ['vip', 'retail'], attributes: { city: 'Rome', 'plan.tier': 'gold' }, optedOut: false })
  await say(phone, 'again')
  await stored(phone, 'again')
  t.equal((await contactOf(phone)).name, 'Mia Rossi', 'a name staff gave is kept when the customer writes again')

  const replaced = await stack.call('PATCH', `/api/chat/contacts/${contact.id}`, { token, body: { attributes: { city: 'Milan' } } })
  t.same(replaced.body.attributes, { city: 'Milan' }, 'attributes are replaced whole')

  const optOut = await stack.call('PATCH', `/api/chat/contacts/${contact.id}`, { token, body: { optedOut: true } })
  t.match(optOut.body, { optedOut: true, consentSource: 'staff' })
  t.ok(Date.now() - Date.parse(optOut.body.consentChangedAt) < 60_000, 'the time staff opted the contact out')
  const same = await stack.call('PATCH', `/api/chat/contacts/${contact.id}`, { token, body: { optedOut: true, name: null } })
  t.equal(same.body.consentChangedAt, optOut.body.consentChangedAt, 'setting it to what it is changes no consent time')
  t.equal(same.body.name, null)
  t.equal((await conversationOf(phone)).optedOut, true, 'the inbox says the customer opted out')
  const bystander = newCustomer()
  await say(bystander, 'hello')
  await stored(bystander, 'hello')
  t.equal((await conversationOf(bystander)).optedOut, false, 'another customer\'s conversation is not marked')

  for (const [body, what] of [
    [{ labels: Array.from({ length: 51 }, (_, n) => `l${n}`) }, '51 labels'],
    [{ attributes: Object.fromEntries(Array.from({ length: 51 }, (_, n) => [`a${n}`, 'x'])) }, '51 attributes'],
    [{ attributes: { city: 'x'.repeat(1001) } }, 'a value over 1000 characters'],
    [{ attributes: { 'bad name': 'x' } }, 'an attribute name with a space'],
    [{ attributes: { n: 5 } }, 'a value that is not text'],
    [{ name: 'x'.repeat(201) }, 'a name over 200 characters']
  ] as const) {
    const res = await stack.call('PATCH', `/api/chat/contacts/${contact.id}`, { token, body })
    t.equal(res.status, 400, what)
  }
  t.equal((await stack.call('GET', '/api/chat/contacts/nope', { token })).status, 404)
  t.match((await stack.call('PATCH', '/api/chat/contacts/nope', { token, body: { name: 'x' } })).body, { code: 'CONTACT_NOT_FOUND', message: 'Contact not found' })
})

t.test('filters: optedOut, label, search by phone digits or name prefix; paged', async (t) => {
  const res = await importCsv([
    'phone,name,labels,optedOut',
    '+39 320 000 0001,Zeno Alpha,filters;a,false',
    '39320 0000002,zara beta,filters;b,true',
    '393200000003,Omar,filters,no'
  ].join('\n'))
  t.equal(res.status, 200)
  t.match(res.body, { imported: 3, updated: 0, skipped: [] })
  const list = async (query: string): Promise<string[]> => (await stack.call('GET', `/api/chat/contacts?${query}`, { token })).body.map((c: Contact) => c.phone)
  t.same(await list('label=filters'), ['393200000001', '393200000002', '393200000003'], 'ordered by phone')
  t.same(await list('label=filters&optedOut=true'), ['393200000002'])
  t.same(await list('label=filters&optedOut=false'), ['393200000001', '393200000003'])
  t.same(await list('search=za'), ['393200000002'], 'a name prefix, any case')
  t.same(await list('search=z&label=a'), ['393200000001'])
  t.same(await list(`search=${encodeURIComponent('+39 320 000 000')}&label=filters&limit=2`), ['393200000001', '393200000002'])
  t.same(await list(`search=${encodeURIComponent('+39 320 000 000')}&label=filters&limit=2&offset=2`), ['393200000003'])
  t.same(await list('search=%25'), [], 'LIKE\'s wildcards are searched as written')
  t.equal((await stack.call('GET', '/api/chat/contacts?limit=501', { token })).status, 400)
  t.equal((await stack.call('GET', '/api/chat/contacts?optedOut=maybe', { token })).status, 400)
})

t.test('STOP and START: the contact changes and is told so; no event, no KEYWORD run, no assistant turn', async (t) => {
  const phone = newCustomer()
  const modelCalls = provider.requests.length
  const stampedAt = (nowSeconds() - 5) * 1000
  await say(phone, 'STOP', 5)
  await waitFor(async () => sendsTo(phone).length === 1 ? true : undefined, { what: 'the confirmation' })
  t.same(sendsTo(phone)[0], { messaging_product: 'whatsapp', recipient_type: 'individual', to: phone, type: 'text', text: { preview_url: false, body: OPT_OUT_CONFIRMATION } })
  const contact = await contactOf(phone)
  t.match(contact, { optedOut: true, consentSource: 'keyword', name: 'Mia' })
  t.ok(Math.abs(Date.parse(contact.consentChangedAt!) - stampedAt) <= 1000, 'the consent time is the message\'s')
  const conversation = await conversationOf(phone)
  t.equal(conversation.optedOut, true)
  const messages = await messagesOf(conversation.id)
  t.match(messages, [{ direction: 'inbound', content: 'STOP' }, { direction: 'outbound', content: OPT_OUT_CONFIRMATION, agentName: 'Consent', status: 'sent', wamid: /^wamid\./ }])

  await say(phone, '  stop   ALL ', 4)
  await waitFor(async () => sendsTo(phone).length === 2 ? true : undefined, { what: 'the second confirmation' })
  await say(phone, 'ｓｔａｒｔ', 3)
  await waitFor(async () => sendsTo(phone).length === 3 ? true : undefined, { what: 'the opt-in confirmation' })
  t.equal(sendsTo(phone)[2]!.text!.body, OPT_IN_CONFIRMATION)
  t.match(await contactOf(phone), { optedOut: false, consentSource: 'keyword' })

  await say(phone, 'stop please', 2)
  await stored(phone, 'stop please')
  await waitFor(async () => (await runsOf(listenerId)).some((run) => run.triggerData.text === 'stop please') ? true : undefined, { what: 'the listener of an ordinary message' })
  const runs = await waitFor(async () => {
    const all = await runsOf(keywordId)
    return all.some((run) => run.triggerData.text === 'stop please') ? all : undefined
  }, { what: 'the KEYWORD run of an ordinary message' })
  t.notOk((await runsOf(listenerId)).some((run) => ['STOP', '  stop   ALL ', 'ｓｔａｒｔ'].includes(run.triggerData.text)), 'no chat.message.received run for a keyword')
  t.notOk(runs.some((run) => ['STOP', '  stop   ALL ', 'ｓｔａｒｔ'].includes(run.triggerData.text)), 'no KEYWORD run for a consent keyword; a message that only contains the word is an ordinary message')
  t.equal((await contactOf(phone)).optedOut, false)
  t.equal((await turnsOf(conversation.id)).length, 0, 'no turn for a keyword; a KEYWORD workflow took the ordinary message')
  t.equal(provider.requests.length, modelCalls, 'the model was never asked')
})

t.test('a tap on a template\'s quick reply button whose payload is STOP opts out', async (t) => {
  const phone = newCustomer()
  const tap = messagesDelivery(PHONE_NUMBER_ID, [{ from: phone, name: 'Mia', message: inboundQuickReply('STOP', 'Stop promotions') }])
  t.equal((await deliver(`${stack.baseUrl}/webhook/chat`, tap, APP_SECRET)).status, 200)
  await waitFor(async () => sendsTo(phone).length === 1 ? true : undefined, { what: 'the confirmation' })
  t.equal(sendsTo(phone)[0]!.text!.body, OPT_OUT_CONFIRMATION)
  t.match(await contactOf(phone), { optedOut: true, consentSource: 'keyword' })
})

t.test('refusals: API sends and workflow nodes to an opted-out contact', async (t) => {
  const phone = newCustomer()
  await say(phone, 'STOP')
  await waitFor(async () => sendsTo(phone).length === 1 ? true : undefined, { what: 'the confirmation' })

  const text = await stack.call('POST', '/api/chat/send/text', { token, body: { to: phone, text: 'Hello?' } })
  t.equal(text.status, 400)
  t.match(text.body, { code: 'CONTACT_OPTED_OUT', message: OPTED_OUT_MESSAGE, details: { consentSource: 'keyword' } })
  const template = await stack.call('POST', '/api/chat/send/template', { token, body: { to: `+${phone}`, templateName: 'hello_world' } })
  t.equal(template.status, 400)
  t.match(template.body, { code: 'CONTACT_OPTED_OUT', message: OPTED_OUT_MESSAGE })
  const media = await stack.call('POST', '/api/chat/send/media', { token, body: { to: phone, kind: 'image', link: 'https://example.com/offer.png' } })
  t.match(media, { status: 400, body: { code: 'CONTACT_OPTED_OUT' } })
  const interactive = await stack.call('POST', '/api/chat/send/interactive', { token, body: { to: phone, type: 'button', body: 'Come back?', buttons: [{ id: 'yes', title: 'Yes' }] } })
  t.match(interactive, { status: 400, body: { code: 'CONTACT_OPTED_OUT' } })

  const run = await client.runWorkflow(token, {
    name: 'nudge',
    triggerType: 'MANUAL',
    nodes: [{ id: 'nudge', type: 'send_chat_template', config: { phone, templateName: 'hello_world' }, retry: { attempts: 3, delayMs: 10 } }]
  })
  t.equal(run.status, 'FAILED')
  t.equal(run.error, OPTED_OUT_MESSAGE, 'the run fails with the reason')
  t.equal(run.logs.filter((line) => /retrying in/.test(line.message)).length, 0, 'a refusal is not retried')
  const reply = await client.runWorkflow(token, {
    name: 'reply',
    triggerType: 'MANUAL',
    nodes: [{ id: 'reply', type: 'send_chat', config: { phone, text: 'We miss you' } }]
  })
  t.equal(reply.status, 'FAILED')
  t.equal(reply.error, OPTED_OUT_MESSAGE)
  const ai = await client.runWorkflow(token, {
    name: 'ai reply',
    triggerType: 'MANUAL',
    nodes: [{ id: 'answer', type: 'ai_reply', config: { phone, mode: 'send' } }]
  })
  t.equal(ai.error, OPTED_OUT_MESSAGE, 'ai_reply sending')
  t.equal(sendsTo(phone).length, 1, 'only the confirmation ever reached the platform')
})

t.test('a contact who writes again after opting out: a person may answer in free text inside the window; nothing else may', async (t) => {
  const phone = newCustomer()
  await say(phone, 'STOP', 10)
  await waitFor(async () => sendsTo(phone).length === 1 ? true : undefined, { what: 'the confirmation' })
  const before = await stack.call('POST', '/api/chat/send/text', { token, body: { to: phone, text: 'Sorry to see you go' } })
  t.equal(before.status, 400, 'before they write again: refused, to staff too')

  provider.script({ reply: 'Your order shipped.' })
  await say(phone, 'where is my order?')
  const conversation = await stored(phone, 'where is my order?')
  const turns = await waitFor(async () => {
    const all = await turnsOf(conversation.id)
    return all.length > 0 && all[0]!.status === 'done' ? all : undefined
  }, { what: 'the turn' })
  t.equal(turns[0]!.outcome, 'skipped')
  t.match(turns[0]!.log.at(-1)!.detail!.reason, /opted out/, 'the assistant does not answer an opted-out customer')
  t.equal(provider.requests.filter((request) => JSON.stringify(request.body.messages).includes('where is my order?')).length, 0, 'nor asks the model')

  const staff = await stack.call('POST', '/api/chat/send/text', { token, body: { to: phone, text: 'It left yesterday.' } })
  t.equal(staff.status, 200, 'a person\'s free-text reply to the customer who wrote again')
  const media = await stack.call('POST', '/api/chat/send/media', { token, body: { to: phone, kind: 'document', link: 'https://example.com/receipt.pdf', filename: 'receipt.pdf' } })
  t.equal(media.status, 200, 'free-form media too')
  const template = await stack.call('POST', '/api/chat/send/template', { token, body: { to: phone, templateName: 'hello_world' } })
  t.equal(template.status, 400, 'a template is not a reply')
  const node = await client.runWorkflow(token, { name: 'auto', triggerType: 'MANUAL', nodes: [{ id: 'auto', type: 'send_chat', config: { phone, text: 'Automated' } }] })
  t.equal(node.error, OPTED_OUT_MESSAGE, 'a workflow is not a person')
  t.equal((await contactOf(phone)).optedOut, true, 'writing again does not end the opt-out')
  t.same(sendsTo(phone).map((send) => send.text?.body ?? send.type), [OPT_OUT_CONFIRMATION, 'It left yesterday.', 'document'])
})

t.test('the assistant: a STOP while a turn runs sends no reply; a draft of a contact who opted out is not approved', async (t) => {
  const phone = newCustomer()
  await say(phone, 'hi', 20)
  const conversation = await conversationOf(phone)
  await waitFor(async () => (await turnsOf(conversation.id))[0]?.status === 'done' ? true : undefined, { what: 'the first turn' })
  const drafts = async (): Promise<Message[]> => (await stack.call('GET', `/api/chat/conversations/${conversation.id}/drafts`, { token })).body
  const [draft] = await drafts()
  t.ok(draft, 'HYBRID: a draft')

  await stack.call('PATCH', `/api/chat/conversations/${conversation.id}`, { token, body: { aiMode: 'AUTO' } })
  provider.script({ delayMs: 1500, then: { reply: 'Sure, here is our offer!' } })
  await say(phone, 'any offers?', 10)
  await waitFor(async () => provider.requests.some((request) => JSON.stringify(request.body.messages).includes('any offers?')) ? true : undefined, { what: 'the model asked' })
  await say(phone, 'STOP', 5)
  await waitFor(async () => (await turnsOf(conversation.id)).length === 2 && (await turnsOf(conversation.id)).every((turn) => turn.status === 'done') ? true : undefined, { what: 'the AUTO turn ended' })
  t.match((await turnsOf(conversation.id))[0]!.outcome, /^(skipped|superseded)$/)
  t.same(sendsTo(phone).map((send) => send.text?.body), [OPT_OUT_CONFIRMATION], 'only the confirmation: no reply')

  const approve = await stack.call('POST', `/api/chat/conversations/${conversation.id}/drafts/${draft!.id}/approve`, { token, body: {} })
  t.equal(approve.status, 409, 'the STOP made the earlier draft stale')

  // Staff opting a customer out while the turn writes: the turn's send is refused at send time.
  const other = newCustomer()
  await say(other, 'hello', 10)
  const second = await conversationOf(other)
  await waitFor(async () => (await turnsOf(second.id))[0]?.status === 'done' ? true : undefined, { what: 'the first turn' })
  const [pending] = (await stack.call('GET', `/api/chat/conversations/${second.id}/drafts`, { token })).body as Message[]
  await stack.call('PATCH', `/api/chat/conversations/${second.id}`, { token, body: { aiMode: 'AUTO' } })
  provider.script({ delayMs: 1500, then: { reply: 'Our offer!' } })
  await say(other, 'offers?')
  await waitFor(async () => provider.requests.some((request) => JSON.stringify(request.body.messages).includes('offers?') && !JSON.stringify(request.body.messages).includes('any offers?')) ? true : undefined, { what: 'the model asked' })
  const contact = await contactOf(other)
  await stack.call('PATCH', `/api/chat/contacts/${contact.id}`, { token, body: { optedOut: true } })
  const turns = await waitFor(async () => {
    const all = await turnsOf(second.id)
    return all.length === 2 && all.every((turn) => turn.status === 'done') ? all : undefined
  }, { what: 'the AUTO turn ended' })
  t.equal(turns[0]!.outcome, 'skipped')
  t.match(turns[0]!.log.at(-1)!.detail!.reason, /opted out/)
  t.equal(sendsTo(other).length, 0, 'nothing was sent')
  const refused = await stack.call('POST', `/api/chat/conversations/${second.id}/drafts/${pending!.id}/approve`, { token, body: {} })
  t.equal(refused.status, 409, 'the newer message made the first draft stale')
  await stack.call('PATCH', `/api/chat/conversations/${second.id}`, { token, body: { aiMode: 'HYBRID' } })
  await stack.call('PATCH', `/api/chat/contacts/${contact.id}`, { token, body: { optedOut: false } })
  await say(other, 'one more')
  const drafted = await waitFor(async () => {
    const all = await turnsOf(second.id)
    return all.length === 3 && all[0]!.status === 'done' ? all : undefined
  }, { what: 'a drafting turn' })
  t.equal(drafted[0]!.outcome, 'drafted')
  const [fresh] = (await stack.call('GET', `/api/chat/conversations/${second.id}/drafts`, { token })).body as Message[]
  await stack.call('PATCH', `/api/chat/contacts/${contact.id}`, { token, body: { optedOut: true } })
  const approval = await stack.call('POST', `/api/chat/conversations/${second.id}/drafts/${fresh!.id}/approve`, { token, body: {} })
  t.equal(approval.status, 400)
  t.equal(approval.body.code, 'CONTACT_OPTED_OUT')
  t.equal((await stack.call('GET', `/api/chat/conversations/${second.id}/drafts`, { token })).body.length, 1, 'the draft waits, pending')
  t.equal(sendsTo(other).length, 0)
})

t.test('keywords and confirmations per account: admins set the shared inbox\'s; members read them', async (t) => {
  const defaults = await stack.call('GET', '/api/chat/accounts/default/consent', { token })
  t.equal(defaults.status, 200)
  t.match(defaults.body, {
    optOutKeywords: ['STOP', 'STOP ALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'OPT OUT', 'OPT-OUT'],
    optInKeywords: ['START', 'UNSTOP', 'SUBSCRIBE', 'OPT IN'],
    optOutConfirmation: OPT_OUT_CONFIRMATION,
    optInConfirmation: OPT_IN_CONFIRMATION,
    updatedAt: null
  })
  const member = await client.newUser(token)
  t.equal((await stack.call('GET', '/api/chat/accounts/default/consent', { token: member.token })).status, 200)
  t.equal((await stack.call('PUT', '/api/chat/accounts/default/consent', { token: member.token, body: {} })).status, 403)
  const both = await stack.call('PUT', '/api/chat/accounts/default/consent', { token, body: { optOutKeywords: ['stop'], optInKeywords: ['Stop '] } })
  t.equal(both.status, 400)
  t.equal(both.body.message, 'A keyword cannot both opt out and opt in: STOP')
  t.equal((await stack.call('PUT', '/api/chat/accounts/default/consent', { token, body: { optOutKeywords: [] } })).status, 400)
  t.equal((await stack.call('PUT', '/api/chat/accounts/default/consent', { token, body: { optOutConfirmation: 'x'.repeat(1025) } })).status, 400)

  const set = await stack.call('PUT', '/api/chat/accounts/default/consent', { token, body: { optOutKeywords: ['basta', ' no  more '], optOutConfirmation: 'Ciao: no more messages.' } })
  t.equal(set.status, 200)
  t.match(set.body, { optOutKeywords: ['BASTA', 'NO MORE'], optInKeywords: ['START', 'UNSTOP', 'SUBSCRIBE', 'OPT IN'], optOutConfirmation: 'Ciao: no more messages.' })
  const phone = newCustomer()
  await say(phone, 'Basta')
  await waitFor(async () => sendsTo(phone).length === 1 ? true : undefined, { what: 'the confirmation' })
  t.equal(sendsTo(phone)[0]!.text!.body, 'Ciao: no more messages.')
  t.equal((await contactOf(phone)).optedOut, true)
  await say(phone, 'STOP')
  await stored(phone, 'STOP')
  t.equal(sendsTo(phone).length, 1, 'STOP is no longer a keyword of the account: no confirmation')

  const reset = await stack.call('PUT', '/api/chat/accounts/default/consent', { token, body: {} })
  t.same(reset.body.optOutKeywords, defaults.body.optOutKeywords, 'a field left out is its default')
})

t.test('CSV import: rows added and changed, bad rows skipped with their reason, an opt-out never ended by an import', async (t) => {
  const optedOut = newCustomer()
  await say(optedOut, 'STOP')
  await waitFor(async () => sendsTo(optedOut).length === 1 ? true : undefined, { what: 'the confirmation' })
  const csv = [
    '\ufeffPhone,Name,labels,optedOut,attr.city,attr.plan-tier,email',
    `${optedOut},Ana Import,imported;imported,false,Lisbon,,ana@example.com`,
    '+44 7700 900123,"Smith, John",imported;uk,TRUE,London,gold,',
    '447700900124,Jane,imported,maybe,,,',
    ',Nobody,,,,,',
    'not-a-phone,X,,,,,',
    `447700900125,${'n'.repeat(201)},,,,,`,
    '447700900126,Too,many,cells,here,,,extra',
    `447700900127,Long label,${'l'.repeat(51)},,,,`,
    '"447700900128","Multi',
    'line",imported,yes,"Porto, ""north""",,',
    '447700900123,John Again,vip,,,,'
  ].join('\r\n')
  const res = await importCsv(csv, { 'content-type': 'text/csv; charset=utf-8' })
  t.equal(res.status, 200, JSON.stringify(res.body))
  t.match(res.body, {
    imported: 2,
    updated: 2,
    skippedCount: 6,
    ignoredColumns: ['email'],
    skipped: [
      { line: 4, reason: 'optedOut must be true or false (yes or no, 1 or 0)' },
      { line: 5, reason: 'phone is missing' },
      { line: 6, reason: 'phone is not a phone number in international format' },
      { line: 7, reason: 'name is longer than 200 characters' },
      { line: 8, reason: 'the row has 8 cells, the header names 7 columns' },
      { line: 9, reason: /^label l+… is longer than 50 characters$/ }
    ]
  })
  t.match(await contactOf(optedOut), { name: 'Ana Import', labels: ['imported'], attributes: { city: 'Lisbon' }, optedOut: true, consentSource: 'keyword' }, 'an import never ends an opt-out')
  const john = await contactOf('447700900123')
  t.match(john, { name: 'John Again', labels: ['imported', 'uk', 'vip'], attributes: { city: 'London', 'plan-tier': 'gold' }, optedOut: true, consentSource: 'import' })
  t.match(await contactOf('447700900128'), { name: /^Multi\r?\nline$/, attributes: { city: 'Porto, "north"' }, optedOut: true })
})

t.test('CSV import bounds: 10,000 rows, the body limit, other content types, a file without phone, a broken quote', async (t) => {
  const rows = Array.from({ length: 10_000 }, (_, n) => `4930${String(n).padStart(8, '0')},Bulk ${n},bulk,,${n}`)
  const started = Date.now()
  const big = await importCsv(['phone,name,labels,optedOut,attr.n', ...rows].join('\n'))
  t.equal(big.status, 200)
  t.match(big.body, { imported: 10_000, updated: 0, skippedCount: 0 })
  t.comment(`10,000 rows imported in ${Date.now() - started} ms`)
  const again = await importCsv(['phone,labels', ...rows.slice(0, 3).map((row) => `${row.split(',')[0]},again`)].join('\n'))
  t.match(again.body, { imported: 0, updated: 3 })
  t.same((await stack.call('GET', '/api/chat/contacts?label=bulk&limit=500&offset=9500', { token })).body.length, 500)
  t.same((await contactOf('493000000001')).labels, ['bulk', 'again'])

  const declared = await earlyAnswer({ 'content-length': String(10 * 1024 * 1024 + 1) }, [])
  t.equal(declared.status, 413, 'a length over 10 MiB is refused before anything is sent')
  t.equal(declared.body.code, 'PAYLOAD_TOO_LARGE')
  // Rows of 100 KiB with no phone: skipped as they come, nothing written, until the limit.
  const chunks = [Buffer.from('phone,name\n'), ...Array.from({ length: 110 }, () => Buffer.from(`x,${'b'.repeat(100 * 1024)}\n`))]
  const streamed = await earlyAnswer({}, chunks)
  t.equal(streamed.status, 413, 'a chunked body is cut at 10 MiB')

  const json = await stack.call('POST', '/api/chat/contacts/import', { token, body: { phone: '1' } })
  t.equal(json.status, 415)
  const noPhone = await importCsv('name,labels\nAna,x\n')
  t.equal(noPhone.status, 400)
  t.match(noPhone.body.message, /no phone column/)
  t.equal((await importCsv('')).status, 400)
  const twice = await importCsv('phone,Phone\n1,2\n')
  t.match(twice.body.message, /twice/)
  const broken = await importCsv('phone,name\n491700000001,Ok\n491700000002,"Never closed\n491700000003,Lost\n')
  t.equal(broken.status, 200)
  t.match(broken.body, { imported: 1, skippedCount: 1, skipped: [{ line: 3, reason: /cannot be read from here .*the rows after line 2 were not imported/ }] })
})
