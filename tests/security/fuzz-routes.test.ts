import t from 'tap'
import fc from 'fast-check'
import { NODE_TYPES } from '@switchboard/core/engine'
import { createLogger } from '@switchboard/core/logger'
import { FAKE_ACCESS_TOKEN, messagesDelivery, signature, signedDelivery } from '@switchboard/testing/fake-chat-platform'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { waitFor } from '@switchboard/testing/wait'
import type { WorkflowInput } from '@switchboard/testing/client'
import { startWorker } from '@switchboard/worker/worker'
import { APP_SECRET, buildChatTestApp, DEFAULT_PHONE_NUMBER_ID } from '../../apps/api/test/chat-helper.ts'
import { errorBodyProblem, isRelayedPlatformError } from './error-body.ts'
import { hostileRequests, type FuzzContext, type HostileRequest } from './hostile-requests.ts'
import { operationsOf } from './openapi.ts'

/**
 * Property: whatever arrives, in params, query, body, content type or headers,
 * the API answers below 500 (bar the chat platform's own refusals, which it
 * relays as 500/502), and every error carries its error body (README, Conventions).
 * Seeded, so a failure reproduces; FUZZ_RUNS and FUZZ_SEED explore further.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 40)
const SEED = Number(process.env.FUZZ_SEED ?? 20261123)

const { app, request, adminToken, newMember, linkAccount, config, client } = await buildChatTestApp(t)
const MEMBER_PHONE_NUMBER_ID = '200000000001'
const CUSTOMER = '15557654321'

const member = await newMember()
const memberAccountId = await linkAccount(member.token, MEMBER_PHONE_NUMBER_ID)
const throwaway = await newMember()

// Without nodes: no run of these does anything.
const createWorkflow = async (token: string, input: WorkflowInput): Promise<string> => client.createWorkflow(token, { ...input, nodes: [] })
const manualId = await createWorkflow(adminToken, { name: 'fuzz manual', triggerType: 'MANUAL' })
const workflowIds = [
  manualId,
  await createWorkflow(adminToken, { name: 'fuzz webhook', triggerType: 'WEBHOOK' }),
  await createWorkflow(adminToken, { name: 'fuzz event', triggerType: 'EVENT', triggerConfig: { eventName: 'fuzz' } }),
  await createWorkflow(member.token, { name: 'member manual', triggerType: 'MANUAL' })
]
const runId = await client.fire(adminToken, manualId)

// Conversations come from inbound deliveries, which the worker records. It runs only for
// this: during the fuzzing, runs of generated workflows must not execute (their nodes could
// name any address), so they stay PENDING.
const worker = await startWorker(config, createLogger('silent', 'worker'))
const conversationsOf = async (token: string, accountId: string): Promise<Array<{ id: string, messages: Array<{ id: string }> }>> =>
  (await request({ method: 'GET', url: '/api/chat/conversations', token, headers: { 'x-account-id': accountId } })).json()
async function deliver (phoneNumberId: string): Promise<void> {
  const { body, headers } = signedDelivery(messagesDelivery(phoneNumberId, [{ from: CUSTOMER, text: 'hello' }]), APP_SECRET)
  await app.inject({ method: 'POST', url: '/webhook/chat', payload: body, headers })
}
await deliver(DEFAULT_PHONE_NUMBER_ID)
await deliver(MEMBER_PHONE_NUMBER_ID)
const conversations = [
  ...await waitFor(async () => { const found = await conversationsOf(adminToken, 'default'); return found.length > 0 ? found : undefined }, { what: 'default conversation' }),
  ...await waitFor(async () => { const found = await conversationsOf(member.token, memberAccountId); return found.length > 0 ? found : undefined }, { what: 'member conversation' })
]
await worker.close()

const subscriptionId: string = (await request({ method: 'POST', url: '/api/automation/subscriptions', token: member.token, payload: { url: 'https://hooks.example.com/fuzz', events: ['workflow.run.failed'] } })).json().id
const conversationIds = conversations.map((c) => c.id)
const messageIds = conversations.flatMap((c) => c.messages.map((m) => m.id))

const context: FuzzContext = {
  knownIds: [...workflowIds, runId, memberAccountId, throwaway.id, subscriptionId, ...conversationIds, ...messageIds, 'default'],
  accountIds: [memberAccountId, 'default'],
  authorizations: [`Bearer ${adminToken}`, `Bearer ${member.token}`],
  samples: {
    accessToken: [FAKE_ACCESS_TOKEN],
    phoneNumberId: [DEFAULT_PHONE_NUMBER_ID, MEMBER_PHONE_NUMBER_ID, '300000000003'],
    // A chat send's recipient; a bulk retry's end (a range holding runs, or its ends swapped).
    to: [CUSTOMER, '+1 555 765 4321', new Date(Date.now() + 3_600_000).toISOString(), '1999-01-01T00:00:00Z'],
    templateName: ['hello_world', 'order_update'],
    lang: ['en_US', 'ar'],
    name: ['fuzz'],
    email: [TEST_ADMIN.email],
    password: [TEST_ADMIN.password],
    workflowId: workflowIds,
    before: messageIds,
    from: [new Date(Date.now() - 3_600_000).toISOString(), '2999-01-01T00:00:00Z'],
    version: ['current', 'original'],
    // Event subscriptions: catalogue names and others, URLs the guard refuses, secrets of every shape.
    events: [['workflow.run.failed'], ['chat.message.status', 'chat.message.status'], ['nope'], []],
    url: ['https://hooks.example.com/x', 'http://169.254.169.254/', 'http://[::1]/', 'ftp://x/', 'http://u:p@x.example/'],
    secret: [`whsec_${Buffer.alloc(32, 1).toString('base64')}`, 'whsec_', 'whsec_!!!!'],
    // Workflow definitions: real node types, ids that collide or dangle, trigger and node configs near the edge.
    type: [...NODE_TYPES],
    id: ['n1', 'n2'],
    next: ['n1', 'n2', 'n9'],
    triggerConfig: [
      { eventName: 'fuzz' }, { eventName: 5 }, { cronExpression: '* * * * *' }, { cronExpression: '* * * * * *' },
      { cronExpression: '0 0 31 2 *' }, { cronExpression: 'garbage' }, { cronExpression: '* * * * *', timezone: 'Mars/Olympus' },
      { keywords: ['hi'], match: 'exact' }, { keywords: 'hi' }, { keywords: [] }
    ],
    config: [
      { seconds: 1e12 }, { days: -1 }, { until: 'garbage' }, { until: '{{triggerData.when}}' },
      { url: 'http://127.0.0.1:1/', method: 'TRACE', timeoutMs: 1e12, retries: 1e9 }, { url: 'not a url' },
      { field: 'x', operator: 'in', value: 'notarray' }, { cases: { a: 'n9' }, default: 'n1' }, { values: { a: '{{x}}' } },
      { phone: '{{triggerData.phone}}', text: 'hi' }, { secret: '', header: 'x', algorithm: 'md5', encoding: 'utf16' }
    ],
    edges: [[{ source: 'n1', target: 'n2' }], [{ source: 'n2', target: 'n1' }], 'garbage', [null], [{ source: 1 }], {}]
  },
  signDelivery: (body) => signature(body, APP_SECRET)
}

/** Why an answer breaks the property, or undefined. */
function answerProblem (status: number, body: string): string | undefined {
  if (status >= 500 && !isRelayedPlatformError(status, body)) return `answered ${status}: ${body.slice(0, 300)}`
  return status >= 400 ? errorBodyProblem(status, body) : undefined
}

