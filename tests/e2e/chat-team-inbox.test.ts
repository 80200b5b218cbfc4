import t from 'tap'
import { httpTransport } from '@switchboard/testing/client'
import { deliver, fakeChatEnv, messagesDelivery, newWamid, startFakeChatPlatform, statusesDelivery } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/**
 * The team inbox end to end (README, The team inbox): real api and worker processes and the fake
 * chat platform. Assignment to the people who can use the account, the list's `assigned` and `label`
 * filters with `filter` and `sort`, canned replies and their bounds, and the live event stream: read
 * with fetch as the console reads it, fed by the worker's writes and by another api process's.
 */

const PHONE_NUMBER_ID = '106540352242922'
const OTHER_NUMBER = '200000000000777'
const APP_SECRET = 'e2e-team-inbox-app-secret'

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, { env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }) })
const token = await stack.adminToken()
const { client } = stack
const admin = (await stack.call('GET', '/api/users?limit=500', { token })).body.find((user: { role: string }) => user.role === 'admin') as { id: string, email: string }
// The default account's staff: a member with no account of their own. Another member links a number of their own.
const staff = await client.newUser(token)
const linker = await client.newUser(token)
const linked = await stack.call('POST', '/api/chat/accounts', { token: linker.token, body: { name: 'Own number', phoneNumberId: OTHER_NUMBER, accessToken: 'fake-platform-token' } })
if (linked.status !== 201) throw new Error(`link: ${linked.status} ${JSON.stringify(linked.body)}`)
const linkedAccount = { 'x-account-id': linked.body.id as string }

let customers = 0
const newCustomer = (): string => `1555300${String(++customers).padStart(4, '0')}`

/** A customer's message to `number`; `secondsAgo` stamps it earlier (the platform's stamps are whole seconds). */
async function say (phone: string, text: string, { number = PHONE_NUMBER_ID, secondsAgo = 0 } = {}): Promise<void> {
  const timestamp = Math.floor(Date.now() / 1000) - secondsAgo
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(number, [{ from: phone, name: `Customer ${phone.slice(-4)}`, text, wamid: newWamid(), timestamp }]), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
}

interface Conversation { id: string, phone: string, assignedAgentId: string | null, labels: string[], assistantPaused: boolean, unreadCount: number }

async function conversationOf (phone: string, as = token, headers: Record<string, string> = {}): Promise<Conversation> {
  return waitFor(async () => {
    const { body } = await stack.call('GET', '/api/chat/conversations?limit=500', { token: as, headers })
    return (body as Conversation[]).find((c) => c.phone === phone)
  }, { what: `the conversation of ${phone}` })
}

const patch = async (id: string, body: unknown, as = token) => stack.call('PATCH', `/api/chat/conversations/${id}`, { token: as, body })

t.test('assignment: to a user who can use the account, else 400; null unassigns; assigning pauses the assistant', async (t) => {
  const phone = newCustomer()
  await say(phone, 'hello')
  const { id } = await conversationOf(phone)
  const refused = await patch(id, { assignedAgentId: linker.id })
  t.equal(refused.status, 400, 'a member with a number of their own cannot use the default account')
  t.match(refused.body, { code: 'VALIDATION_ERROR', message: 'assignedAgentId must be a user who can use this account' })
  t.equal((await patch(id, { assignedAgentId: 'no-such-user' })).status, 400)

  const toStaff = await patch(id, { assignedAgentId: staff.id })
  t.equal(toStaff.status, 200, JSON.stringify(toStaff.body))
  t.match(toStaff.body, { assignedAgentId: staff.id, assistantPaused: true })
  t.equal((await patch(id, { assignedAgentId: admin.id }, staff.token)).body.assignedAgentId, admin.id, 'staff assign to an admin, who may use any account')
  t.equal((await patch(id, { assignedAgentId: null })).body.assignedAgentId, null)

  t.test('GET /api/chat/agents lists who can use the selected account, by email', async (t) => {
    const ofDefault: Array<{ id: string, email: string }> = (await stack.call('GET', '/api/chat/agents', { token: staff.token })).body
    const ids = ofDefault.map((agent) => agent.id)
    t.ok(ids.includes(admin.id) && ids.includes(staff.id), 'the admin and the default account\'s staff')
    t.notOk(ids.includes(linker.id), 'not a member who linked a number')
    t.same(ofDefault.map((agent) => agent.email), ofDefault.map((agent) => agent.email).sort(), 'by email')
    t.match(ofDefault.find((agent) => agent.id === staff.id), { email: staff.email })
    const ofLinked: Array<{ id: string }> = (await stack.call('GET', '/api/chat/agents', { token: linker.token, headers: linkedAccount })).body
    t.same(new Set(ofLinked.map((agent) => agent.id)), new Set([admin.id, linker.id]), 'the linker and the admins')
    t.equal((await stack.call('GET', '/api/chat/agents?limit=501', { token })).status, 400)
  })

  t.test('on a linked account: its linker can be assigned, the default account\'s staff cannot', async (t) => {
    const other = newCustomer()
    await say(other, 'hi', { number: OTHER_NUMBER })
    const conversation = await conversationOf(other, linker.token, linkedAccount)
    const assign = async (userId: string) => stack.call('PATCH', `/api/chat/conversations/${conversation.id}`, { token: linker.token, headers: linkedAccount, body: { assignedAgentId: userId } })
    t.equal((await assign(staff.id)).status, 400)
    t.equal((await assign(linker.id)).status, 200)
  })
})

