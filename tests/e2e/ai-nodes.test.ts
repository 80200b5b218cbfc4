import t from 'tap'
import { deliver, fakeChatEnv, messagesDelivery, newWamid, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { FAKE_MODEL_API_KEY, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { RunBody } from '@switchboard/testing/client'

/**
 * The ai_generate and ai_reply nodes end to end (README, Node types): real api and worker
 * processes, the fake model provider and the fake chat platform. Each test empties the provider's
 * script first, and every customer message here matches a KEYWORD workflow, so the assistant's own
 * turns (which answer only messages no keyword matched) never take a scripted answer.
 */

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'e2e-ai-nodes-app-secret'
const AI_TIMEOUT_MS = 2000

const platform = await startFakeChatPlatform()
const provider = await startFakeModelProvider()
t.teardown(async () => { await Promise.all([platform.close(), provider.close()]) })
const stack = await startStack(t, {
  env: {
    ...fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }),
    AI_API_URL: `${provider.url}/v1`,
    AI_API_KEY: FAKE_MODEL_API_KEY,
    AI_MODEL: 'fake-model',
    AI_TIMEOUT_MS: String(AI_TIMEOUT_MS),
    AI_MAX_RETRIES: '1'
  }
})
const token = await stack.adminToken()
const { client } = stack

const generate = async (config: Record<string, unknown>, triggerData: unknown = {}): Promise<RunBody> =>
  client.runWorkflow(token, { name: 'ask the model', nodes: [{ id: 'ask', type: 'ai_generate', config }] }, triggerData, { timeoutMs: 30_000 })

interface Message { id: string, status: string | null, content: string, direction: string, agentName: string | null, wamid: string | null }
interface Conversation { id: string, phone: string, pendingApprovalCount: number, messages: Message[] }

async function say (phone: string, text: string, timestamp?: number): Promise<void> {
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: phone, name: 'Mia', text, wamid: newWamid(), timestamp }]), APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
}

async function conversationOf (phone: string): Promise<Conversation> {
  return waitFor(async () => {
    const { body } = await stack.call('GET', '/api/chat/conversations?limit=500', { token })
    return (body as Conversation[]).find((c) => c.phone === phone)
  }, { what: `the conversation of ${phone}` })
}

/** The workflow's `count`th run, once it ended. */
async function endedRun (workflowId: string, count: number): Promise<RunBody> {
  const summary = await waitFor(async () => {
    const runs = await client.runsOf(token, workflowId)
    return runs.length >= count && ['SUCCESS', 'FAILED'].includes(runs[runs.length - count]!.status) ? runs[runs.length - count] : undefined
  }, { what: `run ${count} of ${workflowId} to end`, timeoutMs: 30_000 })
  return client.getRun(token, summary!.id)
}

const sendsTo = (phone: string) => platform.sends().filter((send) => (send.body as { to?: string }).to === phone)

t.test('ai_generate: the rendered system and prompt reach the provider; the answer is the node\'s text', async (t) => {
  provider.reset()
  provider.script({ reply: 'Positive.' })
  const run = await generate(
    { system: 'You sort feedback for {{triggerData.shop}}.', prompt: 'Is this positive? {{triggerData.text}}' },
    { shop: 'Bikes of Berlin', text: 'Great bike, fast delivery!' }
  )
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.result.ask, { text: 'Positive.', model: 'fake-model' })
  t.ok(run.result.ask.tokensIn > 0 && run.result.ask.tokensOut > 0, 'the provider\'s token counts')
  const [request] = provider.requests
  t.equal(provider.requests.length, 1)
  t.equal(request!.headers.authorization, `Bearer ${FAKE_MODEL_API_KEY}`)
  t.equal(request!.body.model, 'fake-model')
  t.equal(request!.body.max_tokens, 1024, 'AI_MAX_OUTPUT_TOKENS by default')
  t.same(request!.body.messages, [
    { role: 'system', content: 'You sort feedback for Bikes of Berlin.' },
    { role: 'user', content: 'Is this positive? Great bike, fast delivery!' }
  ])
  t.notOk('response_format' in request!.body)
  t.ok(run.logs.some((line) => line.message === 'Asking fake-model (attempt 1)'), 'the call is logged before it is made')
  t.ok(run.logs.some((line) => /^fake-model answered: \d+ tokens in, \d+ out$/.test(line.message)))
})

const TICKET_SCHEMA = {
  type: 'object',
  properties: { category: { type: 'string', enum: ['billing', 'bug', 'other'] }, urgent: { type: 'boolean' } },
  required: ['category'],
  additionalProperties: false
}