const describe = (req: HostileRequest): string => JSON.stringify({ ...req, payload: typeof req.payload === 'string' ? req.payload.slice(0, 500) : req.payload })

const operations = operationsOf((await request({ method: 'GET', url: '/docs/json' })).json())
// An event stream's 200 never completes, so its answers cannot be collected: its refusals are
// tested with the stream itself (tests/e2e/chat-team-inbox.test.ts).
const answering = operations.filter((op) => !op.streams)
// Deletes last, so that the resources the other routes aim at still exist while they are fuzzed.
const ordered = [...answering.filter((op) => op.method !== 'DELETE'), ...answering.filter((op) => op.method === 'DELETE')]

t.test('the fuzzed routes are every route of the OpenAPI document', async (t) => {
  t.ok(operations.length >= 30, `${operations.length} operations`)
  t.ok(operations.some((op) => op.path === '/api/chat/conversations/:id/messages' && op.method === 'GET'))
  t.same(operations.filter((op) => op.streams).map((op) => `${op.method} ${op.path}`), ['GET /api/chat/events'], 'all but the event stream')
})

for (const operation of ordered) {
  t.test(`${operation.method} ${operation.path}: never a 5xx, every error in the API's error shape`, async (t) => {
    const statuses = new Map<number, number>()
    // fc.assert throws the shrunk counterexample when the property fails.
    await fc.assert(fc.asyncProperty(hostileRequests(operation, context), async (req) => {
      const res = await app.inject(req)
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      const problem = answerProblem(res.statusCode, res.body)
      if (problem !== undefined) throw new Error(`${problem}\nrequest: ${describe(req)}`)
    }), { seed: SEED, numRuns: RUNS })
    const answered = [...statuses.values()].reduce((sum, count) => sum + count, 0)
    t.ok(answered >= RUNS, `${answered} requests answered: ${JSON.stringify(Object.fromEntries(statuses))}`)
  })
}
