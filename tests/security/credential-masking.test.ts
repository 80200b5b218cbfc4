import t from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { encryptSecret, keyringOf } from '@switchboard/core/encryption'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { freePort, startStack } from '@switchboard/testing/processes'
import { probeUntil } from '@switchboard/testing/probes'

/**
 * The redactor against a member who chooses both the secrets and the text they are masked in
 * (issue 23, item 1): one-letter values spelling the marker used to make every replacement
 * match letters of the markers before it, 40 characters became 675,880 and a 10 KB answer
 * held the worker's event loop for seconds. Values shorter than the minimum are now refused at
 * save; those stored before keep working, masked where a whole value equals them, never by substring.
 */

// A service that echoes the request body back, as many APIs do.
const sink = await startDeliverySink(t, { answer: ({ body }) => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ echo: body }) }) })

const workerPort = await freePort()
const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true', WORKER_HTTP_PORT: String(workerPort) } })
const admin = await stack.adminToken()
const member = await stack.client.newUser(admin)
const database = createDatabase(stack.env.DATABASE_URL!, { max: 1 })
t.teardown(async () => { await database.close() })

/** The letters of the marker, one per field: `f1` is `[`, `f2` is `c`, … */
const LETTERS = [...'[credential]']
const FIELDS = LETTERS.map((_, i) => `f${i + 1}`)
/** 10 KB of text made of the marker's letters: every replacement used to create more matches. */
const TEXT = 'credential'.repeat(1024)

/** The slowest answer of the worker's /health/live, asked every 50 ms until `done` settles. */
const slowestWorkerProbe = async (done: Promise<unknown>): Promise<number> =>
  Math.max(0, ...await probeUntil(`http://127.0.0.1:${workerPort}/health/live`, done, { timeoutMs: 60_000 }))

t.test('a value shorter than 8 characters is refused at save, naming the field', async (t) => {
  const res = await stack.call('POST', '/api/automation/credentials', {
    token: member.token,
    body: { name: 'letters', type: 'generic', data: Object.fromEntries(FIELDS.map((field, i) => [field, LETTERS[i]])) }
  })
  t.equal(res.status, 400)
  t.equal(res.body.code, 'VALIDATION_ERROR')
  t.equal(res.body.message, 'data.f1 must be at least 8 characters: shorter values cannot be masked in what runs store')
  const basic = await stack.call('POST', '/api/automation/credentials', { token: member.token, body: { name: 'short-pass', type: 'basic', data: { username: 'api', password: 'hunter2' } } })
  t.equal(basic.status, 400)
  t.equal(basic.body.message, 'data.password must be at least 8 characters: shorter values cannot be masked in what runs store')
})

t.test('one-letter values stored before the minimum still work, and cannot amplify what is stored', async (t) => {
  // Created with valid values, then given one-letter values as a release without the minimum stored them.
  const created = await stack.call('POST', '/api/automation/credentials', {
    token: member.token,
    body: { name: 'legacy', type: 'generic', data: Object.fromEntries(FIELDS.map((field) => [field, `placeholder-${field}`])) }
  })
  t.equal(created.status, 201)
  const keyring = keyringOf({ encryptionKey: Buffer.from(stack.env.ENCRYPTION_KEY!, 'base64'), encryptionKeysPrevious: [] })
  const data = Object.fromEntries(FIELDS.map((field, i) => [field, LETTERS[i]]))
  await database.sql`update credentials set data_encrypted = ${encryptSecret(keyring, JSON.stringify(data))} where id = ${created.body.id}`

  const workflowId = await stack.client.createWorkflow(member.token, {
    nodes: [{
      id: 'call',
      type: 'http_request',
      config: { method: 'POST', url: `${sink.url}/echo`, body: `${FIELDS.map((field) => `{{credentials.legacy.${field}}}`).join('')} ${TEXT}` }
    }]
  })
  const runId = await stack.client.fire(member.token, workflowId)
  const finished = stack.client.runReaching(member.token, runId, undefined, { timeoutMs: 60_000 })
  const slowestMs = await slowestWorkerProbe(finished)
  const run = await finished
  t.comment(`worker /health/live slowest answer during the run: ${Math.round(slowestMs)} ms`)

  t.equal(run.status, 'SUCCESS', 'the stored credential still works')
  t.equal(run.result.call.body.echo, `${LETTERS.join('')} ${TEXT}`, 'the values were sent, and the echo is stored as long as it came')
  t.ok(slowestMs < 1_000, `the worker answered its probes throughout (slowest ${Math.round(slowestMs)} ms)`)
})

t.test('a value equal to a short stored value is masked where it is the whole value', async (t) => {
  const created = await stack.call('POST', '/api/automation/credentials', { token: member.token, body: { name: 'pin', type: 'generic', data: { pin: 'placeholder-pin' } } })
  const keyring = keyringOf({ encryptionKey: Buffer.from(stack.env.ENCRYPTION_KEY!, 'base64'), encryptionKeysPrevious: [] })
  await database.sql`update credentials set data_encrypted = ${encryptSecret(keyring, JSON.stringify({ pin: '4711' }))} where id = ${created.body.id}`
  const run = await stack.client.runWorkflow(member.token, {
    nodes: [{ id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/echo`, body: '{{credentials.pin.pin}}' } }]
  })
  t.equal(run.status, 'SUCCESS')
  t.same(run.result.call.body, { echo: '[credential]' })
})

t.test('values long enough to be masked, spelling the marker, in 800 KB of its letters: masked once, no growth, no stall', async (t) => {
  const values = { a: '[credential]', b: 'credential', c: 'redential]', d: '[credenti' }
  const created = await stack.call('POST', '/api/automation/credentials', { token: member.token, body: { name: 'marker', type: 'generic', data: values } })
  t.equal(created.status, 201)
  const text = 'credential'.repeat(80_000)
  const workflowId = await stack.client.createWorkflow(member.token, {
    nodes: [{ id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/echo`, body: `{{credentials.marker.a}}${text}` } }]
  })
  const runId = await stack.client.fire(member.token, workflowId)
  const finished = stack.client.runReaching(member.token, runId, undefined, { timeoutMs: 60_000 })
  const slowestMs = await slowestWorkerProbe(finished)
  const run = await finished
  t.comment(`worker /health/live slowest answer during the run: ${Math.round(slowestMs)} ms`)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.equal(run.result.call?.body.echo, '[credential]'.repeat(80_001), 'each value masked once, the markers never searched again')
  t.ok(slowestMs < 1_000, `the worker answered its probes throughout (slowest ${Math.round(slowestMs)} ms)`)
})

t.test('a node whose credentials together are too long to mask fails, naming the bound', async (t) => {
  // Each fits the budget alone (under 340,000 characters of forms: a space, a quote and non-ASCII make every form differ).
  for (const name of ['big1', 'big2']) {
    const data = Object.fromEntries(['a', 'b', 'c'].map((field) => [field, 'É "'.repeat(2729) + name + field]))
    const res = await stack.call('POST', '/api/automation/credentials', { token: member.token, body: { name, type: 'generic', data } })
    t.equal(res.status, 201)
  }
  const run = await stack.client.runWorkflow(member.token, {
    nodes: [{ id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/echo`, body: { one: '{{credentials.big1.a}}', two: '{{credentials.big2.a}}' } } }]
  })
  t.equal(run.status, 'FAILED')
  t.equal(run.error, 'The credentials of node call are too long to mask: 671514 characters in the forms runs mask, at most 524288')
})
