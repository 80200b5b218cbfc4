import t from 'tap'
import { fakeModelEnv, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'
import { waitFor } from '@switchboard/testing/wait'
import { buildChatTestApp } from './chat-helper.ts'

/**
 * Who sent a message (README, The team inbox: who sent a message), through the front door: each kind of
 * sender's messages as the inbox reads them (the conversation list, a conversation's messages, its
 * drafts, a decided draft). The api with its worker in process, the fake chat platform and the fake
 * model provider (its default reply echoes the customer).
 */

const provider = await startFakeModelProvider()
t.teardown(async () => { await provider.close() })
const chat = await buildChatTestApp(t, { worker: true, env: fakeModelEnv(provider) })
const { request, receive } = chat
const member = await chat.newMember()

// A turn starts at once after its message (README, The assistant: bursts).
const settings = await request({ method: 'PUT', url: '/api/chat/accounts/default/assistant', token: chat.adminToken, payload: { instructions: 'We sell bicycles.', debounceMs: 0 } })
t.equal(settings.statusCode, 200, settings.body)

interface Sender { type: string, id: string, runId?: string }
interface Message { id: string, wamid: string | null, direction: string, content: string, status: string | null, replyToId: string | null, agentId: string | null, sender: Sender | null }
interface Conversation { id: string, phone: string, messages: Message[] }
interface Turn { id: string, messageId: string, outcome: string | null, draftMessageId: string | null }

let customers = 0
/** A customer of its own for each test: its own conversation. */
const newCustomer = (): string => `1555300${String(++customers).padStart(4, '0')}`

const call = async (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => {
  const res = await request({ method, url, token: member.token, ...(payload !== undefined && { payload }) })
  if (res.statusCode !== 200 && res.statusCode !== 201) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
  return res.json()
}

const conversationOf = async (phone: string): Promise<Conversation> => waitFor(async () =>
  ((await call('GET', '/api/chat/conversations?limit=500')) as Conversation[]).find((c) => c.phone === phone), { what: `the conversation of ${phone}` })
const messagesOf = async (conversationId: string): Promise<Message[]> => call('GET', `/api/chat/conversations/${conversationId}/messages?limit=500`)
const turnsOf = async (conversationId: string): Promise<Turn[]> => call('GET', `/api/chat/conversations/${conversationId}/turns`)

/** The conversation's messages once one satisfies `found`. */
const messagesOnce = async (conversationId: string, found: (message: Message) => boolean, what: string): Promise<Message[]> =>
  waitFor(async () => { const messages = await messagesOf(conversationId); return messages.some(found) ? messages : undefined }, { what })

t.test('a person\'s sends carry their user; the customer\'s message carries no sender', async (t) => {
  const phone = newCustomer()
  await receive([{ from: phone, name: 'Ana', text: 'hello there' }])
  const sends = [
    ['text', { to: phone, text: 'By text' }],
    ['template', { to: phone, templateName: 'hello_world', templateContent: { body: 'By template' } }],
    ['media', { to: phone, kind: 'image', link: 'https://example.com/bike.jpg', caption: 'By image' }],
    ['interactive', { to: phone, type: 'button', body: 'By buttons', buttons: [{ id: 'a', title: 'A' }] }]
  ] as const
  for (const [kind, payload] of sends) await call('POST', `/api/chat/send/${kind}`, payload)

  const byMember = { type: 'user', id: member.id }
  const conversation = await conversationOf(phone)
  const messages = await messagesOf(conversation.id)
  for (const content of ['By text', 'By template', 'By image', 'By buttons']) {
    t.same(messages.find((m) => m.content === content)?.sender, byMember, `${content}: the member`)
  }
  t.same(conversation.messages.find((m) => m.content === 'By text')?.sender, byMember, 'the conversation list\'s messages carry it too')
  const inbound = messages.find((m) => m.content === 'hello there')
  t.equal(inbound?.direction, 'inbound')
  t.equal(inbound?.sender, null, 'a customer\'s message has none')
})

t.test('every chat node of a workflow sends as the workflow, with its run', async (t) => {
  const owner = await chat.newMember()
  const phone = '{{triggerData.phone}}'
  const workflowId = await chat.client.createWorkflow(owner.token, {
    name: 'every chat node',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['senders'] },
    nodes: [
      { id: 'text', type: 'send_chat', config: { phone, text: 'From send_chat' } },
      { id: 'template', type: 'send_chat_template', config: { phone, templateName: 'hello_world' } },
      { id: 'media', type: 'send_chat_media', config: { phone, kind: 'image', link: 'https://example.com/bike.jpg' } },
      { id: 'buttons', type: 'send_chat_interactive', config: { phone, type: 'button', body: 'Pick one', buttons: [{ id: 'a', title: 'A' }] } },
      { id: 'reply', type: 'ai_reply', config: { phone, mode: 'send' } },
      { id: 'draft', type: 'ai_reply', config: { phone, mode: 'draft' } },
      { id: 'question', type: 'ask', config: { text: 'Which size?' } }
    ]
  })
  const customer = newCustomer()
  await receive([{ from: customer, name: 'Bo', text: 'senders please' }])
  const run = await chat.client.latestRunReaching(owner.token, workflowId, ['WAITING', 'SUCCESS', 'FAILED'])
  t.equal(run.status, 'WAITING', run.error ?? 'the ask waits for its answer')

  const byRun = { type: 'workflow', id: workflowId, runId: run.id }
  const conversation = await conversationOf(customer)
  const messages = await messagesOnce(conversation.id, (m) => m.content === 'Which size?', 'the ask\'s question')
  for (const node of ['text', 'template', 'media', 'buttons', 'reply']) {
    const wamid = (run.result[node] as { wamid: string }).wamid
    t.same(messages.find((m) => m.wamid === wamid)?.sender, byRun, `${node}: the workflow and its run`)
  }
  t.same(messages.find((m) => m.content === 'Which size?')?.sender, byRun, 'ask: the workflow and its run')

  const draftId = (run.result.draft as { draftId: string }).draftId
  const drafts: Message[] = await call('GET', `/api/chat/conversations/${conversation.id}/drafts`)
  t.same(drafts.find((m) => m.id === draftId)?.sender, byRun, 'ai_reply\'s draft: the workflow and its run')
  const approved: Message = await call('POST', `/api/chat/conversations/${conversation.id}/drafts/${draftId}/approve`, {})
  t.match(approved, { id: draftId, status: 'sent', agentId: member.id }, 'approved by the member')
  t.same(approved.sender, byRun, 'an approved draft keeps the sender that wrote it')
})

t.test('the assistant\'s drafts and replies carry the turn that wrote them', async (t) => {
  const phone = newCustomer()
  await receive([{ from: phone, name: 'Cy', text: 'do you sell bicycles?' }])
  const conversation = await conversationOf(phone)
  const [draft] = await waitFor(async () => {
    const drafts: Message[] = await call('GET', `/api/chat/conversations/${conversation.id}/drafts`)
    return drafts.length > 0 ? drafts : undefined
  }, { what: 'the assistant\'s draft' })
  const drafting = (await turnsOf(conversation.id)).find((turn) => turn.draftMessageId === draft!.id)
  t.ok(drafting, 'a turn wrote the draft')
  t.same(draft!.sender, { type: 'assistant', id: drafting!.id }, 'HYBRID: the draft carries its turn')
  const edited: Message = await call('POST', `/api/chat/conversations/${conversation.id}/drafts/${draft!.id}/approve`, { text: 'Yes, city and road bicycles.' })
  t.match(edited, { content: 'Yes, city and road bicycles.', status: 'sent', agentId: member.id })
  t.same(edited.sender, { type: 'assistant', id: drafting!.id }, 'edited and approved, still the assistant\'s')

  await call('PATCH', `/api/chat/conversations/${conversation.id}`, { aiMode: 'AUTO' })
  await receive([{ from: phone, text: 'and helmets?' }])
  const sent = await waitFor(async () => (await turnsOf(conversation.id)).find((turn) => turn.outcome === 'sent'), { what: 'the AUTO turn\'s send' })
  const messages = await messagesOf(conversation.id)
  const reply = messages.find((m) => m.direction === 'outbound' && m.replyToId === sent.messageId)
  t.equal(reply?.status, 'sent', 'AUTO: sent at once')
  t.same(reply?.sender, { type: 'assistant', id: sent.id }, 'AUTO: the reply carries its turn')
})

t.test('a broadcast\'s messages carry the broadcast', async (t) => {
  const phone = newCustomer()
  const broadcast = await call('POST', '/api/chat/broadcasts', { templateName: 'hello_world', recipients: [{ to: phone }] })
  await waitFor(async () => (await call('GET', `/api/chat/broadcasts/${broadcast.id}`)).status === 'done' ? true : undefined, { what: 'the broadcast sent' })
  const [message] = (await conversationOf(phone)).messages
  t.equal(message?.direction, 'outbound')
  t.same(message?.sender, { type: 'broadcast', id: broadcast.id })
})

t.test('consent confirmations carry the kind of keyword they confirm', async (t) => {
  const phone = newCustomer()
  await receive([{ from: phone, text: 'stop' }])
  const { id } = await conversationOf(phone)
  const outbound = (m: Message) => m.direction === 'outbound'
  const [optOut] = (await messagesOnce(id, outbound, 'the opt-out confirmation')).filter(outbound)
  t.match(optOut?.content, /unsubscribed/)
  t.same(optOut?.sender, { type: 'consent', id: 'optOut' })
  await receive([{ from: phone, text: 'START' }])
  const confirmations = (await messagesOnce(id, (m) => outbound(m) && m.id !== optOut!.id, 'the opt-in confirmation')).filter(outbound)
  t.same(confirmations.map((m) => m.sender), [{ type: 'consent', id: 'optOut' }, { type: 'consent', id: 'optIn' }])
})