t.test('assigned and label filters combine with filter and sort', async (t) => {
  // Oldest first: a (admin, vip), b (staff), c (nobody, vip+billing), d (admin, archived), e (nobody, read).
  const phones = Array.from({ length: 5 }, newCustomer)
  for (const [n, phone] of phones.entries()) await say(phone, `message from ${phone}`, { secondsAgo: 10 - n })
  const [a, b, c, d, e] = await Promise.all(phones.map(async (phone) => conversationOf(phone)))
  const set = async (conversation: Conversation, body: unknown) => { t.equal((await patch(conversation.id, body)).status, 200) }
  await set(a!, { assignedAgentId: admin.id, labels: ['vip'] })
  await set(b!, { assignedAgentId: staff.id })
  await set(c!, { labels: ['vip', 'billing'] })
  await set(d!, { assignedAgentId: admin.id, isArchived: true })
  t.equal((await stack.call('POST', `/api/chat/conversations/${e!.id}/read`, { token })).status, 200)

  const ours = new Set(phones)
  const list = async (query: string, as = token): Promise<string[]> => {
    const res = await stack.call('GET', `/api/chat/conversations?limit=500&${query}`, { token: as })
    if (res.status !== 200) throw new Error(`${query}: ${res.status} ${JSON.stringify(res.body)}`)
    return (res.body as Conversation[]).map((conversation) => conversation.phone).filter((phone) => ours.has(phone))
  }
  const [pa, pb, pc, pd, pe] = phones
  t.same(await list('assigned=me'), [pa], 'mine, not archived')
  t.same(await list('assigned=me&filter=archived'), [pd])
  t.same(await list('assigned=me', staff.token), [pb], 'me is whoever asks')
  t.same(await list(`assigned=${staff.id}`), [pb])
  t.same(await list('assigned=none'), [pe, pc], 'nobody\'s, newest first')
  t.same(await list('assigned=none&sort=oldest'), [pc, pe])
  t.same(await list('assigned=none&filter=unread'), [pc])
  t.same(await list('label=vip'), [pc, pa])
  t.same(await list('label=vip&sort=oldest'), [pa, pc])
  t.same(await list('label=vip&assigned=none'), [pc])
  t.same(await list('label=vip&assigned=me&sort=unread'), [pa])
  t.same(await list('label=billing&filter=unread'), [pc])
  t.same(await list('label=nope'), [])
  for (const bad of ['assigned=', 'label=', `label=${'x'.repeat(51)}`, `assigned=${'x'.repeat(201)}`]) {
    t.equal((await stack.call('GET', `/api/chat/conversations?${bad}`, { token })).status, 400, bad)
  }
})

