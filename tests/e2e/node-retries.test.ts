/**
 * Retries and time-outs on any node (issue 15, item 3), through the real api and worker:
 * `retry` and `timeoutMs` checked when the workflow is saved, failures that may pass retried
 * with a WARN line per retry and one idempotency key, the others not.
 */
import t from 'tap'
import { startDeliverySink, type Delivery, type SinkAnswer } from '@switchboard/testing/delivery-sink'
import { FAKE_ACCESS_TOKEN, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'

/** The loopback sink http_request nodes call: each path answers as its script says, call after call. */
const scripts = new Map<string, SinkAnswer[]>()
const sink = await startDeliverySink(t, { answer: ({ path }) => scripts.get(path)?.shift() ?? {} })
const callsTo = (path: string): Delivery[] => sink.deliveries.filter((call) => call.path === path)
const status = (code: number, headers: Record<string, string> = {}): SinkAnswer => ({ status: code, headers })

const PHONE_NUMBER_ID = '106540352242922'
const fake = await startFakeChatPlatform({ messagesPerSecond: 1 })
t.teardown(async () => { await fake.close() })

const stack = await startStack(t, {
  env: {
    HTTP_REQUEST_ALLOW_PRIVATE: 'true',
    CHAT_API_URL: fake.url,
    CHAT_ACCESS_TOKEN: FAKE_ACCESS_TOKEN,
    CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    CHAT_BUSINESS_ACCOUNT_ID: '102290129340398'
  }
})
const token = await stack.adminToken()
const { client, call } = stack

const warnings = (run: { logs: Array<{ level: string, message: string }> }): string[] => run.logs.filter((line) => line.level === 'WARN').map((line) => line.message)

t.test('a node failing with 503 twice succeeds on its third attempt: a WARN line per retry, every attempt logged before it is sent, one Idempotency-Key', async (t) => {
  scripts.set('/flaky', [status(503), status(503)])
  const run = await client.runWorkflow(token, {
    nodes: [{ id: 'deliver', type: 'http_request', config: { method: 'POST', url: `${sink.url}/flaky`, body: { a: 1 }, retry: { attempts: 3, backoffMs: 200, backoffFactor: 2 } } }]
  })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(callsTo('/flaky').map((c) => c.idempotencyKey), Array(3).fill(`${run.id}:deliver`))
  t.same(warnings(run), [
    `POST ${sink.url}/flaky answered 503; retrying in 200ms (1 of 2)`,
    `POST ${sink.url}/flaky answered 503; retrying in 400ms (2 of 2)`
  ])
  t.same(run.logs.filter((line) => line.message.startsWith('Calling')).map((line) => line.message), [1, 2, 3].map((n) => `Calling POST ${sink.url}/flaky (attempt ${n})`))
  const [first, second, third] = callsTo('/flaky')
  t.ok(second!.receivedAt - first!.receivedAt >= 200 && third!.receivedAt - second!.receivedAt >= 400, 'the backoff was waited for')
  t.match(run.result.deliver, { status: 200, body: { ok: true } })
})

t.test('a 429 is retried after its Retry-After rather than the node\'s shorter backoff', async (t) => {
  scripts.set('/limited', [status(429, { 'retry-after': '2' })])
  const run = await client.runWorkflow(token, {
    nodes: [{ id: 'call', type: 'http_request', config: { url: `${sink.url}/limited`, retry: { attempts: 2, backoffMs: 10 } } }]
  })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(warnings(run), [`GET ${sink.url}/limited answered 429 (Retry-After 2s); retrying in 2000ms (1 of 1)`])
  const [first, second] = callsTo('/limited')
  t.ok(second!.receivedAt - first!.receivedAt >= 2000, `the second call came ${second!.receivedAt - first!.receivedAt}ms after the first`)
})

t.test('a 4xx answer is final: one call, no retry', async (t) => {
  scripts.set('/refused', [status(404)])
  const run = await client.runWorkflow(token, {
    nodes: [{ id: 'call', type: 'http_request', config: { url: `${sink.url}/refused`, retry: { attempts: 5, backoffMs: 10 } } }]
  })
  t.equal(run.status, 'FAILED')
  t.equal(run.error, 'Request failed with status 404')
  t.equal(callsTo('/refused').length, 1)
  t.same(warnings(run), [])
})

t.test('a pure node: its time-out is retried and fails it in the end; a deterministic failure is never retried', async (t) => {
  // Two distinct lists of 40,000 objects take milliseconds to compare, every time: more than 1 ms.
  const list = Array.from({ length: 40_000 }, (_, i) => ({ i }))
  const timedOut = await client.runWorkflow(token, {
    nodes: [{ id: 'same', type: 'condition', config: { field: 'triggerData.left', operator: 'equals', value: '{{triggerData.right}}', timeoutMs: 1, retry: { attempts: 2, backoffMs: 50 } } }]
  }, { left: list, right: list })
  t.equal(timedOut.status, 'FAILED')
  t.equal(timedOut.error, 'Timed out after 1ms')
  t.same(warnings(timedOut), ['Timed out after 1ms; retrying in 50ms (1 of 1)'])

  const refused = await client.runWorkflow(token, {
    nodes: [{ id: 'check', type: 'verify_signature', config: { secret: 's', header: 'x-signature', retry: { attempts: 3, backoffMs: 10 } } }]
  })
  t.equal(refused.status, 'FAILED')
  t.equal(refused.error, 'Invalid signature')
  t.notOk(refused.logs.some((line) => line.message.includes('retrying')))
})

t.test('a chat send the platform throttles (130429) is retried with the same Idempotency-Key', async (t) => {
  fake.requests.length = 0
  const phone = '15550001234'
  const run = await client.runWorkflow(token, {
    nodes: [
      { id: 'first', type: 'send_chat_template', config: { phone, templateName: 'hello_world' }, next: 'second' },
      // The fake takes one message a second per number: this one is refused once, then goes through.
      { id: 'second', type: 'send_chat_template', config: { phone, templateName: 'hello_world', retry: { attempts: 3, backoffMs: 1100 } } }
    ]
  })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(fake.sends().map((send) => send.headers['idempotency-key']), [`${run.id}:first`, `${run.id}:second`, `${run.id}:second`])
  t.same(warnings(run), ['(#130429) Rate limit hit; retrying in 1100ms (1 of 2)'])
  t.same(run.logs.filter((line) => line.nodeId === 'second' && line.message.startsWith('Sending')).map((line) => line.message),
    [1, 2].map((n) => `Sending chat template hello_world to ${phone} (attempt ${n})`))
})

t.test('retry and timeoutMs are checked when the workflow is saved: 400 naming the node', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['http_request', { url: 'https://example.com', retry: { attempts: 11 } }, 'Node n: retry.attempts must be an integer from 1 to 10'],
    ['set', { values: {}, retry: { attempts: 2, maxTries: 3 } }, 'Node n: retry.maxTries is not a retry setting (attempts, backoffMs, backoffFactor)'],
    ['set', { values: {}, retry: { backoffMs: 10 } }, 'Node n: retry.attempts is required'],
    ['set', { values: {}, retry: 3 }, 'Node n: retry must be an object: {attempts, backoffMs?, backoffFactor?}'],
    ['send_chat', { phone: '1', text: 'x', retry: { attempts: 2, backoffMs: 60_001 } }, 'Node n: retry.backoffMs must be an integer from 0 to 60000'],
    ['condition', { field: 'a', retry: { attempts: 2, backoffFactor: 11 } }, 'Node n: retry.backoffFactor must be a number from 1 to 10'],
    ['http_request', { url: 'https://example.com', retry: { attempts: 10, backoffMs: 60_000, backoffFactor: 1 } }, 'Node n: retry waits 540000ms between attempts in all, more than 300000ms'],
    ['verify_signature', { secret: 's', header: 'h', timeoutMs: 300_001 }, 'Node n: timeoutMs must be a number from 1 to 300000'],
    ['http_request', { url: 'https://example.com', retries: 2, retry: { attempts: 3 } }, 'Node n: give retry or retries, not both (retries n is retry {attempts: n + 1})'],
    ['wait', { seconds: 5, retry: { attempts: 2 } }, 'Node n: wait takes no retry or timeoutMs: it lasts what its config says and has nothing to retry'],
    ['wait', { seconds: 5, timeoutMs: 1000 }, 'Node n: wait takes no retry or timeoutMs: it lasts what its config says and has nothing to retry']
  ]
  for (const [type, config, message] of cases) {
    const res = await call('POST', '/api/automation/workflows', { token, body: { name: 'bad retry', triggerType: 'MANUAL', nodes: [{ id: 'n', type, config }] } })
    t.same(res.body, { statusCode: 400, code: 'VALIDATION_ERROR', error: message, message }, `${type} ${JSON.stringify(config)}`)
  }

  const workflowId = await client.createWorkflow(token, {
    nodes: [{ id: 'n', type: 'http_request', config: { url: 'https://example.com', retries: 2, timeoutMs: '{{triggerData.timeout}}', retry: null } }]
  })
  const patched = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { nodes: [{ id: 'n', type: 'set', config: { values: {}, timeoutMs: 0 } }] } })
  t.equal(patched.status, 400)
  t.equal(patched.body.message, 'Node n: timeoutMs must be a number from 1 to 300000', 'a PATCH of nodes is checked too')
})
