import postgres from 'postgres'
import t from 'tap'
import { deliver, fakeChatEnv, messagesDelivery, newWamid, startFakeChatPlatform, statusesDelivery, type InboundMessageSpec } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/**
 * Customers known by username end to end (README, Customers known by username): real api and worker
 * processes and the fake chat platform sending customers whose phone it withholds. One customer is
 * one contact and one conversation whichever of their phone and platform user id (BSUID) a message
 * carries; sends reach them by `recipient` when the phone is withheld. Each test uses customers of its own.
 */

const PHONE_NUMBER_ID = '106540352242777'
const APP_SECRET = 'e2e-usernames-app-secret'

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, { env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }) })
const token = await stack.adminToken()
const sql = postgres(stack.env.DATABASE_URL!, { max: 2, onnotice: () => {} })
t.teardown(async () => { await sql.end() })

let customers = 0
/** A customer of the test's own: their phone and their business-scoped user id. */
function newCustomer (): { phone: string, userId: string, username: string } {
  const n = String(++customers).padStart(4, '0')
  return { phone: `1555300${n}`, userId: `US.1349120865530274${n}`, username: `@customer${n}` }
}

async function say (specs: InboundMessageSpec[]): Promise<void> {
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, specs), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
}

interface Conversation { id: string, phone: string, platformUserId: string | null, username: string | null, name: string | null, labels: string[] }
interface Contact { id: string, phone: string, platformUserId: string | null, parentPlatformUserId: string | null, username: string | null, labels: string[] }

/** The rows of the customer in each table, straight from the database: the API lists could hide a second one. */
async function recordsOf (customer: { phone: string, userId: string }): Promise<{ conversations: Array<{ id: string }>, contacts: Array<{ id: string }> }> {
  const where = sql`phone_number_id = ${PHONE_NUMBER_ID} and (phone = ${customer.phone} or platform_user_id = ${customer.userId})`
  return {
    conversations: await sql<Array<{ id: string }>>`select id from conversations where ${where}`,
    contacts: await sql<Array<{ id: string }>>`select id from chat_contacts where ${where}`
  }
}

async function conversationOf (userId: string): Promise<Conversation> {
  return waitFor(async () => {
    const { body } = await stack.call('GET', '/api/chat/conversations?limit=500', { token })
    return (body as Conversation[]).find((c) => c.platformUserId === userId)
  }, { what: `the conversation of ${userId}` })
}

async function contactOf (username: string): Promise<Contact> {
  return waitFor(async () => {
    const { body } = await stack.call('GET', `/api/chat/contacts?search=${encodeURIComponent(username)}`, { token })
    return (body as Contact[]).find((contact) => contact.username === username)
  }, { what: `the contact ${username}` })
}

const messagesOf = async (conversationId: string, limit = 100): Promise<Array<{ id: string, content: string, direction: string, status: string | null }>> =>
  (await stack.call('GET', `/api/chat/conversations/${conversationId}/messages?limit=${limit}`, { token })).body

const stored = async (conversationId: string, content: string): Promise<void> => {
  await waitFor(async () => (await messagesOf(conversationId)).some((m) => m.content === content) ? true : undefined, { what: `"${content}" stored` })
}

const sendsTo = (address: string): Array<{ to?: string, recipient?: string, text?: { body: string } }> =>
  platform.sends().map((send) => send.body as { to?: string, recipient?: string, text?: { body: string } }).filter((body) => body.to === address || body.recipient === address)

