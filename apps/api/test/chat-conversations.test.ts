import t from 'tap'
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
