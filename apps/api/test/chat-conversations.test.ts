import t from 'tap'
import { createChatSender } from '@switchboard/core/chat'
import { waitFor } from '@switchboard/testing/wait'
import { buildChatTestApp } from './chat-helper.ts'

const chat = await buildChatTestApp(t, { worker: true })
const { request, receive } = chat
const member = await chat.newMember()
const NUMBER = '200000000000101'
const accountId = await chat.linkAccount(member.token, NUMBER)
const headers = { 'x-account-id': accountId }
const now = Math.floor(Date.now() / 1000)
const HOUR = 3600

interface ConversationBody { id: string, phone: string, unreadCount: number, messages: Array<{ id: string, content: string }> }
const list = async (query = ''): Promise<ConversationBody[]> => {
  const res = await request({ method: 'GET', url: `/api/chat/conversations${query}`, token: member.token, headers })
  if (res.statusCode !== 200) throw new Error(res.body)
  return res.json()
}
const phones = (conversations: ConversationBody[]) => conversations.map((c) => c.phone)

// recent: 2 unread, last message 1h ago; stale: 1 unread, 30h ago; quiet: read, 3h ago; busy: 25 messages ending now; archived: 10h ago.
await receive([
  { from: '15550000001', name: 'Recent', text: 'first', timestamp: now - 2 * HOUR },
  { from: '15550000001', name: 'Recent', text: 'second', timestamp: now - HOUR },
  { from: '15550000002', name: 'Stale', text: 'long ago', timestamp: now - 30 * HOUR },
  { from: '15550000003', name: 'Quiet', text: 'read already', timestamp: now - 3 * HOUR },
  { from: '15550000005', name: 'Archived', text: 'bye', timestamp: now - 10 * HOUR }
], NUMBER)
await receive(Array.from({ length: 25 }, (_, i) => ({ from: '15550000004', name: 'Busy', text: `message ${i + 1}`, timestamp: now - 25 + i })), NUMBER)
const byPhone = new Map((await list()).map((c) => [c.phone, c]))
await request({ method: 'POST', url: `/api/chat/conversations/${byPhone.get('15550000003')!.id}/read`, token: member.token, headers })
await request({ method: 'PATCH', url: `/api/chat/conversations/${byPhone.get('15550000005')!.id}`, token: member.token, headers, payload: { isArchived: true } })

t.test('default listing: not archived, newest first, each with its latest 20 messages oldest first', async (t) => {
  const conversations = await list()
  t.same(phones(conversations), ['15550000004', '15550000001', '15550000003', '15550000002'])
  const busy = conversations[0]
  t.equal(busy.messages.length, 20)
  t.same(busy.messages.map((m) => m.content), Array.from({ length: 20 }, (_, i) => `message ${i + 6}`))
  t.match(conversations[1], {
    name: 'Recent', lastMessage: 'second', unreadCount: 2, isPinned: false, isArchived: false, priority: 'normal', labels: [], aiMode: 'HYBRID', pendingApprovalCount: 0, assignedAgentId: null, lastIncomingAt: String
  })
  t.match(conversations[1].messages, [{ content: 'first', direction: 'inbound', wamid: /^wamid\./, createdAt: String }, { content: 'second', direction: 'inbound' }])
})

t.test('filters', async (t) => {
  t.same(phones(await list('?filter=unread')), ['15550000004', '15550000001', '15550000002'])
  t.same(phones(await list('?filter=active')), ['15550000004', '15550000001', '15550000003'])
  t.same(phones(await list('?filter=archived')), ['15550000005'])
  const bad = await request({ method: 'GET', url: '/api/chat/conversations?filter=spam', token: member.token, headers })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().message, 'filter must be one of unread, active, archived')
})

t.test('sorts and paging', async (t) => {
  t.same(phones(await list('?sort=oldest')), ['15550000002', '15550000003', '15550000001', '15550000004'])
  t.same(phones(await list('?sort=unread')), ['15550000004', '15550000001', '15550000002', '15550000003'])
  t.same(phones(await list('?sort=newest&limit=2&offset=1')), ['15550000001', '15550000003'])
  t.same(phones(await list('?filter=unread&sort=oldest')), ['15550000002', '15550000001', '15550000004'])
  const bad = await request({ method: 'GET', url: '/api/chat/conversations?sort=random', token: member.token, headers })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().message, 'sort must be one of newest, unread, oldest')
})