t.test('canned replies: CRUD per account, shortcuts unique (409), bounds', async (t) => {
  const create = async (body: unknown, as = token, headers: Record<string, string> = {}) => stack.call('POST', '/api/chat/canned-replies', { token: as, headers, body })
  const hours = await create({ shortcut: 'hours', title: 'Opening hours', text: 'We are open 9 to 17, Monday to Friday.' })
  t.equal(hours.status, 201, JSON.stringify(hours.body))
  t.match(hours.body, { id: String, shortcut: 'hours', title: 'Opening hours', text: 'We are open 9 to 17, Monday to Friday.', createdAt: String, updatedAt: String })
  t.notOk('phoneNumberId' in hours.body)
  t.equal((await create({ shortcut: 'address', title: 'Address', text: '1 Main Street' }, staff.token)).status, 201, 'the default account\'s staff share them')

  const duplicate = await create({ shortcut: 'hours', title: 'Again', text: 'x' })
  t.equal(duplicate.status, 409)
  t.match(duplicate.body, { code: 'CANNED_REPLY_EXISTS', message: 'A canned reply with the shortcut hours already exists' })

  const listed = (await stack.call('GET', '/api/chat/canned-replies', { token: staff.token })).body as Array<{ shortcut: string }>
  t.same(listed.map((reply) => reply.shortcut), ['address', 'hours'], 'by shortcut')
  t.same((await stack.call('GET', '/api/chat/canned-replies', { token: linker.token, headers: linkedAccount })).body, [], 'another number has its own')
  const theirs = await create({ shortcut: 'hours', title: 'Their hours', text: 'Always open' }, linker.token, linkedAccount)
  t.equal(theirs.status, 201, 'a shortcut is unique per number')

  const changed = await stack.call('PATCH', `/api/chat/canned-replies/${hours.body.id}`, { token: staff.token, body: { text: 'We are open 9 to 18.' } })
  t.match(changed.body, { shortcut: 'hours', title: 'Opening hours', text: 'We are open 9 to 18.' })
  const renamed = await stack.call('PATCH', `/api/chat/canned-replies/${hours.body.id}`, { token, body: { shortcut: 'address' } })
  t.equal(renamed.status, 409)
  t.equal(renamed.body.message, 'A canned reply with the shortcut address already exists')
  for (const [method, path] of [['PATCH', `/api/chat/canned-replies/${theirs.body.id}`], ['DELETE', `/api/chat/canned-replies/${theirs.body.id}`], ['DELETE', '/api/chat/canned-replies/nope']] as const) {
    const res = await stack.call(method, path, { token, ...(method === 'PATCH' && { body: { title: 'mine now' } }) })
    t.equal(res.status, 404, `${method} ${path}`)
    t.match(res.body, { code: 'CANNED_REPLY_NOT_FOUND', message: 'Canned reply not found' })
  }

  const invalid: Array<[unknown, string]> = [
    [{ shortcut: 'Hours', title: 'x', text: 'x' }, 'shortcut must be 1 to 32 lower-case letters, digits, _ or -'],
    [{ shortcut: 'a b', title: 'x', text: 'x' }, 'shortcut must be 1 to 32 lower-case letters, digits, _ or -'],
    [{ shortcut: 'x'.repeat(33), title: 'x', text: 'x' }, 'shortcut must be 1 to 32 lower-case letters, digits, _ or -'],
    [{ shortcut: 'ok', title: 'x'.repeat(101), text: 'x' }, 'title must be 1 to 100 characters'],
    [{ shortcut: 'ok', title: 'x', text: 'x'.repeat(4097) }, 'text must be 1 to 4096 characters'],
    [{ shortcut: 'ok', title: 'x', text: '' }, 'text must be 1 to 4096 characters']
  ]
  for (const [body, message] of invalid) {
    const res = await create(body)
    t.equal(res.status, 400, message)
    t.equal(res.body.message, message)
  }

  t.equal((await stack.call('DELETE', `/api/chat/canned-replies/${hours.body.id}`, { token: staff.token })).status, 204)
  t.same(((await stack.call('GET', '/api/chat/canned-replies', { token })).body as Array<{ shortcut: string }>).map((reply) => reply.shortcut), ['address'])

  t.test('at most 500 per number, also when adds race for the last places', async (t) => {
    const add = async (n: number) => create({ shortcut: `r${n}`, title: `Reply ${n}`, text: `text ${n}` })
    for (let n = 0; n < 490; n += 50) {
      const batch = await Promise.all(Array.from({ length: Math.min(50, 490 - n) }, async (_, i) => add(n + i)))
      t.ok(batch.every((res) => res.status === 201), `replies ${n}…`)
    }
    // 491 so far: of 20 adds at once, 9 take the last places.
    const racing = await Promise.all(Array.from({ length: 20 }, async (_, i) => add(1000 + i)))
    t.equal(racing.filter((res) => res.status === 201).length, 9)
    const refused = racing.find((res) => res.status !== 201)!
    t.equal(refused.status, 400)
    t.match(refused.body, { code: 'TOO_MANY_CANNED_REPLIES', message: 'Too many canned replies: at most 500 per account' })
    t.equal((await stack.call('GET', '/api/chat/canned-replies?limit=500', { token })).body.length, 500)
    t.equal((await create({ shortcut: 'more', title: 'x', text: 'x' }, linker.token, linkedAccount)).status, 201, 'the bound is per number')
  })
})