t.test('a customer whose phone is withheld: one contact and conversation by platform user id, reached by recipient', async (t) => {
  const customer = newCustomer()
  await say([{ from: customer.phone, withholdPhone: true, userId: customer.userId, username: customer.username, name: 'Noor', text: 'hi there' }])
  const conversation = await conversationOf(customer.userId)
  t.match(conversation, { phone: '', platformUserId: customer.userId, username: customer.username, name: 'Noor' })
  const contact = await contactOf(customer.username)
  t.match(contact, { phone: '', platformUserId: customer.userId, username: customer.username })

  const sent = await stack.call('POST', '/api/chat/send/text', { token, body: { contactId: contact.id, text: 'Hello Noor' } })
  t.equal(sent.status, 200)
  t.match(sent.body, { contacts: [{ input: customer.userId, user_id: customer.userId }] })
  t.match(sendsTo(customer.userId), [{ recipient: customer.userId, text: { body: 'Hello Noor' } }], 'sent by recipient: there is no phone')
  t.notOk(sendsTo(customer.userId)[0]?.to, 'no to')
  await stored(conversation.id, 'Hello Noor')
  const wamid = (sent.body as { messages: Array<{ id: string }> }).messages[0]!.id
  await deliver(`${stack.baseUrl}/webhook/chat`, statusesDelivery(PHONE_NUMBER_ID, [{ wamid, status: 'read', recipientId: customer.userId }]), APP_SECRET)
  await waitFor(async () => (await messagesOf(conversation.id)).some((m) => m.content === 'Hello Noor' && m.status === 'read') ? true : undefined,
    { what: 'the status of a message sent by recipient (recipient_user_id, no recipient_id)' })

  const byUserId = await stack.call('POST', '/api/chat/send/text', { token, body: { to: customer.userId, text: 'Also by id' } })
  t.equal(byUserId.status, 200, 'to takes a platform user id too')
  await stored(conversation.id, 'Also by id')

  t.match(await stack.call('POST', '/api/chat/send/text', { token, body: { text: 'nobody' } }), { status: 400, body: { message: 'to is required' } })
  t.match(await stack.call('POST', '/api/chat/send/text', { token, body: { to: customer.phone, contactId: contact.id, text: 'both' } }),
    { status: 400, body: { message: 'to and contactId: give one of them, not both' } })
  t.match(await stack.call('POST', '/api/chat/send/text', { token, body: { contactId: 'no-such-contact', text: 'x' } }), { status: 404, body: { code: 'CONTACT_NOT_FOUND' } })
  t.match(await stack.call('POST', '/api/chat/send/text', { token, body: { to: 'US.', text: 'x' } }), { status: 400, body: { message: 'to must be a phone number in international format' } })

  // The phone arrives later (the customer shared it): it joins their records, it makes no second.
  await say([{ from: customer.phone, userId: customer.userId, username: customer.username, text: 'my number now' }])
  await stored(conversation.id, 'my number now')
  t.match(await conversationOf(customer.userId), { id: conversation.id, phone: customer.phone })
  t.match(await contactOf(customer.username), { id: contact.id, phone: customer.phone })
  const records = await recordsOf(customer)
  t.equal(records.conversations.length, 1, 'one conversation')
  t.equal(records.contacts.length, 1, 'one contact')

  const byContact = await stack.call('POST', '/api/chat/send/text', { token, body: { contactId: contact.id, text: 'Now by phone' } })
  t.equal(byContact.status, 200)
  t.match(sendsTo(customer.phone).at(-1), { to: customer.phone, text: { body: 'Now by phone' } }, 'the phone known, a send uses to')
})

t.test('a phone conversation and a username conversation of one customer are joined by the message that names both', async (t) => {
  const customer = newCustomer()
  // Staff reached the phone first (a template: outside the window), the customer wrote with their phone withheld.
  const template = await stack.call('POST', '/api/chat/send/template', { token, body: { to: customer.phone, templateName: 'hello_world' } })
  t.equal(template.status, 200)
  await say([{ from: customer.phone, withholdPhone: true, userId: customer.userId, username: customer.username, text: 'who is this?' }])
  const byUser = await conversationOf(customer.userId)
  t.equal((await recordsOf(customer)).conversations.length, 2, 'two conversations until a message names both')
  await stack.call('POST', `/api/chat/contacts/${(await contactOf(customer.username)).id}/labels`, { token, body: { label: 'vip' } })

  await say([{ from: customer.phone, userId: customer.userId, username: customer.username, text: 'it is me' }])
  const joined = await waitFor(async () => {
    const records = await recordsOf(customer)
    return records.conversations.length === 1 && records.contacts.length === 1 ? records : undefined
  }, { what: 'the records joined' })
  t.not(joined.conversations[0]!.id, byUser.id, 'the conversation with the phone is kept')
  const messages = await messagesOf(joined.conversations[0]!.id)
  t.same(messages.map((m) => m.direction).sort(), ['inbound', 'inbound', 'outbound'], 'the template and both messages, in one conversation')
  t.match(await conversationOf(customer.userId), { id: joined.conversations[0]!.id, phone: customer.phone, username: customer.username })
  t.match(await contactOf(customer.username), { phone: customer.phone, platformUserId: customer.userId, labels: ['vip'] }, 'the contact keeps what staff gave either record')
})

t.test('a workflow answers a customer known by username: triggerData names them, a node sends by contactId or by default', async (t) => {
  const customer = newCustomer()
  const workflowId = await stack.client.createWorkflow(token, {
    name: 'orders by username',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['order'] },
    nodes: [
      { id: 'ack', type: 'send_chat', config: { contactId: '{{triggerData.contactId}}', text: 'Got your order' }, next: 'handoff' },
      { id: 'handoff', type: 'handoff', config: { assignTo: 'least_busy', labels: ['orders'] } }
    ]
  })
  await say([{ from: customer.phone, withholdPhone: true, userId: customer.userId, username: customer.username, text: 'order' }])
  const run = await stack.client.latestRunReaching(token, workflowId)
  t.equal(run.status, 'SUCCESS', JSON.stringify(run.error))
  const contact = await contactOf(customer.username)
  t.match(run.triggerData, { phone: '', platformUserId: customer.userId, username: customer.username, contactId: contact.id })
  t.match(sendsTo(customer.userId), [{ recipient: customer.userId, text: { body: 'Got your order' } }])
  t.match(await conversationOf(customer.userId), { labels: ['orders'] },
    'the handoff found the trigger\'s customer by platform user id')

  const invalid = await stack.call('POST', '/api/automation/workflows', {
    token,
    body: { name: 'both', triggerType: 'MANUAL', nodes: [{ id: 's', type: 'send_chat', config: { phone: '15550001111', contactId: 'c1', text: 'x' } }] }
  })
  t.match(invalid, { status: 400, body: { message: /phone and contactId: give one of them, not both/ } })
})