t.test('ai_generate json: an answer matching the schema is the node\'s JSON; the schema goes to the provider', async (t) => {
  provider.reset()
  provider.script({ reply: '{"category":"bug","urgent":true}' })
  const run = await generate({ prompt: 'Classify: {{triggerData.ticket}}', output: 'json', jsonSchema: TICKET_SCHEMA, maxOutputTokens: 200 }, { ticket: 'The app crashes' })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.ask.json, { category: 'bug', urgent: true })
  t.notOk('text' in run.result.ask)
  const [request] = provider.requests
  t.match(request!.body.response_format, { type: 'json_schema', json_schema: { schema: TICKET_SCHEMA } })
  t.equal(request!.body.max_tokens, 200)
  t.same(request!.body.messages, [{ role: 'user', content: 'Classify: The app crashes' }], 'with a schema, no system prompt of its own')
})

t.test('ai_generate json: an answer outside the schema fails the run naming the first problem', async (t) => {
  provider.reset()
  provider.script({ reply: '{"category":"weather"}' })
  const run = await generate({ prompt: 'Classify: x', output: 'json', jsonSchema: TICKET_SCHEMA })
  t.equal(run.status, 'FAILED')
  t.match(run.error, /^The model's JSON does not match jsonSchema: \/category /)
  t.same(run.result.ask, undefined, 'no output')
})

t.test('ai_generate json: an answer that is not JSON fails the run; one fenced as JSON is parsed', async (t) => {
  provider.reset()
  provider.script({ reply: 'Sure! The category is bug.' }, { reply: '```json\n{"category":"billing"}\n```' })
  const failed = await generate({ prompt: 'Classify: x', output: 'json' })
  t.equal(failed.status, 'FAILED')
  t.equal(failed.error, 'The model\'s answer is not JSON: "Sure! The category is bug."')
  t.match(provider.requests[0]!.body.messages[0], { role: 'system', content: /Answer with one JSON value and nothing else/ }, 'without a schema the model is asked for JSON only')
  const fenced = await generate({ prompt: 'Classify: x', output: 'json' })
  t.equal(fenced.status, 'SUCCESS', fenced.error ?? '')
  t.same(fenced.result.ask.json, { category: 'billing' })
})

t.test('a 429 is retried by the client after its Retry-After, and the run succeeds', async (t) => {
  provider.reset()
  provider.script({ status: 429, retryAfterSeconds: 0.2 }, { reply: 'after the wait' })
  const run = await generate({ prompt: 'hello' })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.equal(run.result.ask.text, 'after the wait')
  t.equal(provider.requests.length, 2)
})

t.test('a provider failing with 500 fails the run with the provider\'s failure; the node\'s retry tries again, a refusal it does not', async (t) => {
  provider.reset()
  provider.script({ status: 500 }, { status: 500 })
  const failed = await generate({ prompt: 'hello' })
  t.equal(failed.status, 'FAILED')
  t.match(failed.error, /^The AI model call failed: the provider failed: 500 /)
  t.equal(provider.requests.length, 2, 'the client\'s one retry (AI_MAX_RETRIES), nothing more without the node\'s retry')

  provider.reset()
  provider.script({ status: 500 }, { status: 500 }, { reply: 'second attempt' })
  const retried = await generate({ prompt: 'hello', retry: { attempts: 2, backoffMs: 10 } })
  t.equal(retried.status, 'SUCCESS', retried.error ?? '')
  t.equal(retried.result.ask.text, 'second attempt')
  t.ok(retried.logs.some((line) => line.level === 'WARN' && /the provider failed: 500 .*; retrying in 10ms \(1 of 1\)$/.test(line.message)), 'a WARN line for the retry')

  provider.reset()
  provider.script({ status: 400, error: { message: 'Invalid model' } })
  const refused = await generate({ prompt: 'hello', retry: { attempts: 3, backoffMs: 10 } })
  t.equal(refused.status, 'FAILED')
  t.match(refused.error, /^The AI model call failed: the provider refused the call: 400 Invalid model/)
  t.equal(provider.requests.length, 1, 'a refusal is not retried')
})

t.test('a provider that never answers fails the run within AI_TIMEOUT_MS (and the client\'s one retry)', async (t) => {
  provider.reset()
  provider.script({ hang: true }, { hang: true })
  const run = await generate({ prompt: 'hello' })
  t.equal(run.status, 'FAILED')
  t.match(run.error, /did not answer in time \(AI_TIMEOUT_MS\)/)
  t.equal(provider.requests.length, 2)
  t.ok(run.durationMs! >= AI_TIMEOUT_MS && run.durationMs! < 4 * AI_TIMEOUT_MS + 5000, `ended after ${run.durationMs}ms`)
})

t.test('a 10 MB answer fails the run as too large; the worker goes on: the next run succeeds', async (t) => {
  provider.reset()
  const huge10MB = { rawBody: JSON.stringify({ id: 'x', object: 'chat.completion', model: 'fake-model', choices: [{ index: 0, message: { role: 'assistant', content: 'y'.repeat(10 * 1024 * 1024) }, finish_reason: 'stop' }] }) }
  // Twice: whether or not the client asks again, every answer it reads is too large.
  provider.script(huge10MB, huge10MB)
  const huge = await generate({ prompt: 'hello' })
  t.equal(huge.status, 'FAILED')
  t.match(huge.error, /^The AI model call failed: the provider's answer is .*more than AI_MAX_RESPONSE_BYTES/)

  provider.reset()
  provider.script({ reply: 'still here' })
  const next = await generate({ prompt: 'hello again' })
  t.equal(next.status, 'SUCCESS', next.error ?? '')
  t.equal(next.result.ask.text, 'still here')
})

t.test('a node config the type refuses is a 400 naming the node when the workflow is saved', async (t) => {
  const save = async (node: Record<string, unknown>) => await stack.call('POST', '/api/automation/workflows', {
    token,
    body: { name: 'bad ai node', triggerType: 'MANUAL', nodes: [{ id: 'classify', ...node }] }
  })
  const refusals: Array<[Record<string, unknown>, string]> = [
    [{ type: 'ai_generate', config: { prompt: 'x', output: 'json', jsonSchema: { type: 'object', properties: { a: { type: 'string', pattern: '(a+)+$' } } } } }, 'Node classify: jsonSchema may not use "pattern"'],
    [{ type: 'ai_generate', config: { prompt: 'x', output: 'json', jsonSchema: { type: 'array', items: { type: 'string' } } } }, 'Node classify: jsonSchema must have type "object"'],
    [{ type: 'ai_generate', config: { prompt: 'x', output: 'json', jsonSchema: { type: 'object', description: 'x'.repeat(9000) } } }, 'Node classify: jsonSchema must be at most 8192 bytes of JSON'],
    [{ type: 'ai_generate', config: { prompt: 'x', jsonSchema: TICKET_SCHEMA } }, 'Node classify: jsonSchema is only for output json'],
    [{ type: 'ai_generate', config: { output: 'text' } }, 'Node classify: config prompt is required'],
    [{ type: 'ai_reply', config: { phone: '{{triggerData.phone}}', mode: 'shout' } }, 'Node classify: config.mode must be one of draft, send, text'],
    [{ type: 'ai_reply', config: { phone: '{{triggerData.phone}}', conversationHistory: 51 } }, 'Node classify: config.conversationHistory must be <= 50 (or a template)']
  ]
  for (const [node, message] of refusals) {
    const res = await save(node)
    t.equal(res.status, 400, message)
    t.equal(res.body.message, message)
  }
})

let customers = 0
const newCustomer = (): string => `1555200${String(++customers).padStart(4, '0')}`

t.test('ai_reply draft (the default), from a KEYWORD workflow: the Assistant\'s draft waits in the inbox, nothing is sent', async (t) => {
  provider.reset()
  const workflowId = await client.createWorkflow(token, {
    name: 'refund drafts',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['refund'] },
    nodes: [{ id: 'reply', type: 'ai_reply', config: { phone: '{{triggerData.phone}}', instructions: 'We sell bicycles. Refunds take 5 days.', conversationHistory: 5 } }]
  })
  const phone = newCustomer()
  provider.script({ reply: 'Sorry to hear that! Your refund takes 5 days.' })
  await say(phone, 'I want a refund')
  const run = await endedRun(workflowId, 1)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  const conversation = await conversationOf(phone)
  t.match(run.result.reply, { text: 'Sorry to hear that! Your refund takes 5 days.', conversationId: conversation.id, draftId: /^d[0-9a-f]{23}$/, model: 'fake-model' })

  const [request] = provider.requests
  t.equal(provider.requests.length, 1, 'one model call: the keyword matched, so the assistant took no turn')
  const [system, ...history] = request!.body.messages
  t.match(system, { role: 'system', content: /customer service assistant[\s\S]*The business's instructions:\nWe sell bicycles\. Refunds take 5 days\.$/ })
  t.same(history, [{ role: 'user', content: 'I want a refund' }])

  const { body: drafts } = await stack.call('GET', `/api/chat/conversations/${conversation.id}/drafts`, { token })
  t.equal(drafts.length, 1)
  t.match(drafts[0], { id: run.result.reply.draftId, status: 'pending_approval', direction: 'outbound', content: 'Sorry to hear that! Your refund takes 5 days.', agentName: 'Assistant', wamid: null })
  t.equal(conversation.pendingApprovalCount, 1)
  t.equal(sendsTo(phone).length, 0, 'nothing reached the platform')
  t.same((await stack.call('GET', `/api/chat/conversations/${conversation.id}/turns`, { token })).body, [], 'no assistant turn')

  const approved = await stack.call('POST', `/api/chat/conversations/${conversation.id}/drafts/${drafts[0].id}/approve`, { token, body: {} })
  t.equal(approved.status, 200, 'staff approve it as any draft')
  t.equal(sendsTo(phone).length, 1)
  t.equal((await conversationOf(phone)).pendingApprovalCount, 0)
})

t.test('ai_reply draft for a number with no conversation fails before asking the model', async (t) => {
  provider.reset()
  const run = await client.runWorkflow(token, { nodes: [{ id: 'reply', type: 'ai_reply', config: { phone: '15559990000' } }] })
  t.equal(run.status, 'FAILED')
  t.equal(run.error, 'No conversation with 15559990000 on this account: a draft answers a customer who wrote')
  t.equal(provider.requests.length, 0)
})

t.test('ai_reply send: the reply goes through the platform; the next message\'s run reads it as the assistant\'s; text mode only returns one', async (t) => {
  provider.reset()
  const workflowId = await client.createWorkflow(token, {
    name: 'delivery answers',
    triggerType: 'KEYWORD',
    triggerConfig: { keywords: ['deliver'] },
    nodes: [{ id: 'reply', type: 'ai_reply', config: { phone: '{{triggerData.phone}}', mode: 'send' } }]
  })
  const phone = newCustomer()
  provider.script({ reply: 'We deliver within 3 days.' })
  await say(phone, 'Do you deliver?')
  const first = await endedRun(workflowId, 1)
  t.equal(first.status, 'SUCCESS', first.error ?? '')
  t.match(first.result.reply, { kind: 'text', to: phone, wamid: /^wamid\./, text: 'We deliver within 3 days.', model: 'fake-model' })
  const sends = sendsTo(phone)
  t.equal(sends.length, 1)
  t.match(sends[0]!.body, { type: 'text', text: { body: 'We deliver within 3 days.' } })
  const conversation = await conversationOf(phone)
  t.match(conversation.messages.at(-1), { direction: 'outbound', content: 'We deliver within 3 days.', agentName: 'Assistant', status: 'sent', wamid: first.result.reply.wamid })
  t.equal(conversation.pendingApprovalCount, 0)

  // Stamped in the future, the platform's time is clamped to its arrival: after the reply, whatever the clock's second.
  provider.script({ reply: 'Yes, to Berlin too.' })
  await say(phone, 'Do you deliver to Berlin?', Math.floor(Date.now() / 1000) + 60)
  const second = await endedRun(workflowId, 2)
  t.equal(second.status, 'SUCCESS', second.error ?? '')
  t.same(provider.requests[1]!.body.messages.slice(1), [
    { role: 'user', content: 'Do you deliver?' },
    { role: 'assistant', content: 'We deliver within 3 days.' },
    { role: 'user', content: 'Do you deliver to Berlin?' }
  ], 'the conversation so far, oldest first')
  t.equal(sendsTo(phone).length, 2)

  provider.script({ reply: 'A suggested answer.' })
  const text = await client.runWorkflow(token, {
    nodes: [{ id: 'suggest', type: 'ai_reply', config: { phone: '{{triggerData.phone}}', mode: 'text', conversationHistory: 2 } }]
  }, { phone })
  t.equal(text.status, 'SUCCESS', text.error ?? '')
  t.match(text.result.suggest, { text: 'A suggested answer.', model: 'fake-model' })
  t.notOk('draftId' in text.result.suggest || 'wamid' in text.result.suggest)
  t.same(provider.requests[2]!.body.messages.slice(1), [
    { role: 'user', content: 'Do you deliver to Berlin?' },
    { role: 'assistant', content: 'Yes, to Berlin too.' }
  ], 'conversationHistory: the latest two')
  t.equal(sendsTo(phone).length, 2, 'nothing more sent')
  t.equal((await conversationOf(phone)).pendingApprovalCount, 0, 'nothing drafted')
})