interface StreamEvent { event: string, data: Record<string, string> }

/** GET /api/chat/events read with fetch, as the console reads it: its events as they come, and whether it ended. */
async function openStream (baseUrl: string, as: string, headers: Record<string, string> = {}) {
  const controller = new AbortController()
  const res = await fetch(`${baseUrl}/api/chat/events`, { headers: { authorization: `Bearer ${as}`, ...headers }, signal: controller.signal })
  const events: StreamEvent[] = []
  let text = ''
  let ended = false
  const reading = (async () => {
    if (res.body === null || !res.ok) return
    const decoder = new TextDecoder()
    const reader = res.body.getReader()
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += decoder.decode(chunk.value, { stream: true })
      for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
        const block = text.slice(0, end)
        text = text.slice(end + 2)
        const event = /^event: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (event !== undefined) events.push({ event, data: JSON.parse(data ?? '{}') })
      }
    }
  })().catch(() => {}).finally(() => { ended = true })
  t.teardown(() => { controller.abort() })
  return {
    res,
    events,
    ended: () => ended,
    close: async () => { controller.abort(); await reading },
    /** The first event after `from` that `match` accepts, within `timeoutMs`. */
    next: async (match: (event: StreamEvent) => boolean, { from = 0, timeoutMs = 3000, what = 'an event' } = {}) =>
      waitFor(async () => events.slice(from).find(match), { timeoutMs, intervalMs: 20, what })
  }
}

t.test('the event stream: a message the worker stores reaches it within seconds, as ids', async (t) => {
  const stream = await openStream(stack.baseUrl, token)
  t.equal(stream.res.status, 200)
  t.match(stream.res.headers.get('content-type'), /^text\/event-stream/)
  t.equal(stream.res.headers.get('cache-control'), 'no-store')

  const phone = newCustomer()
  const started = Date.now()
  await say(phone, 'is anyone there?')
  const created = await stream.next((event) => event.event === 'message.created', { what: 'message.created' })
  t.ok(Date.now() - started < 3000, `within ${Date.now() - started} ms of the delivery`)
  const conversation = await conversationOf(phone)
  t.same(Object.keys(created.data).sort(), ['conversationId', 'messageId'], 'ids only')
  t.equal(created.data.conversationId, conversation.id)
  const { body: messages } = await stack.call('GET', `/api/chat/conversations/${conversation.id}/messages`, { token })
  t.equal(created.data.messageId, messages[0].id)

  t.test('a staff reply, its statuses and a PATCH follow', async (t) => {
    const from = stream.events.length
    const sent = await stack.call('POST', '/api/chat/send/text', { token, body: { to: phone, text: 'Yes, how can we help?' } })
    t.equal(sent.status, 200, JSON.stringify(sent.body))
    const reply = await stream.next((event) => event.event === 'message.created', { from, what: 'the reply\'s message.created' })
    t.equal(reply.data.conversationId, conversation.id)
    const wamid = sent.body.messages[0].id as string
    const statuses = await deliver(`${stack.baseUrl}/webhook/chat`, statusesDelivery(PHONE_NUMBER_ID, [{ wamid, status: 'delivered', recipientId: phone }]), APP_SECRET)
    t.equal(statuses.status, 200)
    t.same((await stream.next((event) => event.event === 'message.updated', { from, what: 'message.updated' })).data, { conversationId: conversation.id, messageId: reply.data.messageId })
    t.equal((await patch(conversation.id, { isPinned: true })).status, 200)
    t.same((await stream.next((event) => event.event === 'conversation.updated', { from, what: 'conversation.updated' })).data, { conversationId: conversation.id })
  })

  t.test('another number\'s changes never reach it', async (t) => {
    const other = await openStream(stack.baseUrl, linker.token, linkedAccount)
    const from = stream.events.length
    await say(newCustomer(), 'to the other number', { number: OTHER_NUMBER })
    await other.next((event) => event.event === 'message.created', { what: 'the other number\'s own event' })
    await say(newCustomer(), 'to the default number')
    await stream.next((event) => event.event === 'message.created', { from, what: 'the default number\'s event' })
    t.equal(stream.events.slice(from).length, 1, 'only its own number\'s message')
    t.equal(other.events.length, 1)
    await other.close()
  })
  // After the subtests, which run once this body has returned.
  t.teardown(stream.close)
})

