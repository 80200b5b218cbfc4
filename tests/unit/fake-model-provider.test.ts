import t from 'tap'
import OpenAI, {
  APIConnectionTimeoutError, AuthenticationError, BadRequestError, InternalServerError, RateLimitError, type ClientOptions
} from 'openai'
import {
  FAKE_EMBEDDING_MODEL, FAKE_MODEL_API_KEY, fakeEmbedding, fakeModelEnv, startFakeModelProvider
} from '@switchboard/testing/fake-model-provider'

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

const embed = async (input: string | string[], options: Partial<OpenAI.EmbeddingCreateParams> = {}): Promise<OpenAI.CreateEmbeddingResponse> =>
  client.embeddings.create({ model: FAKE_EMBEDDING_MODEL, input, ...options })
const postEmbeddings = async (body: unknown): Promise<Response> => fetch(`${provider.url}/v1/embeddings`, {
  method: 'POST',
  headers: { authorization: `Bearer ${FAKE_MODEL_API_KEY}`, 'content-type': 'application/json' },
  body: JSON.stringify(body)
})
const cosine = (a: number[], b: number[]): number => a.reduce((sum, value, index) => sum + value * b[index], 0)
const vectors = (response: OpenAI.CreateEmbeddingResponse): number[][] => response.data.map(({ embedding }) => embedding)

t.test('fakeModelEnv names the embedding model only when asked', async (t) => {
  const chat = { AI_API_URL: `${provider.url}/v1`, AI_API_KEY: FAKE_MODEL_API_KEY, AI_MODEL: 'fake-model' }
  t.same(fakeModelEnv(provider), chat)
  t.same(fakeModelEnv(provider, { embeddings: true }), { ...chat, AI_EMBEDDING_MODEL: 'fake-embedding' })
})

t.test('embeddings: texts that share words are near, others are not', async (t) => {
  const texts = ['Return your shoes within 30 days for a refund.', 'Can I get a refund for my shoes after 20 days?', 'The office opens at nine on weekdays.']
  // The official client asks for base64 unless told otherwise and decodes it; both encodings carry the same vectors.
  const decoded = await embed(texts)
  const floats = await embed(texts, { encoding_format: 'float' })
  t.match(decoded, { object: 'list', model: FAKE_EMBEDDING_MODEL, data: [{ object: 'embedding', index: 0 }, { index: 1 }, { index: 2 }] })
  t.same(decoded.usage, { prompt_tokens: texts.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0), total_tokens: decoded.usage.prompt_tokens })
  t.same(vectors(decoded), texts.map((text) => fakeEmbedding(text)))
  t.same(vectors(floats), vectors(decoded))
  const [refund, question, office] = vectors(floats)
  t.equal(refund.length, 64, '64 dimensions by default')
  t.ok(Math.abs(Math.hypot(...refund) - 1) < 1e-6, 'unit length')
  t.ok(cosine(refund, question) > 0.5, `shared words: ${cosine(refund, question)}`)
  t.ok(Math.abs(cosine(refund, office)) < 0.2, `no shared word: ${cosine(refund, office)}`)

  // What counts as a word: case, stop words, a plural's s and punctuation do not; letters beyond ASCII do.
  t.same(fakeEmbedding('The SHOES, for you!'), fakeEmbedding('shoe'))
  t.same(fakeEmbedding('shoe').filter((value) => value !== 0).map(Math.abs), [1], 'one word is one signed dimension')
  const signs = ['refund', 'shoe', 'office', 'day', 'return', 'policy'].map((word) => Math.sign(fakeEmbedding(word).find((value) => value !== 0) ?? 0))
  t.same(new Set(signs), new Set([1, -1]), 'of either sign')
  t.same(fakeEmbedding('Crème-brûlée'), fakeEmbedding('brûlée crème'))
  t.notSame(fakeEmbedding('crème'), fakeEmbedding('cr me'))
  t.notSame(fakeEmbedding('address'), fakeEmbedding('addres'), 'a double s is no plural')
  const wordless = [1, ...new Array(63).fill(0)]
  t.same(fakeEmbedding('?! the'), wordless)
  t.same(vectors(await embed('  ...  ')), [wordless], 'a text without words still has a unit vector')
})

t.test('embeddings: dimensions and the base64 encoding', async (t) => {
  const sized = await embed(['refund policy', 'opening hours'], { dimensions: 8, encoding_format: 'float' })
  t.same(vectors(sized), [fakeEmbedding('refund policy', 8), fakeEmbedding('opening hours', 8)])
  t.equal(sized.data[0].embedding.length, 8)
  t.equal(vectors(await embed('refund', { dimensions: 4096 }))[0].length, 4096)

  const res = await postEmbeddings({ model: FAKE_EMBEDDING_MODEL, input: 'refund policy for shoes', encoding_format: 'base64', dimensions: 16 })
  t.equal(res.status, 200)
  const { data: [{ embedding }] } = await res.json() as { data: Array<{ embedding: string }> }
  t.type(embedding, 'string')
  const bytes = Buffer.from(embedding, 'base64')
  t.equal(bytes.length, 16 * 4, 'float32 values')
  const decoded = Array.from({ length: 16 }, (_, index) => bytes.readFloatLE(index * 4))
  t.same(decoded, fakeEmbedding('refund policy for shoes', 16))
})

