import t from 'tap'
import OpenAI, {
  APIConnectionTimeoutError, AuthenticationError, BadRequestError, InternalServerError, RateLimitError, type ClientOptions
} from 'openai'
import { FAKE_MODEL_API_KEY, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'

// The fake is driven through the official client, as the service drives a real provider.
const provider = await startFakeModelProvider()
t.teardown(async () => { await provider.close() })
t.beforeEach(() => { provider.reset() })

const clientOf = (options: ClientOptions = {}): OpenAI =>
  new OpenAI({ apiKey: FAKE_MODEL_API_KEY, baseURL: `${provider.url}/v1`, maxRetries: 0, ...options })
const client = clientOf()
const user = (content: string): OpenAI.ChatCompletionMessageParam => ({ role: 'user', content })
/** What a call rejected with (undefined if it did not), for checking its class and fields. */
const rejection = async (call: Promise<unknown>): Promise<unknown> => call.then(() => undefined, (err: unknown) => err)
const post = async (body: unknown): Promise<Response> => fetch(`${provider.url}/v1/chat/completions`, {
  method: 'POST',
  headers: { authorization: `Bearer ${FAKE_MODEL_API_KEY}`, 'content-type': 'application/json' },
  body: JSON.stringify(body)
})

t.test('a scripted reply, then the default echo', async (t) => {
  provider.script({ reply: 'Your table is booked.' })
  const completion = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'system', content: 'Be brief.' }, user('Table for two?')], temperature: 0 })
  t.match(completion, {
    id: /^chatcmpl-/,
    object: 'chat.completion',
    model: 'fake-model',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Your table is booked.', refusal: null }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: Math.ceil('Be brief.Table for two?'.length / 4), completion_tokens: Math.ceil('Your table is booked.'.length / 4) }
  })
  t.equal(completion.usage?.total_tokens, (completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0))
  t.equal(provider.pending(), 0)

  const echoed = await client.chat.completions.create({ model: 'fake-model', messages: [user('Hello?')] })
  t.equal(echoed.choices[0].message.content, 'Echo: Hello?')
  const recorded = await provider.waitForRequests(2)
  t.equal(recorded[0].headers.authorization, `Bearer ${FAKE_MODEL_API_KEY}`)
  t.match(recorded[0].body, { model: 'fake-model', temperature: 0, messages: [{ role: 'system' }, { role: 'user', content: 'Table for two?' }] })
})

t.test('tool calls round trip', async (t) => {
  provider.script(
    { toolCalls: [{ name: 'lookup_order', arguments: { orderId: 'A1' } }, { name: 'broken', arguments: '{"not json' }] },
    { reply: 'Order A1 has shipped.' }
  )
  const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup_order', description: 'Finds an order', parameters: { type: 'object', properties: { orderId: { type: 'string' } } } } }]
  const messages: OpenAI.ChatCompletionMessageParam[] = [user('Where is order A1?')]
  const first = await client.chat.completions.create({ model: 'fake-model', messages, tools, tool_choice: 'auto' })
  const { message, finish_reason: finishReason } = first.choices[0]
  t.equal(finishReason, 'tool_calls')
  t.equal(message.content, null)
  t.match(message.tool_calls, [
    { id: /^call_/, type: 'function', function: { name: 'lookup_order', arguments: '{"orderId":"A1"}' } },
    { type: 'function', function: { name: 'broken', arguments: '{"not json' } }
  ])

  messages.push(message, ...(message.tool_calls ?? []).map((call) => ({ role: 'tool' as const, tool_call_id: call.id, content: 'shipped' })))
  const second = await client.chat.completions.create({ model: 'fake-model', messages, tools })
  t.equal(second.choices[0].message.content, 'Order A1 has shipped.')
  t.same(provider.requests[1].body.tools, tools)

  const stray = await rejection(client.chat.completions.create({ model: 'fake-model', messages: [user('hi'), { role: 'tool', tool_call_id: 'call_unknown', content: 'x' }] }))
  t.type(stray, BadRequestError)
  t.match(stray, { status: 400, param: 'messages.[1].role', message: /messages with role 'tool' must be a response to a preceeding message with 'tool_calls'/ })
  const unanswered = client.chat.completions.create({ model: 'fake-model', messages: messages.slice(0, 3) })
  await t.rejects(unanswered, { status: 400, message: /did not have response messages/ })
})

t.test('a wrong key answers 401 and takes no step', async (t) => {
  provider.script({ reply: 'not for you' })
  const wrong = await rejection(clientOf({ apiKey: 'sk-wrong-key-123456' }).chat.completions.create({ model: 'fake-model', messages: [user('hi')] }))
  t.type(wrong, AuthenticationError)
  t.match(wrong, { status: 401, code: 'invalid_api_key', type: 'invalid_request_error', message: /^401 Incorrect API key provided: sk-\*+3456\./ })
  t.equal(provider.pending(), 1)
})