t.test('PATCH changes the managed fields only, validates them, and is scoped to the account', async (t) => {
  const id = byPhone.get('15550000001')!.id
  const res = await request({
    method: 'PATCH',
    url: `/api/chat/conversations/${id}`,
    token: member.token,
    headers,
    payload: { isPinned: true, priority: 'urgent', labels: ['vip', 'billing'], assignedAgentId: member.id, aiMode: 'OFF', unreadCount: 99, phone: '1' }
  })
  t.equal(res.statusCode, 200, res.body)
  t.match(res.json(), { id, phone: '15550000001', isPinned: true, priority: 'urgent', labels: ['vip', 'billing'], assignedAgentId: member.id, aiMode: 'OFF', unreadCount: 2 })
  const cleared = await request({ method: 'PATCH', url: `/api/chat/conversations/${id}`, token: member.token, headers, payload: { assignedAgentId: null } })
  t.equal(cleared.json().assignedAgentId, null)
  t.equal(cleared.json().priority, 'urgent', 'fields not sent stay')
  const repeated = await request({ method: 'PATCH', url: `/api/chat/conversations/${id}`, token: member.token, headers, payload: { labels: ['vip', 'billing', 'vip'] } })
  t.same(repeated.json().labels, ['vip', 'billing'], 'a label is stored once')

  const invalid: Array<[Record<string, unknown>, string]> = [
    [{ priority: 'critical' }, 'priority must be one of low, normal, high, urgent'],
    [{ aiMode: 'MANUAL' }, 'aiMode must be one of OFF, HYBRID, AUTO'],
    [{ labels: Array.from({ length: 51 }, (_, i) => `l${i}`) }, 'labels must be at most 50 labels of 1 to 50 characters'],
    [{ assignedAgentId: 'agent-1' }, 'assignedAgentId must be a user who can use this account']
  ]
  for (const [payload, message] of invalid) {
    const bad = await request({ method: 'PATCH', url: `/api/chat/conversations/${id}`, token: member.token, headers, payload })
    t.equal(bad.statusCode, 400, message)
    t.equal(bad.json().message, message)
  }

  const other = await chat.newMember()
  for (const [method, url] of [['PATCH', `/api/chat/conversations/${id}`], ['POST', `/api/chat/conversations/${id}/read`], ['GET', `/api/chat/conversations/${id}/messages`]] as const) {
    const res = await request({ method, url, token: other.token, payload: method === 'PATCH' ? { isPinned: false } : undefined })
    t.equal(res.statusCode, 404, `${method} ${url} from the default account`)
    t.equal(res.json().message, 'Conversation not found')
  }
  t.same(await (async () => (await request({ method: 'GET', url: '/api/chat/conversations', token: other.token })).json())(), [], 'another account sees none of them')
})

t.test('mark read sets unreadCount to 0', async (t) => {
  const id = byPhone.get('15550000002')!.id
  const res = await request({ method: 'POST', url: `/api/chat/conversations/${id}/read`, token: member.token, headers })
  t.equal(res.statusCode, 200)
  t.equal(res.json().unreadCount, 0)
  t.notOk(phones(await list('?filter=unread')).includes('15550000002'))
})

t.test('history pages backwards through every message with the before cursor', async (t) => {
  const id = byPhone.get('15550000004')!.id
  const seen: string[] = []
  let before: string | undefined
  for (let page = 0; page < 5; page++) {
    const res = await request({ method: 'GET', url: `/api/chat/conversations/${id}/messages?limit=10${before === undefined ? '' : `&before=${before}`}`, token: member.token, headers })
    t.equal(res.statusCode, 200)
    const messages: Array<{ id: string, content: string }> = res.json()
    if (messages.length === 0) break
    seen.unshift(...messages.map((m) => m.content))
    before = messages[0].id
  }
  t.same(seen, Array.from({ length: 25 }, (_, i) => `message ${i + 1}`))
  const bad = await request({ method: 'GET', url: `/api/chat/conversations/${id}/messages?before=nope`, token: member.token, headers })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().message, 'before must be the id of a message of this conversation')
})

