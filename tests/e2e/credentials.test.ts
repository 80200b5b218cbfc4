/**
 * Credentials end to end: nodes of real api and worker processes authenticate with them, and
 * afterwards no credential value can be found anywhere: not in any API answer about
 * workflows, versions, exports, runs or credentials, not in any row of any table (dumped as
 * text), not in either process's log (at debug, so every node line is there).
 */
import { createHmac } from 'node:crypto'
import postgres from 'postgres'
import t from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'

/** Each value carries characters that JSON and URLs write differently, so every echoed form is searched for. */
const SECRETS = {
  token: 'bearer-token-7c21/+=',
  apiKey: 'vendor-"key"-5f0e&x',
  username: 'svc-user-93aa',
  password: 'basic-pass-1b7d',
  header: 'header-value-e6c4',
  signing: 'hmac-secret-2d98'
}
const BASIC = Buffer.from(`${SECRETS.username}:${SECRETS.password}`).toString('base64')

/** The forms a value can take where it is echoed: as is, inside JSON text, percent-encoded, and the basic header. */
const searched = [...Object.values(SECRETS).flatMap((value) => [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)]), BASIC]

/** A loopback service that checks what the nodes send and echoes the whole request back, as many real APIs do. */
const sink = await startDeliverySink(t, {
  answer: ({ path: url, headers, body }) => {
    const checks: Record<string, boolean> = {
      '/bearer': headers.authorization === `Bearer ${SECRETS.token}` && headers['x-vendor-key'] === SECRETS.apiKey,
      '/basic': headers.authorization === `Basic ${BASIC}`,
      '/header': headers['x-api-key'] === SECRETS.header,
      '/signed': headers['x-signature-256'] === `sha256=${createHmac('sha256', SECRETS.signing).update(body).digest('hex')}`,
      '/text': true
    }
    const path = url.split('?')[0]!
    if (checks[path] !== true) return { status: 401, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refused: path }) }
    const echo = { url, headers, body }
    if (path === '/text') return { headers: { 'content-type': 'text/plain' }, body: `${url}\n${JSON.stringify(headers)}\n${body}` }
    return { headers: { 'content-type': 'application/json', 'x-echo-authorization': String(headers.authorization) }, body: JSON.stringify(echo) }
  }
})
const received = sink.deliveries

const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'debug' } })
const token = await stack.adminToken()
const member = await stack.client.newUser(token)
const { call } = stack

