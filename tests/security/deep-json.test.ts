import t from 'tap'
import { startStack } from '@switchboard/testing/processes'
import type { RunBody } from '@switchboard/testing/client'
import { sendWhileProbing } from './event-loop.ts'

// A JSON body nested ~100,000 levels fits in well under 1 MiB; JSON.stringify (the jsonb
// parameter) overflowed the stack on it, so every JSON route answered 500 and webhook
// senders retried a permanent failure forever.
const stack = await startStack(t)
const token = await stack.adminToken()

const BODY_LIMIT = 1024 * 1024
const MAX_DEPTH = 100
const TOO_DEEP = {
  statusCode: 400,
  code: 'BODY_TOO_DEEP',
  error: `Body nesting is too deep (max ${MAX_DEPTH} levels)`,
  message: `Body nesting is too deep (max ${MAX_DEPTH} levels)`
}

/** `{"a":{"a":…1…}}`, `levels` objects deep. */
const nestedObjects = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels)
const nestedArrays = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels)

async function send (method: string, path: string, body: string, authorized = true): Promise<{ status: number, body: any }> {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(authorized && { authorization: `Bearer ${token}` }) },
    body
  })
  return { status: res.status, body: JSON.parse(await res.text()) }
}

// The set node copies triggerData into the run's result: the worker renders, stores and reads it back.
const createWorkflow = async (triggerType: string): Promise<string> =>
  stack.client.createWorkflow(token, { name: `deep ${triggerType}`, triggerType, nodes: [{ id: 'copy', type: 'set', config: { values: { data: '{{triggerData}}' } } }] })
const finishedRun = async (runId: string): Promise<RunBody> => stack.client.runReaching(token, runId, ['SUCCESS', 'FAILED'])

const manual = await createWorkflow('MANUAL')
const webhook = await createWorkflow('WEBHOOK')

t.test('1 MiB of nesting: /fire answers 400 and the webhook 200, while /health/live keeps answering', async (t) => {
  const body = nestedArrays(BODY_LIMIT / 2)
  t.equal(Buffer.byteLength(body), BODY_LIMIT)
  const fired = await sendWhileProbing(stack.baseUrl, `/api/automation/workflows/${manual}/fire`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body
  })
  t.equal(fired.status, 400)
  t.same(JSON.parse(fired.text), TOO_DEEP)
  t.ok(fired.slowestProbeMs < 2_000, `/health/live answered within ${Math.round(fired.slowestProbeMs)} ms`)

  const received = await sendWhileProbing(stack.baseUrl, `/api/automation/webhook/${webhook}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body
  })
  t.equal(received.status, 200, 'always 200, so the sender does not retry forever')
  t.equal(JSON.parse(received.text).status, 'received')
  t.ok(received.slowestProbeMs < 2_000, `/health/live answered within ${Math.round(received.slowestProbeMs)} ms`)
  const run = await stack.call('GET', `/api/automation/runs/${JSON.parse(received.text).runId}`, { token })
  t.equal(run.body.triggerData.body, body, 'kept as text, like malformed JSON')
})

t.test(`every JSON route refuses ${MAX_DEPTH + 1} levels and 100,000 levels with 400`, async (t) => {
  const at = (levels: number): string => nestedObjects(levels - 1)
  const routes: Array<[method: string, path: string, body: (levels: number) => string]> = [
    ['POST', `/api/automation/workflows/${manual}/fire`, nestedObjects],
    ['POST', '/api/automation/events', (levels) => `{"name":"deep","payload":${at(levels)}}`],
    ['POST', '/api/automation/workflows', (levels) => `{"name":"deep","triggerType":"MANUAL","triggerConfig":${at(levels)}}`],
    ['PATCH', `/api/automation/workflows/${manual}`, (levels) => `{"triggerConfig":${at(levels)}}`],
    ['POST', '/api/users', (levels) => `{"email":"deep@example.com","password":${at(levels)}}`],
    ['POST', '/api/chat/accounts', (levels) => `{"name":${at(levels)}}`],
    ['PATCH', '/api/chat/conversations/c1', (levels) => `{"labels":${at(levels)}}`]
  ]
  for (const [method, path, body] of routes) {
    for (const levels of [MAX_DEPTH + 1, 100_000]) {
      const res = await send(method, path, body(levels))
      t.equal(res.status, 400, `${method} ${path}, ${levels} levels`)
      t.same(res.body, TOO_DEEP)
    }
  }
  // Public routes too: the login and the chat platform's webhook.
  for (const path of ['/api/auth/login', '/webhook/chat']) {
    const res = await send('POST', path, `{"entry":${at(100_000)}}`, false)
    t.equal(res.status, 400, path)
    t.same(res.body, TOO_DEEP)
  }
})

t.test(`/fire takes ${MAX_DEPTH} levels, which the run handles end to end, and refuses ${MAX_DEPTH + 1}`, async (t) => {
  const body = nestedObjects(MAX_DEPTH)
  const fired = await send('POST', `/api/automation/workflows/${manual}/fire`, body)
  t.equal(fired.status, 202)
  const run = await finishedRun(fired.body.runId)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.copy.data, JSON.parse(body), 'stored as jsonb, rendered by the worker, read back')

  const refused = await send('POST', `/api/automation/workflows/${manual}/fire`, nestedObjects(MAX_DEPTH + 1))
  t.equal(refused.status, 400)
  t.same(refused.body, TOO_DEEP)
})

t.test(`the inbound webhook parses ${MAX_DEPTH} levels and keeps one level more as text`, async (t) => {
  const deepest = nestedObjects(MAX_DEPTH)
  const received = await send('POST', `/api/automation/webhook/${webhook}`, deepest, false)
  t.equal(received.body.status, 'received')
  const run = await finishedRun(received.body.runId)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.triggerData.body, JSON.parse(deepest), 'parsed')

  const tooDeep = nestedObjects(MAX_DEPTH + 1)
  const kept = await send('POST', `/api/automation/webhook/${webhook}`, tooDeep, false)
  t.equal(kept.status, 200)
  t.equal(kept.body.status, 'received')
  const keptRun = await stack.call('GET', `/api/automation/runs/${kept.body.runId}`, { token })
  t.equal(keptRun.body.triggerData.body, tooDeep, 'kept as text')
})

t.test('brackets inside strings do not count, escaped quotes included', async (t) => {
  const text = '[{'.repeat(500) + '\\"' + '{['.repeat(500)
  const fired = await send('POST', `/api/automation/workflows/${manual}/fire`, JSON.stringify({ text, deep: JSON.parse(nestedObjects(MAX_DEPTH - 1)) }))
  t.equal(fired.status, 202)
  const run = await finishedRun(fired.body.runId)
  t.equal(run.result.copy.data.text, text)

  const refused = await send('POST', `/api/automation/workflows/${manual}/fire`, JSON.stringify({ text, deep: JSON.parse(nestedObjects(MAX_DEPTH)) }))
  t.same(refused.body, TOO_DEEP, 'while the levels outside strings still count')
})