t.test('notes: written and listed oldest first, apart from messages, with their author and the mentions of the account\'s people', async (t) => {
  const id = byPhone.get('15550000003')!.id
  const url = `/api/chat/conversations/${id}/notes`
  const heard: string[] = []
  const listening = await chat.app.database.sql.listen('switchboard_chat_changes', (payload) => { heard.push(payload) })
  t.teardown(async () => { await listening.unlisten() })
  const first = await request({ method: 'POST', url, token: member.token, headers, payload: { text: `Call back tomorrow @${member.email}, not @nobody@example.com.`, authorId: 'forged' } })
  t.equal(first.statusCode, 201, first.body)
  t.match(first.json(), { id: String, conversationId: id, text: `Call back tomorrow @${member.email}, not @nobody@example.com.`, authorId: member.id, authorName: member.email, runId: null, createdAt: String })
  t.same(first.json().mentions, [member.id], 'a user of the account is mentioned; an unknown email stays text')
  const second = await request({ method: 'POST', url, token: member.token, headers, payload: { text: 'second' } })
  t.equal(second.statusCode, 201)
  t.same(second.json().mentions, [])

  const listed = await request({ method: 'GET', url, token: member.token, headers })
  t.equal(listed.statusCode, 200)
  t.same(listed.json().map((note: { text: string }) => note.text), [first.json().text, 'second'])
  const messages = await request({ method: 'GET', url: `/api/chat/conversations/${id}/messages`, token: member.token, headers })
  t.same(messages.json().map((message: { content: string }) => message.content), ['read already'], 'a note is no message')
  t.equal(chat.fake.sends().length, 0, 'nothing is sent to the platform')
  await waitFor(async () => heard.length >= 2 ? true : undefined, { what: 'the note.created notifications' })
  t.match(JSON.parse(heard[0]), { kind: 'note.created', phoneNumberId: NUMBER, conversationId: id, noteId: first.json().id })
})

t.test('notes: bounds, and another account\'s conversation answers 404', async (t) => {
  const url = `/api/chat/conversations/${byPhone.get('15550000003')!.id}/notes`
  const invalid: Array<[Record<string, unknown>, string]> = [
    [{ text: '' }, 'text must be 1 to 4000 characters'],
    [{ text: '   ' }, 'text must be 1 to 4000 characters'],
    [{ text: 'x'.repeat(4001) }, 'text must be 1 to 4000 characters'],
    [{}, 'text is required'],
    [{ text: Array.from({ length: 21 }, (_, i) => `@p${i}@example.com`).join(' ') }, 'A note mentions at most 20 people']
  ]
  for (const [payload, message] of invalid) {
    const res = await request({ method: 'POST', url, token: member.token, headers, payload })
    t.equal(res.statusCode, 400, message)
    t.equal(res.json().message, message)
  }
  t.equal((await request({ method: 'POST', url, token: member.token, headers, payload: { text: 'x'.repeat(4000) } })).statusCode, 201, '4000 characters are accepted')

  const other = await chat.newMember()
  for (const method of ['GET', 'POST'] as const) {
    const res = await request({ method, url, token: other.token, payload: method === 'POST' ? { text: 'hi' } : undefined })
    t.equal(res.statusCode, 404, `${method} from the default account`)
    t.equal(res.json().message, 'Conversation not found')
  }
})

t.test('mentions=me lists the conversations with a note mentioning the caller', async (t) => {
  const colleague = await chat.client.newUser(chat.adminToken)
  await chat.linkAccount(colleague.token, NUMBER)
  const stale = byPhone.get('15550000002')!.id
  const note = async (conversationId: string, text: string) => {
    const res = await request({ method: 'POST', url: `/api/chat/conversations/${conversationId}/notes`, token: member.token, headers, payload: { text } })
    t.equal(res.statusCode, 201)
  }
  await note(stale, `@${colleague.email} can you take this?`)
  t.same(phones(await list('?mentions=me')), ['15550000003'], 'the member is mentioned on one conversation only')
  const theirs = await request({ method: 'GET', url: '/api/chat/conversations?mentions=me', token: colleague.token })
  t.same(theirs.json().map((c: ConversationBody) => c.id), [stale])
  t.same(phones(await list('?mentions=me&filter=unread')), [], 'with the other filters')
  const bad = await request({ method: 'GET', url: '/api/chat/conversations?mentions=you', token: member.token, headers })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().message, 'mentions must be one of me')
})