t.test('429 with Retry-After: refused without retries, retried by the client otherwise', async (t) => {
  provider.script({ status: 429, retryAfterSeconds: 0.05 })
  const error = await rejection(client.chat.completions.create({ model: 'fake-model', messages: [user('hi')] })) as RateLimitError
  t.type(error, RateLimitError)
  t.match(error, { status: 429, code: 'rate_limit_exceeded', type: 'requests', message: /Rate limit reached for requests/, requestID: /^req_/ })
  t.equal(error.headers?.get('retry-after'), '1')
  t.equal(error.headers?.get('retry-after-ms'), '50')

  provider.reset()
  provider.script({ status: 429, retryAfterSeconds: 0.05 }, { reply: 'after the retry' })
  const retried = await clientOf({ maxRetries: 1 }).chat.completions.create({ model: 'fake-model', messages: [user('hi')] })
  t.equal(retried.choices[0].message.content, 'after the retry')
  t.equal(provider.requests.length, 2)
})

t.test('500 has the provider error body', async (t) => {
  provider.script({ status: 500 }, { status: 500 })
  t.type(await rejection(client.chat.completions.create({ model: 'fake-model', messages: [user('hi')] })), InternalServerError)
  const res = await post({ model: 'fake-model', messages: [user('hi')] })
  t.equal(res.status, 500)
  t.same(await res.json(), { error: { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', param: null, code: null } })
})

t.test('delays, hangs given up by the client, and close while hanging', async (t) => {
  provider.script({ delayMs: 50, then: { reply: 'late' } }, { hang: true })
  const late = await client.chat.completions.create({ model: 'fake-model', messages: [user('hi')] })
  t.equal(late.choices[0].message.content, 'late')
  t.type(await rejection(clientOf({ timeout: 300 }).chat.completions.create({ model: 'fake-model', messages: [user('hi')] })), APIConnectionTimeoutError)
  const after = await client.chat.completions.create({ model: 'fake-model', messages: [user('still there?')] })
  t.equal(after.choices[0].message.content, 'Echo: still there?')

  const other = await startFakeModelProvider()
  other.script({ hang: true })
  const hanging = fetch(`${other.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${FAKE_MODEL_API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-model', messages: [user('hi')] })
  })
  await other.waitForRequests(1)
  const started = Date.now()
  await other.close()
  t.ok(Date.now() - started < 1000, 'close does not wait for the hanging answer')
  await t.rejects(hanging)
})

t.test('raw bodies: huge and malformed', async (t) => {
  const content = 'x'.repeat(10_000_000)
  provider.script({
    rawBody: JSON.stringify({ id: 'chatcmpl-huge', object: 'chat.completion', created: 0, model: 'fake-model', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] })
  }, { rawBody: '{"id": "chatcmpl-cut', contentType: 'application/json' })
  const huge = await client.chat.completions.create({ model: 'fake-model', messages: [user('hi')] })
  t.equal(huge.choices[0].message.content?.length, content.length)
  await t.rejects(client.chat.completions.create({ model: 'fake-model', messages: [user('hi')] }))
})

t.test('requests the provider refuses', async (t) => {
  provider.script({ handler: ({ body }) => ({ reply: `${body.messages.length} messages` }) })
  const cases: Array<[unknown, RegExp]> = [
    [{ model: 'fake-model', messages: [] }, /empty array/],
    [{ model: 'fake-model' }, /Missing required parameter: 'messages'/],
    [{ messages: [user('hi')] }, /you must provide a model parameter/],
    [{ model: 'fake-model', messages: [{ role: 'robot', content: 'hi' }] }, /Invalid value: 'robot'/],
    [{ model: 'fake-model', messages: [user('hi')], stream: true }, /stream is not supported by the fake/]
  ]
  for (const [body, message] of cases) {
    const res = await post(body)
    t.equal(res.status, 400)
    t.match(await res.json(), { error: { message, type: 'invalid_request_error' } })
  }
  const tooLarge = await post({ model: 'fake-model', messages: [user('x'.repeat(5 * 1024 * 1024))] })
  t.equal(tooLarge.status, 413)
  t.match(await tooLarge.json(), { error: { type: 'invalid_request_error', param: null, code: null } })
  t.equal(provider.pending(), 1, 'refused requests take no step')
  const computed = await client.chat.completions.create({ model: 'fake-model', messages: [user('a'), user('b')] })
  t.equal(computed.choices[0].message.content, '2 messages')
})