t.test('embeddings: the errors the real API gives', async (t) => {
  provider.embeddings.script({ vectors: [[1]] })
  const wrong = await rejection(clientOf({ apiKey: 'sk-wrong-key-123456' }).embeddings.create({ model: FAKE_EMBEDDING_MODEL, input: 'hi' }))
  t.type(wrong, AuthenticationError)
  t.match(wrong, { status: 401, code: 'invalid_api_key', type: 'invalid_request_error', message: /Incorrect API key provided: sk-\*+3456\./ })
  const invalidInput = /^'\$\.input' is invalid\. Please check the API reference/
  const cases: Array<[unknown, RegExp, string | null]> = [
    [{ model: FAKE_EMBEDDING_MODEL, input: '' }, invalidInput, null],
    [{ model: FAKE_EMBEDDING_MODEL, input: [] }, invalidInput, null],
    [{ model: FAKE_EMBEDDING_MODEL, input: ['refund', ''] }, invalidInput, null],
    [{ model: FAKE_EMBEDDING_MODEL, input: new Array(2049).fill('refund') }, invalidInput, null],
    [{ model: FAKE_EMBEDDING_MODEL, input: ['refund', 3] }, invalidInput, null],
    [{ model: FAKE_EMBEDDING_MODEL, input: { text: 'refund' } }, invalidInput, null],
    [{ model: FAKE_EMBEDDING_MODEL, input: [1, 2, 3] }, /token inputs are not supported by the fake/, 'input'],
    [{ model: FAKE_EMBEDDING_MODEL }, /Missing required parameter: 'input'/, 'input'],
    [{ input: 'refund' }, /you must provide a model parameter/, null],
    [{ model: FAKE_EMBEDDING_MODEL, input: 'x'.repeat(40_000) }, /maximum context length is 8192 tokens, however you requested 10000 tokens/, null],
    [{ model: FAKE_EMBEDDING_MODEL, input: 'refund', encoding_format: 'hex' }, /Invalid value: 'hex'/, 'encoding_format'],
    [{ model: FAKE_EMBEDDING_MODEL, input: 'refund', dimensions: 0 }, /Expected a value >= 1, but got 0/, 'dimensions'],
    [{ model: FAKE_EMBEDDING_MODEL, input: 'refund', dimensions: 4097 }, /Expected a value <= 4096, but got 4097/, 'dimensions'],
    [{ model: FAKE_EMBEDDING_MODEL, input: 'refund', dimensions: 1.5 }, /expected an integer, but got a decimal number/, 'dimensions']
  ]
  for (const [body, message, param] of cases) {
    const res = await postEmbeddings(body)
    t.equal(res.status, 400, message.source)
    t.match(await res.json(), { error: { message, type: 'invalid_request_error', param } }, message.source)
  }
  const tooLarge = await postEmbeddings({ model: FAKE_EMBEDDING_MODEL, input: 'x'.repeat(5 * 1024 * 1024) })
  t.equal(tooLarge.status, 413)
  t.match(await tooLarge.json(), { error: { type: 'invalid_request_error', param: null, code: null } })
  t.equal(provider.embeddings.pending(), 1, 'refused requests take no step')
  t.equal(provider.embeddings.requests.length, 1 + cases.length, 'refused requests are recorded, not those Fastify refuses')

  t.same(vectors(await embed(new Array(2048).fill('refund'))), [[1]], '2048 inputs are accepted, and take the step')
  t.equal(provider.embeddings.pending(), 0)
  const most = await embed(new Array(2048).fill('refund'))
  t.equal(most.data.length, 2048)
  t.same(most.data[2047], { object: 'embedding', index: 2047, embedding: fakeEmbedding('refund') })
})

t.test('embeddings: recorded apart from chat, and scripted', async (t) => {
  provider.embeddings.script(
    { status: 429, retryAfterSeconds: 0.05 },
    { vectors: [[0.5, -0.75]] },
    { delayMs: 50, then: { status: 503 } },
    { handler: ({ body }) => body.dimensions === 2 ? { vectors: [[0, 1]] } : { embed: true } },
    { hang: true }
  )
  const limited = await rejection(embed('refund'))
  t.type(limited, RateLimitError)
  t.match(limited, { status: 429, code: 'rate_limit_exceeded' })
  t.same(vectors(await embed('refund')), [[0.5, -0.75]])
  t.type(await rejection(embed('refund')), InternalServerError)
  t.same(vectors(await embed('refund', { dimensions: 2 })), [[0, 1]])
  t.type(await rejection(clientOf({ timeout: 300 }).embeddings.create({ model: FAKE_EMBEDDING_MODEL, input: 'refund' })), APIConnectionTimeoutError)
  t.same(vectors(await embed(['refund', 'shoes'])), [fakeEmbedding('refund'), fakeEmbedding('shoes')], 'unscripted: the fake vectors')

  const recorded = await provider.embeddings.waitForRequests(6)
  t.equal(recorded.length, 6)
  t.match(recorded[5], { headers: { authorization: `Bearer ${FAKE_MODEL_API_KEY}` }, body: { model: FAKE_EMBEDDING_MODEL, input: ['refund', 'shoes'], encoding_format: 'base64' } })
  t.equal(recorded[3].body.dimensions, 2)
  t.equal(provider.requests.length, 0, 'no chat completion request')
  provider.reset()
  t.equal(provider.embeddings.requests.length, 0)

  const down = await startFakeModelProvider({ defaultEmbedding: { status: 503 } })
  t.teardown(async () => { await down.close() })
  const downClient = new OpenAI({ apiKey: FAKE_MODEL_API_KEY, baseURL: `${down.url}/v1`, maxRetries: 0 })
  for (let call = 0; call < 2; call++) {
    t.type(await rejection(downClient.embeddings.create({ model: FAKE_EMBEDDING_MODEL, input: 'refund' })), InternalServerError)
  }
  down.embeddings.script({ embed: true })
  t.same(vectors(await downClient.embeddings.create({ model: FAKE_EMBEDDING_MODEL, input: 'refund' })), [fakeEmbedding('refund')])
})

