import { randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import { waitFor } from '@switchboard/testing/wait'
import type { WorkflowInput } from '@switchboard/testing/client'
import { buildChatTestApp } from '../../apps/api/test/chat-helper.ts'
import { operationsOf } from './openapi.ts'

/**
 * Who may touch what (README, Ownership): a member sees and changes
 * only their own workflows, runs and chat accounts and the conversations of the
 * accounts they can use; someone else's id answers exactly like a missing one
 * (404); user management and the audit log are admin-only (403); an admin sees everything. The
 * worker runs, so events and deliveries are processed; no workflow here has
 * nodes, so runs touch nothing outside.
 */
const chat = await buildChatTestApp(t, { worker: true })
const { request, adminToken } = chat

const A_NUMBER = '200000000000201'
const B_NUMBER = '200000000000202'
const CUSTOMER = '15557650001'
const EVENT = 'order.created'
/** Well-formed (cuid2) and owned by nobody. */
const MISSING_ID = 'z'.repeat(24)

const a = await chat.newMember()
const b = await chat.newMember()

// No nodes: the runs touch nothing outside.
const createWorkflow = async (token: string, input: WorkflowInput): Promise<string> => chat.client.createWorkflow(token, { ...input, nodes: [] })
const aWorkflow = await createWorkflow(a.token, { name: 'A manual', triggerType: 'MANUAL' })
const aEventWorkflow = await createWorkflow(a.token, { name: 'A on order', triggerType: 'EVENT', triggerConfig: { eventName: EVENT } })
const bWorkflow = await createWorkflow(b.token, { name: 'B manual', triggerType: 'MANUAL' })
const bKeywordWorkflow = await createWorkflow(b.token, { name: 'B on hello', triggerType: 'KEYWORD', triggerConfig: { keywords: ['hello'] } })
const aRun = await chat.client.fire(a.token, aWorkflow, { from: 'A' })
const bRun = await chat.client.fire(b.token, bWorkflow, { from: 'B' })
const aCredential: string = (await request({ method: 'POST', url: '/api/automation/credentials', token: a.token, payload: { name: 'a-secret', type: 'bearer', data: { token: 'a-token' } } })).json().id
const aSubscription: string = (await request({ method: 'POST', url: '/api/automation/subscriptions', token: a.token, payload: { url: 'https://hooks.example.com/a', events: ['workflow.run.failed'] } })).json().id
const aAccount = await chat.linkAccount(a.token, A_NUMBER)
const bAccount = await chat.linkAccount(b.token, B_NUMBER)
await chat.receive([{ from: CUSTOMER, text: 'hello A' }], A_NUMBER)
await chat.receive([{ from: CUSTOMER, text: 'hello B' }], B_NUMBER)

interface ConversationBody { id: string, isPinned: boolean, labels: string[], messages: Array<{ id: string }> }
const conversationsOf = async (token: string, accountId: string): Promise<ConversationBody[]> =>
  (await request({ method: 'GET', url: '/api/chat/conversations', token, headers: { 'x-account-id': accountId } })).json()
const [aConversation] = await conversationsOf(a.token, aAccount)
const aMessage = aConversation!.messages[0]!.id

interface Probe {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  url: (id: string) => string
  payload?: Record<string, unknown>
  headers?: (id: string) => Record<string, string>
}

/** B's request on A's resource, beside the same request on an id that does not exist: the answers must be identical 404s. */
async function likeMissing (t: Test, what: string, probe: Probe, aId: string): Promise<void> {
  const send = async (id: string) => request({ method: probe.method, url: probe.url(id), token: b.token, payload: probe.payload, headers: probe.headers?.(id) })
  const [onA, onMissing] = [await send(aId), await send(MISSING_ID)]
  t.equal(onA.statusCode, 404, `${what}: ${onA.body}`)
  t.same(onA.json(), onMissing.json(), `${what} answers like a missing id`)
}

t.test('B cannot read or change A\'s workflows, runs, accounts or conversations: every answer is a missing id\'s 404', async (t) => {
  const workflowProbes: Record<string, Probe> = {
    'GET workflow': { method: 'GET', url: (id) => `/api/automation/workflows/${id}` },
    'PATCH workflow': { method: 'PATCH', url: (id) => `/api/automation/workflows/${id}`, payload: { name: 'taken over' } },
    'DELETE workflow': { method: 'DELETE', url: (id) => `/api/automation/workflows/${id}` },
    'fire workflow': { method: 'POST', url: (id) => `/api/automation/workflows/${id}/fire`, payload: {} },
    'versions of workflow': { method: 'GET', url: (id) => `/api/automation/workflows/${id}/versions` },
    'version of workflow': { method: 'GET', url: (id) => `/api/automation/workflows/${id}/versions/1` },
    'restore workflow version': { method: 'POST', url: (id) => `/api/automation/workflows/${id}/versions/1/restore` },
    'export workflow': { method: 'GET', url: (id) => `/api/automation/workflows/${id}/export` },
    'rename a node of workflow': { method: 'POST', url: (id) => `/api/automation/workflows/${id}/rename-node`, payload: { from: 'a', to: 'b' } },
    'listen for a test request of workflow': { method: 'POST', url: (id) => `/api/automation/workflows/${id}/test-capture` },
    'test capture of workflow': { method: 'GET', url: (id) => `/api/automation/workflows/${id}/test-capture` },
    'bulk retry of workflow': { method: 'POST', url: (id) => `/api/automation/workflows/${id}/runs/retry`, payload: { from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' } }
  }
  for (const [what, probe] of Object.entries(workflowProbes)) await likeMissing(t, what, probe, aWorkflow)

  const credentialProbes: Record<string, Probe> = {
    'GET credential': { method: 'GET', url: (id) => `/api/automation/credentials/${id}` },
    'PATCH credential': { method: 'PATCH', url: (id) => `/api/automation/credentials/${id}`, payload: { name: 'taken-over' } },
    'DELETE credential': { method: 'DELETE', url: (id) => `/api/automation/credentials/${id}` }
  }
  for (const [what, probe] of Object.entries(credentialProbes)) await likeMissing(t, what, probe, aCredential)

  const subscriptionProbes: Record<string, Probe> = {
    'GET subscription': { method: 'GET', url: (id) => `/api/automation/subscriptions/${id}` },
    'PATCH subscription': { method: 'PATCH', url: (id) => `/api/automation/subscriptions/${id}`, payload: { url: 'https://taken.example.com/' } },
    'DELETE subscription': { method: 'DELETE', url: (id) => `/api/automation/subscriptions/${id}` },
    'deliveries of subscription': { method: 'GET', url: (id) => `/api/automation/subscriptions/${id}/deliveries` }
  }
  for (const [what, probe] of Object.entries(subscriptionProbes)) await likeMissing(t, what, probe, aSubscription)

  await likeMissing(t, 'GET run', { method: 'GET', url: (id) => `/api/automation/runs/${id}` }, aRun)
  await likeMissing(t, 'cancel run', { method: 'POST', url: (id) => `/api/automation/runs/${id}/cancel` }, aRun)
  await likeMissing(t, 'retry run', { method: 'POST', url: (id) => `/api/automation/runs/${id}/retry`, payload: {} }, aRun)

  // Routes that act on "the selected account" name it in X-Account-Id.
  const selecting = (id: string) => ({ 'x-account-id': id })
  const accountProbes: Record<string, Probe> = {
    'PATCH account': { method: 'PATCH', url: (id) => `/api/chat/accounts/${id}`, payload: { name: 'taken over' } },
    'DELETE account': { method: 'DELETE', url: (id) => `/api/chat/accounts/${id}` },
    'conversations through A\'s account': { method: 'GET', url: () => '/api/chat/conversations', headers: selecting },
    'templates through A\'s account': { method: 'GET', url: () => '/api/chat/templates', headers: selecting },
    'send through A\'s account': { method: 'POST', url: () => '/api/chat/send/text', payload: { to: CUSTOMER, text: 'hi' }, headers: selecting }
  }
  for (const [what, probe] of Object.entries(accountProbes)) await likeMissing(t, what, probe, aAccount)

  const conversationProbes: Record<string, Probe> = {
    'PATCH conversation': { method: 'PATCH', url: (id) => `/api/chat/conversations/${id}`, payload: { isPinned: true } },
    'read conversation': { method: 'POST', url: (id) => `/api/chat/conversations/${id}/read` },
    'messages of conversation': { method: 'GET', url: (id) => `/api/chat/conversations/${id}/messages` },
    'notes of conversation': { method: 'GET', url: (id) => `/api/chat/conversations/${id}/notes` },
    'note on conversation': { method: 'POST', url: (id) => `/api/chat/conversations/${id}/notes`, payload: { text: 'taken over' } },
    'label conversation': { method: 'POST', url: (id) => `/api/chat/conversations/${id}/labels`, payload: { label: 'taken over' } },
    'unlabel conversation': { method: 'DELETE', url: (id) => `/api/chat/conversations/${id}/labels/vip` }
  }
  for (const [what, probe] of Object.entries(conversationProbes)) {
    await likeMissing(t, `${what} (B's own account)`, probe, aConversation!.id)
    await likeMissing(t, `${what} (X-Account-Id of A's account)`, { ...probe, headers: () => selecting(aAccount) }, aConversation!.id)
  }

  const [aContact] = (await request({ method: 'GET', url: '/api/chat/contacts', token: a.token, headers: selecting(aAccount) })).json()
  const contactProbes: Record<string, Probe> = {
    'label contact': { method: 'POST', url: (id) => `/api/chat/contacts/${id}/labels`, payload: { label: 'taken over' } },
    'unlabel contact': { method: 'DELETE', url: (id) => `/api/chat/contacts/${id}/labels/vip` }
  }
  for (const [what, probe] of Object.entries(contactProbes)) {
    await likeMissing(t, `${what} (B's own account)`, probe, aContact.id)
    await likeMissing(t, `${what} (X-Account-Id of A's account)`, { ...probe, headers: () => selecting(aAccount) }, aContact.id)
  }
})

t.test('A\'s resources are unchanged by B\'s attempts', async (t) => {
  const workflow = await request({ method: 'GET', url: `/api/automation/workflows/${aWorkflow}`, token: a.token })
  t.equal(workflow.statusCode, 200)
  t.equal(workflow.json().name, 'A manual')
  t.equal(workflow.json().runCount, 1, 'B\'s fire and retries started nothing')
  t.not((await request({ method: 'GET', url: `/api/automation/runs/${aRun}`, token: a.token })).json().status, 'CANCELLED')
  const accounts = (await request({ method: 'GET', url: '/api/chat/accounts', token: a.token })).json()
  t.same(accounts.map((account: { id: string, name: string }) => [account.id, account.name]), [[aAccount, `Account ${A_NUMBER}`]])
  const [conversation] = await conversationsOf(a.token, aAccount)
  t.equal(conversation!.isPinned, false)
  t.same(conversation!.labels, [], 'B labelled nothing of A\'s')
})

t.test('owner fields in a body are dropped: nothing can be created for, or handed to, another user', async (t) => {
  const foreignOwner = { userId: b.id, user_id: b.id, ownerId: b.id }
  const created = await request({ method: 'POST', url: '/api/automation/workflows', token: a.token, payload: { name: 'A, claimed for B', triggerType: 'MANUAL', ...foreignOwner } })
  t.equal(created.statusCode, 201)
  const workflow: string = created.json().id
  const patched = await request({ method: 'PATCH', url: `/api/automation/workflows/${aWorkflow}`, token: a.token, payload: foreignOwner })
  t.equal(patched.statusCode, 200)
  const account = await chat.linkAccount(a.token, '200000000000203', foreignOwner)
  for (const [url, id] of [[`/api/automation/workflows/${workflow}`, workflow], [`/api/automation/workflows/${aWorkflow}`, aWorkflow]]) {
    t.equal((await request({ method: 'GET', url, token: a.token })).statusCode, 200, `${id} is still A's`)
    t.equal((await request({ method: 'GET', url, token: b.token })).statusCode, 404, `${id} is not B's`)
  }
  const bAccounts = (await request({ method: 'GET', url: '/api/chat/accounts', token: b.token })).json()
  t.notOk(bAccounts.some((listed: { id: string }) => listed.id === account), 'the account is not B\'s')
  t.equal((await request({ method: 'DELETE', url: `/api/chat/accounts/${account}`, token: a.token })).statusCode, 204, 'it is A\'s to delete')
  t.equal((await request({ method: 'DELETE', url: `/api/automation/workflows/${workflow}`, token: a.token })).statusCode, 204)
})

t.test('lists hold only the caller\'s own resources', async (t) => {
  const list = async (url: string, token: string): Promise<Array<{ id: string, workflowId?: string }>> => (await request({ method: 'GET', url, token })).json()
  const ids = async (url: string, token: string): Promise<string[]> => (await list(url, token)).map((item) => item.id).sort()
  t.same(await ids('/api/automation/workflows', b.token), [bWorkflow, bKeywordWorkflow].sort())
  const bRuns = await list('/api/automation/runs', b.token)
  t.ok(bRuns.some((run) => run.id === bRun), 'B\'s own run is listed')
  t.same(bRuns.filter((run) => run.workflowId !== bWorkflow && run.workflowId !== bKeywordWorkflow), [], 'no run of A\'s')
  t.same(await ids(`/api/automation/runs?workflowId=${aWorkflow}`, b.token), [], 'filtering by A\'s workflow finds nothing')
  t.same(await ids('/api/chat/accounts', b.token), [bAccount])
  t.same(await ids('/api/automation/credentials', b.token), [], 'none of A\'s credentials')
  t.same(await ids('/api/automation/subscriptions', b.token), [], 'none of A\'s subscriptions')
  const bConversations = await conversationsOf(b.token, bAccount)
  t.equal(bConversations.length, 1)
  t.not(bConversations[0]!.id, aConversation!.id)

  // A's message as the cursor of B's own conversation: refused like any foreign cursor, A's history stays unread.
  const page = async (before: string) => request({ method: 'GET', url: `/api/chat/conversations/${bConversations[0]!.id}/messages?before=${before}`, token: b.token })
  const [withA, withMissing] = [await page(aMessage), await page(MISSING_ID)]
  t.equal(withA.statusCode, 400)
  t.same(withA.json(), withMissing.json())
})

t.test('a message to A\'s number starts none of B\'s KEYWORD workflows; one to B\'s number does', async (t) => {
  const workflow = await request({ method: 'GET', url: `/api/automation/workflows/${bKeywordWorkflow}`, token: b.token })
  t.equal(workflow.json().runCount, 1, '"hello A" and "hello B" both match, only B\'s number counts')
})

t.test('B\'s event starts none of A\'s EVENT workflows; A\'s own event does', async (t) => {
  const fromB = await request({ method: 'POST', url: '/api/automation/events', token: b.token, payload: { name: EVENT, payload: {} } })
  t.equal(fromB.statusCode, 202)
  t.same(fromB.json(), { runIds: [] })
  t.equal((await request({ method: 'GET', url: `/api/automation/workflows/${aEventWorkflow}`, token: a.token })).json().runCount, 0)

  const fromA = await request({ method: 'POST', url: '/api/automation/events', token: a.token, payload: { name: EVENT, payload: {} } })
  t.equal(fromA.json().runIds.length, 1, 'the same event from its owner starts it')
})

t.test('members get 403 on every /api/users route and the audit log; the admin manages users', async (t) => {
  const forbidden = { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: 'Forbidden' }
  for (const member of [a, b]) {
    for (const [method, url, payload] of [
      ['GET', '/api/users', undefined],
      ['POST', '/api/users', { email: `x-${randomUUID()}@example.com`, password: 'password1', role: 'admin' }],
      ['DELETE', `/api/users/${member === a ? b.id : a.id}`, undefined],
      ['GET', '/api/audit', undefined],
      ['GET', `/api/audit?actorId=${member === a ? b.id : a.id}`, undefined]
    ] as const) {
      const res = await request({ method, url, token: member.token, payload })
      t.equal(res.statusCode, 403, `${method} ${url}`)
      t.same(res.json(), forbidden)
    }
  }
  const users = await request({ method: 'GET', url: '/api/users?limit=500', token: adminToken })
  t.equal(users.statusCode, 200)
  t.ok([a.id, b.id].every((id) => users.json().some((user: { id: string }) => user.id === id)), 'neither member was deleted; the admin sees both')
})

t.test('the admin sees and acts on every member\'s resources', async (t) => {
  t.equal((await request({ method: 'GET', url: `/api/automation/workflows/${aWorkflow}`, token: adminToken })).statusCode, 200)
  t.equal((await request({ method: 'GET', url: `/api/automation/runs/${aRun}`, token: adminToken })).statusCode, 200)
  const runs = (await request({ method: 'GET', url: '/api/automation/runs', token: adminToken })).json().map((run: { id: string }) => run.id)
  t.ok(runs.includes(aRun) && runs.includes(bRun))
  const workflows = (await request({ method: 'GET', url: '/api/automation/workflows', token: adminToken })).json().map((w: { id: string }) => w.id)
  t.ok([aWorkflow, aEventWorkflow, bWorkflow].every((id) => workflows.includes(id)))
  const accounts = (await request({ method: 'GET', url: '/api/chat/accounts', token: adminToken })).json().map((account: { id: string }) => account.id)
  t.ok(accounts.includes(aAccount) && accounts.includes(bAccount))
  const conversations = await conversationsOf(adminToken, aAccount)
  t.same(conversations.map((c) => c.id), [aConversation!.id])
  const pinned = await request({
    method: 'PATCH', url: `/api/chat/conversations/${aConversation!.id}`, token: adminToken, headers: { 'x-account-id': aAccount }, payload: { isPinned: true }
  })
  t.equal(pinned.statusCode, 200)
  t.equal(pinned.json().isPinned, true)
})

t.test('queue counters are aggregate numbers, the same for every caller', async (t) => {
  const forB = await request({ method: 'GET', url: '/api/automation/queues', token: b.token })
  t.equal(forB.statusCode, 200)
  for (const queue of forB.json().queues) {
    t.same(Object.keys(queue).filter((key) => key !== 'error').sort(), ['active', 'completed', 'delayed', 'failed', 'name', 'waiting'], `${queue.name} carries counters only`)
  }
  const settled = await waitFor(async () => {
    const [first, second] = await Promise.all([b.token, adminToken].map(async (token) => (await request({ method: 'GET', url: '/api/automation/queues', token })).json()))
    return JSON.stringify(first) === JSON.stringify(second) ? first : undefined
  }, { what: 'queue counters to settle' })
  t.equal(settled.queues.length, 7)
})

/**
 * The scope each route needs, by the README's API keys section, written here from its words rather
 * than read from the code: a new route the rules below do not place fails this test until someone
 * decides what a key needs to call it.
 */
function expectedScope (method: string, path: string): string | null {
  const read = method === 'GET'
  if (path.startsWith('/api/auth/')) return null
  if (path.startsWith('/api/users')) return 'users:admin'
  if (path.startsWith('/api/audit')) return 'audit:read'
  if (path.startsWith('/api/automation/subscriptions')) return 'subscriptions:write'
  if (path.endsWith('/fire') || path.endsWith('/runs/retry') || path.endsWith('/test')) return 'runs:write'
  if (path.startsWith('/api/automation/workflows') || path.startsWith('/api/automation/node-types')) return read ? 'workflows:read' : 'workflows:write'
  if (path.startsWith('/api/automation/runs') || path.startsWith('/api/automation/approvals')) return read ? 'runs:read' : 'runs:write'
  if (path === '/api/automation/events') return 'events:write'
  if (path === '/api/automation/queues') return 'queues:read'
  if (path.startsWith('/api/automation/credentials')) return read ? 'credentials:read' : 'credentials:write'
  if (path.startsWith('/api/chat/')) return read ? 'chat:read' : 'chat:write'
  throw new Error(`${method} ${path}: the README's scopes do not place this route; add it to expectedScope`)
}

const ALL_SCOPES = ['workflows:read', 'workflows:write', 'runs:read', 'runs:write', 'events:write', 'queues:read', 'credentials:read',
  'credentials:write', 'chat:read', 'chat:write', 'subscriptions:write', 'mcp', 'audit:read', 'users:admin']

t.test('API keys: every route is open to exactly the keys holding its scope, and routes of no scope to no key', async (t) => {
  const operations = operationsOf((await request({ method: 'GET', url: '/docs/json' })).json())
    .filter((operation) => !operation.isPublic && operation.path.startsWith('/api/'))
  t.ok(operations.length > 60, `${operations.length} routes`)
  const keyOf = async (scopes: string[]): Promise<string> => {
    const res = await request({ method: 'POST', url: '/api/auth/api-keys', token: adminToken, payload: { name: `key ${scopes.length === 1 ? scopes[0] : scopes.length}`, scopes } })
    t.equal(res.statusCode, 201, res.body)
    return res.json().key
  }
  const keys = new Map<string, { only: string, allBut: string }>()
  for (const scope of ALL_SCOPES) keys.set(scope, { only: await keyOf([scope]), allBut: await keyOf(ALL_SCOPES.filter((s) => s !== scope)) })
  const everything = await keyOf(ALL_SCOPES)

  for (const operation of operations) {
    const what = `${operation.method} ${operation.path}`
    const url = operation.path.replace(/:[^/]+/g, MISSING_ID)
    const send = async (token: string) => request({ method: operation.method as 'GET', url, token, headers: { 'x-account-id': MISSING_ID } })
    const scope = expectedScope(operation.method, operation.path)
    if (scope === null) {
      const refused = await send(everything)
      t.equal(refused.statusCode, 403, `${what}: no key, whatever its scopes`)
      continue
    }
    const { only, allBut } = keys.get(scope)!
    const refused = await send(allBut)
    t.equal(refused.statusCode, 403, `${what}: refused without ${scope}`)
    t.same(refused.json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: 'Forbidden' }, `${what}: names nothing`)
    if (operation.streams) continue
    const admitted = await send(only)
    t.notOk([401, 403].includes(admitted.statusCode), `${what}: admitted with ${scope} alone (${admitted.statusCode})`)
  }
})