t.test('handoff node', async (t) => {
  const HANDOFF_NUMBER = '200000000000102'
  const userNamed = async (email: string) => {
    const created = await request({ method: 'POST', url: '/api/users', token: chat.adminToken, payload: { email, password: 'member-password' } })
    t.equal(created.statusCode, 201)
    const token = await chat.client.login({ email, password: 'member-password' })
    return { id: created.json().id as string, email, token, accountId: await chat.linkAccount(token, HANDOFF_NUMBER) }
  }
  // Who can use the number: amy and zed (linked), and the admin (any number), who has one open conversation already.
  const amy = await userNamed('amy@example.com')
  const zed = await userNamed('zed@example.com')
  const [admin] = await chat.app.database.sql<Array<{ id: string }>>`select id from users where email = 'admin@example.com'`
  await receive(['15551110001', '15551110002', '15551110003', '15551110004', '15551110005'].map((from) => ({ from, text: 'I need a person' })), HANDOFF_NUMBER)
  const amyHeaders = { 'x-account-id': amy.accountId }
  const conversations: ConversationBody[] = (await request({ method: 'GET', url: '/api/chat/conversations', token: amy.token, headers: amyHeaders })).json()
  const idOf = (phone: string) => conversations.find((c) => c.phone === phone)!.id
  const patch = async (phone: string, payload: Record<string, unknown>) => {
    const res = await request({ method: 'PATCH', url: `/api/chat/conversations/${idOf(phone)}`, token: amy.token, headers: amyHeaders, payload })
    t.equal(res.statusCode, 200, res.body)
  }
  await patch('15551110004', { assignedAgentId: admin.id })
  await patch('15551110001', { labels: ['vip'] })

  const handOff = async (config: Record<string, unknown>, phone: string) => await chat.client.runWorkflow(amy.token, {
    nodes: [{ id: 'handoff', type: 'handoff', config: { phone: '{{triggerData.phone}}', ...config } }]
  }, { phone })

  t.test('assigns (pausing the assistant), merges labels, sets the priority, leaves the workflow\'s note once', async (t) => {
    const run = await handOff({ assignTo: zed.id, labels: ['sales', 'vip'], priority: 'URGENT', note: 'Wants a quote, @zed@example.com' }, '15551110001')
    t.equal(run.status, 'SUCCESS', run.error ?? '')
    const output = run.result.handoff
    t.match(output, { conversationId: idOf('15551110001'), assignedTo: zed.id, labels: ['vip', 'sales'], priority: 'urgent', noteId: /^n[0-9a-f]{23}$/ })
    const conversation = (await request({ method: 'GET', url: '/api/chat/conversations?assigned=me', token: zed.token, headers: { 'x-account-id': zed.accountId } })).json()
    t.match(conversation, [{ id: idOf('15551110001'), assignedAgentId: zed.id, labels: ['vip', 'sales'], priority: 'urgent', assistantPaused: true }])
    const notesUrl = `/api/chat/conversations/${idOf('15551110001')}/notes`
    const notes = (await request({ method: 'GET', url: notesUrl, token: amy.token, headers: amyHeaders })).json()
    t.match(notes, [{ id: output.noteId, text: 'Wants a quote, @zed@example.com', authorId: null, authorName: null, runId: run.id, mentions: [zed.id] }])

    // The node run again after a crash: its idempotency key (run and node) is the same, and so is its note.
    const sender = createChatSender(chat.app.chat, chat.app.conversations)
    const again = await sender.handoff({ userId: amy.id, to: '15551110001', assignTo: zed.id, labels: ['sales'], note: 'Wants a quote, @zed@example.com', runId: run.id }, { idempotencyKey: `${run.id}:handoff` })
    t.equal(again.noteId, output.noteId)
    t.same(again.labels, ['vip', 'sales'])
    t.equal((await request({ method: 'GET', url: notesUrl, token: amy.token, headers: amyHeaders })).json().length, 1, 'the note is written once')
    t.equal(chat.fake.sends().length, 0, 'nothing is sent to the customer')
  })

  t.test('least_busy: the fewest open conversations assigned, ties broken by email', async (t) => {
    // Open and assigned: admin 1 (…0004), amy 0, zed 1 (…0001, the first handoff): amy.
    const first = await handOff({ assignTo: 'least_busy' }, '15551110002')
    t.equal(first.result.handoff?.assignedTo, amy.id, first.error ?? '')
    t.equal(first.result.handoff?.noteId, null, 'no note without one')
    const second = await handOff({ assignTo: 'least_busy' }, '15551110003')
    t.equal(second.result.handoff?.assignedTo, admin.id, 'one each: the first by email')
    const third = await handOff({ assignTo: 'least_busy' }, '15551110001')
    t.equal(third.result.handoff?.assignedTo, zed.id, 'the conversation handed over is not counted: zed stays (a node run again picks the same person)')
    await patch('15551110004', { isArchived: true })
    const fourth = await handOff({ assignTo: 'least_busy' }, '15551110005')
    t.equal(fourth.result.handoff?.assignedTo, admin.id, 'an archived conversation is not counted: one each again')
  })

  t.test('failures: a user who cannot use the account, an unknown one, a customer without a conversation', async (t) => {
    const stranger = await chat.newMember()
    for (const assignTo of [stranger.id, 'nobody']) {
      const run = await handOff({ assignTo }, '15551110002')
      t.equal(run.status, 'FAILED')
      t.equal(run.error, `assignTo must be a user who can use this account: ${assignTo} is not`)
    }
    const run = await handOff({ assignTo: zed.id }, '15559999999')
    t.equal(run.status, 'FAILED')
    t.equal(run.error, 'No conversation with 15559999999 on this account: a handoff hands over a customer who wrote')
  })
})