/** Every answer the test receives, searched at the end. */
const answers: string[] = []
async function api (method: string, path: string, body?: unknown): Promise<any> {
  const res = await call(method, path, { token: member.token, body })
  answers.push(JSON.stringify(res.body))
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

const credentials = {
  crm: await api('POST', '/api/automation/credentials', { name: 'crm', type: 'bearer', data: { token: SECRETS.token } }),
  vendor: await api('POST', '/api/automation/credentials', { name: 'vendor', type: 'generic', data: { apiKey: SECRETS.apiKey } }),
  svc: await api('POST', '/api/automation/credentials', { name: 'svc', type: 'basic', data: { username: SECRETS.username, password: SECRETS.password } }),
  keyed: await api('POST', '/api/automation/credentials', { name: 'keyed', type: 'header', data: { name: 'X-Api-Key', value: SECRETS.header } }),
  signing: await api('POST', '/api/automation/credentials', { name: 'signing', type: 'hmac', data: { secret: SECRETS.signing } })
}

const workflows: string[] = []
async function createWorkflow (body: Record<string, unknown>): Promise<string> {
  const created = await api('POST', '/api/automation/workflows', { isActive: true, ...body })
  workflows.push(created.id)
  return created.id
}

t.test('nodes authenticate with credentials; what they output, log and fail with carries a marker instead of the values', async (t) => {
  const workflowId = await createWorkflow({
    name: 'uses every credential',
    triggerType: 'MANUAL',
    nodes: [
      {
        id: 'bearer',
        type: 'http_request',
        config: {
          method: 'POST',
          url: `${sink.url}/bearer`,
          credential: 'crm',
          headers: { 'x-vendor-key': '{{credentials.vendor.apiKey}}' },
          query: { key: '{{credentials.vendor.apiKey}}' },
          body: { echo: '{{credentials.vendor.apiKey}}', order: '{{triggerData.order}}' }
        }
      },
      { id: 'basic', type: 'http_request', config: { url: `${sink.url}/basic`, credential: credentials.svc.id } },
      { id: 'header', type: 'http_request', config: { url: `${sink.url}/header`, credential: 'keyed' } },
      { id: 'signed', type: 'http_request', config: { method: 'POST', url: `${sink.url}/signed`, credential: 'signing', body: { order: '{{triggerData.order}}' } } },
      { id: 'text', type: 'http_request', config: { method: 'POST', url: `${sink.url}/text?k={{credentials.vendor.apiKey}}`, credential: 'crm', body: '{{credentials.vendor.apiKey}}' } },
      { id: 'after', type: 'set', config: { values: { saw: '{{bearer.body.headers.x-vendor-key}}', status: '{{header.status}}' } } }
    ]
  })
  const runId = await stack.client.fire(member.token, workflowId, { order: 'A-1' })
  const run = await stack.client.runReaching(member.token, runId)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  for (const path of ['/bearer', '/basic', '/header', '/signed', '/text']) {
    t.ok(received.some((request) => request.path.split('?')[0] === path), `${path} reached and accepted the credential`)
  }
  t.match(run.result.bearer, { status: 200, body: { headers: { authorization: 'Bearer [credential]', 'x-vendor-key': '[credential]' }, body: JSON.stringify({ echo: '[credential]', order: 'A-1' }) } })
  t.equal(run.result.bearer.headers['x-echo-authorization'], 'Bearer [credential]')
  t.equal(run.result.basic.body.headers.authorization, 'Basic [credential]')
  t.equal(run.result.header.body.headers['x-api-key'], '[credential]')
  t.match(run.result.text.body, /\[credential\]/)
  t.same(run.result.after, { saw: '[credential]', status: 200 }, 'later nodes see the marker, not the value')
})

t.test('a node whose error would quote a credential fails with the marker in its error and logs', async (t) => {
  const workflowId = await createWorkflow({
    name: 'fails quoting a credential',
    triggerType: 'MANUAL',
    nodes: [{ id: 'broken', type: 'http_request', config: { url: '{{credentials.vendor.apiKey}}' } }]
  })
  const run = await stack.client.runReaching(member.token, await stack.client.fire(member.token, workflowId, {}))
  t.equal(run.status, 'FAILED')
  t.equal(run.error, 'url is not a valid URL: [credential]')
  t.ok(run.logs.some((line) => line.message.includes('url is not a valid URL: [credential]')))
})

t.test('verify_signature checks an inbound webhook with an hmac credential', async (t) => {
  const workflowId = await createWorkflow({
    name: 'signed webhook',
    triggerType: 'WEBHOOK',
    nodes: [
      { id: 'verify', type: 'verify_signature', config: { credential: 'signing', header: 'x-signature', prefix: 'sha256=' }, next: 'done' },
      { id: 'done', type: 'set', config: { values: { ok: true } } }
    ]
  })
  const send = async (body: string, signature: string): Promise<string> => {
    const res = await fetch(`${stack.baseUrl}/api/automation/webhook/${workflowId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-signature': signature }, body })
    return (await res.json() as { runId: string }).runId
  }
  const body = JSON.stringify({ event: 'paid' })
  const good = await stack.client.runReaching(member.token, await send(body, `sha256=${createHmac('sha256', SECRETS.signing).update(body).digest('hex')}`))
  t.equal(good.status, 'SUCCESS', good.error ?? '')
  const forged = await stack.client.runReaching(member.token, await send(body, `sha256=${createHmac('sha256', 'guessed').update(body).digest('hex')}`))
  t.same([forged.status, forged.error], ['FAILED', 'Invalid signature'])
})

t.test('afterwards no credential value is in any API answer, any row of any table, or either process\'s log', async (t) => {
  // Every read the API offers about what the runs touched.
  await api('GET', '/api/automation/workflows')
  await api('GET', '/api/automation/credentials')
  for (const credential of Object.values(credentials)) await api('GET', `/api/automation/credentials/${credential.id}`)
  for (const id of workflows) {
    await api('GET', `/api/automation/workflows/${id}`)
    await api('GET', `/api/automation/workflows/${id}/export`)
    for (const version of await api('GET', `/api/automation/workflows/${id}/versions`)) await api('GET', `/api/automation/workflows/${id}/versions/${version.version}`)
  }
  const runs = await api('GET', '/api/automation/runs?limit=500')
  t.ok(runs.length >= 4)
  for (const run of runs) await api('GET', `/api/automation/runs/${run.id}`)
  await api('PATCH', `/api/automation/credentials/${credentials.crm.id}`, { data: { token: SECRETS.token } })

  const sql = postgres(stack.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await sql.end() })
  const tables = await sql<Array<{ name: string }>>`select table_name as name from information_schema.tables where table_schema = 'public'`
  t.ok(tables.some(({ name }) => name === 'run_logs') && tables.some(({ name }) => name === 'credentials'))
  const dump = (await Promise.all(tables.map(async ({ name }) => (await sql.unsafe(`select t::text as row from "${name}" t`)).map((row) => row.row as string).join('\n')))).join('\n')
  t.match(dump, '[credential]', 'the dump holds the runs that used them')

  const places = { 'API answers': answers.join('\n'), 'the database': dump, 'the api log': stack.api.output(), 'the worker log': stack.workers.map((worker) => worker.output()).join('\n') }
  t.match(places['the worker log'], '"nodeId":"bearer"', 'the worker logged the node lines')
  for (const [place, text] of Object.entries(places)) {
    const found = searched.filter((form) => text.includes(form))
    t.same(found, [], `no credential value in ${place}`)
  }
})