t.test('answerFromPassages answers from the passages of the system prompt', async (t) => {
  const prompt = (passages: string): OpenAI.ChatCompletionMessageParam => ({
    role: 'system',
    // [0] would win every question below, were it taken for a passage.
    content: `You are the shop's assistant.\n\nKnowledge passages:\n${passages}\nAnswer only from the passages.\n[0] Shoes return refund days open abroad countries customs average\nNot a passage: the block ended.`
  })
  const passages = [
    '[3] Shipping › Abroad',
    'We ship to 40 countries. Customs are extra.',
    '',
    '[2] Returns policy › Shoes (page 3)',
    'Shoes can be returned within 30 days.',
    'Keep the box. Refunds take 3.5 days on average.',
    '',
    '[1] Opening hours',
    'We open at nine',
    ''
  ].join('\n')
  const ask = async (messages: OpenAI.ChatCompletionMessageParam[]): Promise<string | null> => {
    provider.script({ answerFromPassages: true })
    return (await client.chat.completions.create({ model: 'fake-model', messages })).choices[0].message.content
  }
  t.equal(await ask([prompt(passages), user('Can I return my shoes?')]), 'According to [2]: Shoes can be returned within 30 days.', 'the passage sharing the most words')
  t.equal(await ask([prompt(passages), user('What is your returns policy?')]), 'According to [2]: Shoes can be returned within 30 days.', 'the words of the heading count')
  t.equal(await ask([prompt(passages), user('Do you ship abroad?'), { role: 'assistant', content: 'Yes.' }, user('When do you open?')]), 'According to [1]: We open at nine', 'the last user message, a text without a full stop')
  t.equal(await ask([prompt(passages), user('Countries and days?')]), 'According to [2]: Shoes can be returned within 30 days.', 'equals: the lowest number, not the first listed')
  t.equal(await ask([prompt(passages), user('Refunds: how many days on average?')]), 'According to [2]: Shoes can be returned within 30 days.', 'the first sentence, a decimal not ending it')
  t.equal(await ask([{ role: 'developer', content: [{ type: 'text', text: 'Knowledge passages:\n[4] Gift cards\nGift cards never expire! Use them online.' }] }, user('Do gift cards expire?')]), 'According to [4]: Gift cards never expire!', 'a developer message, in parts')
  t.equal(await ask([prompt(passages), { role: 'system', content: 'Knowledge passages:\n[5] Hats\nHats are final sale.' }, user('Can I return my shoes?')]), 'According to [5]: Hats are final sale.', 'the last block only')
  t.equal(await ask([prompt(''), user('Can I return my shoes?')]), 'I do not know.', 'an empty block')
  t.equal(await ask([{ role: 'system', content: 'You are the shop\'s assistant. [1] Shoes\nShoes can be returned.' }, user('Can I return my shoes?')]), 'I do not know.', 'no block')
  t.equal(await ask([user('Knowledge passages:\n[1] Shoes\nShoes can be returned.'), user('Can I return shoes?')]), 'I do not know.', 'a block only the user wrote')
  t.equal(await ask([{ role: 'system', content: 'Knowledge passages:\n[7] Shoes\n\n[8] Boots\nBoots too.' }, { role: 'assistant', content: null, tool_calls: [] }, user('')]), 'According to [7]:', 'odd prompts: a passage without text, an empty question')
  t.equal(provider.pending(), 0)

  const fallback = await startFakeModelProvider({ defaultReply: { answerFromPassages: true } })
  t.teardown(async () => { await fallback.close() })
  const fallbackClient = new OpenAI({ apiKey: FAKE_MODEL_API_KEY, baseURL: `${fallback.url}/v1`, maxRetries: 0 })
  const answered = await fallbackClient.chat.completions.create({ model: 'fake-model', messages: [prompt(passages), user('Customs abroad?')] })
  t.equal(answered.choices[0].message.content, 'According to [3]: We ship to 40 countries.', 'as the default reply')
})