t.test('fan-out: a change made through another api process reaches a stream on this one', async (t) => {
  const apiB = await stack.startApi()
  const onB = httpTransport(apiB.baseUrl)
  const stream = await openStream(stack.baseUrl, staff.token)
  const phone = newCustomer()
  await say(phone, 'fan out')
  const { id } = await conversationOf(phone)
  const from = stream.events.length
  const started = Date.now()
  const changed = await onB({ method: 'PATCH', path: `/api/chat/conversations/${id}`, token, body: { assignedAgentId: staff.id, labels: ['vip'] } })
  t.equal(changed.status, 200)
  const event = await stream.next((e) => e.event === 'conversation.updated' && e.data.conversationId === id, { from, what: 'conversation.updated from api B' })
  t.ok(Date.now() - started < 2000, `within ${Date.now() - started} ms`)
  t.same(event.data, { conversationId: id })
  const sent = await onB({ method: 'POST', path: '/api/chat/send/text', token: staff.token, body: { to: phone, text: 'answered through B' } })
  t.equal(sent.status, 200)
  await stream.next((e) => e.event === 'message.created' && e.data.conversationId === id, { from, what: 'message.created from api B' })
  await stream.close()

  t.test('a stopping api ends its streams and exits at once, not after its grace period', async (t) => {
    const onStopping = await openStream(apiB.baseUrl, token)
    t.equal(onStopping.res.status, 200)
    const stopping = Date.now()
    await apiB.stop('SIGTERM')
    t.ok(Date.now() - stopping < 5000, `exited in ${Date.now() - stopping} ms`)
    t.equal(apiB.child.exitCode, 0)
    await waitFor(async () => onStopping.ended() ? true : undefined, { what: 'the stream to end' })
  })
})

t.test('the stream\'s refusals and bounds', async (t) => {
  t.equal((await fetch(`${stack.baseUrl}/api/chat/events`)).status, 401)
  const missing = await fetch(`${stack.baseUrl}/api/chat/events`, { headers: { authorization: `Bearer ${linker.token}`, 'x-account-id': 'default' } })
  t.equal(missing.status, 404, 'an account the user cannot use')

  const streams = await Promise.all(Array.from({ length: 10 }, async () => openStream(stack.baseUrl, staff.token)))
  t.ok(streams.every((stream) => stream.res.status === 200), '10 streams per user')
  const eleventh = await fetch(`${stack.baseUrl}/api/chat/events`, { headers: { authorization: `Bearer ${staff.token}` } })
  t.equal(eleventh.status, 429)
  t.match(await eleventh.json(), { code: 'TOO_MANY_EVENT_STREAMS', message: 'Too many event streams: at most 10 per user' })
  t.equal((await openStream(stack.baseUrl, token)).res.status, 200, 'another user still may')
  await streams[0]!.close()
  const again = await waitFor(async () => {
    const stream = await openStream(stack.baseUrl, staff.token)
    return stream.res.status === 200 ? stream : undefined
  }, { what: 'a closed stream\'s place to free' })
  t.equal(again.res.status, 200)

  t.test('a user whose role or password changes loses their streams', async (t) => {
    const changed = await stack.call('PATCH', `/api/users/${staff.id}`, { token, body: { password: 'another-password' } })
    t.equal(changed.status, 200)
    await waitFor(async () => [...streams.slice(1), again].every((stream) => stream.ended()) ? true : undefined, { what: 'every stream of the user to end', timeoutMs: 3000 })
    t.equal((await fetch(`${stack.baseUrl}/api/chat/events`, { headers: { authorization: `Bearer ${staff.token}` } })).status, 401, 'the old token cannot reconnect')
  })
})