t.test('1,000 messages alternating phone and platform user id for one customer: one contact, one conversation', async (t) => {
  const customer = newCustomer()
  const kinds: Array<(i: number) => InboundMessageSpec> = [
    (i) => ({ from: customer.phone, userId: customer.userId, text: `m${i}` }),
    (i) => ({ from: customer.phone, withholdPhone: true, userId: customer.userId, username: customer.username, text: `m${i}` }),
    // A delivery from before the platform sent user ids: the phone only.
    (i) => ({ from: customer.phone, text: `m${i}` })
  ]
  const deliveries = Array.from({ length: 100 }, (_, d) => Array.from({ length: 10 }, (_, m) => { const i = d * 10 + m; return { ...kinds[i % 3]!(i), wamid: newWamid() } }))
  await Promise.all(deliveries.map(async (specs) => { await say(specs) }))
  const records = await waitFor(async () => {
    const [{ count }] = await sql<Array<{ count: number }>>`select count(*)::int as count from messages m join conversations c on c.id = m.conversation_id
      where c.phone_number_id = ${PHONE_NUMBER_ID} and (c.phone = ${customer.phone} or c.platform_user_id = ${customer.userId})`
    return count === 1000 ? await recordsOf(customer) : undefined
  }, { what: '1,000 messages stored', timeoutMs: 60_000 })
  t.equal(records.conversations.length, 1, 'one conversation')
  t.equal(records.contacts.length, 1, 'one contact')
  t.match(await conversationOf(customer.userId), { phone: customer.phone, platformUserId: customer.userId, username: customer.username })
})

t.test('a join racing sends: every message lands in the one conversation left', async (t) => {
  const customer = newCustomer()
  await stack.call('POST', '/api/chat/send/template', { token, body: { to: customer.phone, templateName: 'hello_world' } })
  await say([{ from: customer.phone, withholdPhone: true, userId: customer.userId, text: 'first' }])
  await conversationOf(customer.userId)
  // Texts by platform user id (the customer wrote by it: its window is open), templates to the phone.
  const sends = Array.from({ length: 10 }, async (_, i) => i % 2 === 0
    ? await stack.call('POST', '/api/chat/send/text', { token, body: { to: customer.userId, text: `reply ${i}` } })
    : await stack.call('POST', '/api/chat/send/template', { token, body: { to: customer.phone, templateName: 'hello_world' } }))
  const [statuses] = await Promise.all([
    Promise.all(sends),
    say([{ from: customer.phone, userId: customer.userId, text: 'joining' }])
  ])
  t.same(statuses.filter((res) => res.status !== 200).map((res) => res.body), [], 'every send answered 200')
  const joined = await waitFor(async () => {
    const records = await recordsOf(customer)
    const [{ count }] = await sql<Array<{ count: number }>>`select count(*)::int as count from messages m join conversations c on c.id = m.conversation_id
      where c.phone_number_id = ${PHONE_NUMBER_ID} and (c.phone = ${customer.phone} or c.platform_user_id = ${customer.userId})`
    return records.conversations.length === 1 && count === 13 ? records : undefined
  }, { what: 'one conversation with the template, both messages and the ten replies' })
  t.equal(joined.contacts.length, 1, 'one contact')
})

t.test('a sandbox number plays a customer known by username, and answers them by contactId', async (t) => {
  const sandbox = (await stack.call('POST', '/api/chat/accounts', { token, body: { name: 'Sandbox', sandbox: true } })).body as { id: string }
  const headers = { 'x-account-id': sandbox.id }
  const customer = newCustomer()
  const played = await stack.call('POST', `/api/chat/accounts/${sandbox.id}/sandbox/inbound`, { token, body: { from: customer.userId, username: customer.username, name: 'Ines', text: 'hello sandbox' } })
  t.equal(played.status, 202, JSON.stringify(played.body))
  const conversation = await waitFor(async () => ((await stack.call('GET', '/api/chat/conversations', { token, headers })).body as Conversation[])
    .find((c) => c.platformUserId === customer.userId), { what: 'the sandbox conversation' })
  t.match(conversation, { phone: '', username: customer.username, name: 'Ines' })
  const [contact] = (await stack.call('GET', `/api/chat/contacts?search=${encodeURIComponent(customer.username)}`, { token, headers })).body as Contact[]
  const reply = await stack.call('POST', '/api/chat/send/text', { token, headers, body: { contactId: contact!.id, text: 'Hi Ines' } })
  t.match(reply, { status: 200, body: { contacts: [{ input: customer.userId, user_id: customer.userId }] } })
  t.equal(sendsTo(customer.userId).length, 0, 'a sandbox number never calls the platform')
})
