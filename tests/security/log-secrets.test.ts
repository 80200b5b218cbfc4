import t from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { createLogger } from '@switchboard/core/logger'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

// Database errors carry the statement's values (Drizzle's message and `params`, Postgres'
// `detail`), and access logs carried query strings: webhook senders' Authorization headers,
// payloads and verify tokens ended up in log lines.
const stack = await startStack(t, { env: { LOG_LEVEL: 'info' } })
const token = await stack.adminToken()
const database = createDatabase(stack.env.DATABASE_URL!, { max: 1 })
t.teardown(async () => { await database.close() })
const { sql } = database

/** Every JSON line the api process has logged so far. */
const apiLogLines = (): any[] => stack.api.output().split('\n').flatMap((line) => {
  try { return [JSON.parse(line)] } catch { return [] }
})

const waitForLogLine = async (what: string, matches: (line: any) => boolean): Promise<any> =>
  waitFor(async () => apiLogLines().find(matches), { what })

t.test('a failed webhook insert is logged without the sender\'s headers or payload', async (t) => {
  const workflowId = await stack.client.createWorkflow(token, { name: 'hook', triggerType: 'WEBHOOK', nodes: [{ id: 'n1', type: 'set', config: { values: {} } }] })
  // Every new run now fails its statement, as a broken migration or a full disk would.
  await sql`alter table runs add constraint runs_refused check (false) not valid`
  t.teardown(async () => { await sql`alter table runs drop constraint runs_refused` })

  const secrets = { header: 'Bearer header-secret-8f3a', apiKey: 'api-key-secret-51c7', payload: 'payload-secret-c0de' }
  const res = await fetch(`${stack.baseUrl}/api/automation/webhook/${workflowId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: secrets.header, 'x-api-key': secrets.apiKey },
    body: JSON.stringify({ card: secrets.payload })
  })
  t.equal(res.status, 500, 'the sender is told to retry')

  const failure = await waitForLogLine('the failure\'s log line', (line) => line.msg === 'request failed')
  const output = stack.api.output()
  for (const [name, secret] of Object.entries(secrets)) t.notMatch(output, secret, `the ${name} is in no log line`)
  t.notOk('params' in failure.err, 'no bound values')
  t.match(failure.err.message, /^Failed query:[\s\S]*insert into runs \(id, workflow_id/, 'the SQL text stays')
  t.match(failure.err.message, 'violates check constraint "runs_refused"')
  t.match(failure.err.cause, { code: '23514', constraint_name: 'runs_refused', table_name: 'runs' }, 'the database error\'s code and constraint stay')
})

t.test('access logs keep the path, not the query string', async (t) => {
  const secrets = ['verify-secret-77aa', 'query-token-secret-19be', 'api-key-secret-4d2e']
  const requests = [
    `/webhook/chat?hub.mode=subscribe&hub.verify_token=${secrets[0]}&hub.challenge=1`,
    `/api/automation/webhook/x?token=${secrets[1]}`,
    `/nowhere?api_key=${secrets[2]}`
  ]
  for (const url of requests) {
    const res = await fetch(`${stack.baseUrl}${url}`, { method: url.startsWith('/api') ? 'POST' : 'GET' })
    await res.text()
  }
  // Exactly the path, or the path and its query (a leak): another request's path may start with this one's.
  for (const path of ['/webhook/chat', '/api/automation/webhook/x', '/nowhere']) {
    const logged = await waitForLogLine(`the access log of ${path}`, (line) => line.msg === 'request completed' && (line.req?.url === path || line.req?.url?.startsWith(`${path}?`) === true))
    t.equal(logged.req.url, path)
  }
  const output = stack.api.output()
  for (const secret of secrets) t.notMatch(output, secret, `${secret} is in no log line`)
})

t.test('an approval link refused or used is logged without its token, which stays usable only once', async (t) => {
  const workflowId = await stack.client.createWorkflow(token, {
    name: 'approve',
    nodes: [{ id: 'ask', type: 'approval', config: { message: 'Refund?', timeoutMinutes: 60 } }]
  })
  const run = await stack.client.runReaching(token, await stack.client.fire(token, workflowId), ['WAITING'])
  const resumePath: string = run.result.ask.resumePath
  const secret = resumePath.split('/').pop()!
  t.match(secret, /^rst_/)

  const refused = await stack.client.call('POST', resumePath, { body: { decision: 'maybe' } })
  t.equal(refused.status, 400, 'a bad decision is refused')
  const approved = await stack.client.call('POST', resumePath, { body: { decision: 'approve' } })
  t.equal(approved.status, 202, 'the link still approves')
  const logged = await waitForLogLine('the access logs of the link', (line) => line.msg === 'request completed' && line.res?.statusCode === 202 && line.req?.url?.startsWith('/webhook/resume/') === true)
  t.equal(logged.req.url, '/webhook/resume/[redacted]')
  t.notMatch(stack.api.output(), secret, 'the token is in no log line')
})

t.test('the shared logger (api and worker) drops values from database errors of every kind', async (t) => {
  const lines: string[] = []
  const logger = createLogger('info', 'worker', { write: (line: string) => { lines.push(line) } })
  await sql`create table vault (secret text constraint vault_empty check (secret = ''))`

  const failures: unknown[] = []
  // A check violation: Postgres' detail is `Failing row contains (<the row>)`.
  await sql`insert into vault (secret) values (${'row-secret-aa01'})`.catch((err: unknown) => failures.push(err))
  // A data exception: the message itself quotes the value, `invalid input syntax for type integer: "…"`.
  await sql`select ${'cast-secret-bb02'}::int`.catch((err: unknown) => failures.push(err))
  // postgres.js makes the query's parameters enumerable in debug mode.
  sql.options.debug = () => {}
  await sql`insert into vault (secret) values (${'debug-secret-cc03'})`.catch((err: unknown) => failures.push(err))
  sql.options.debug = false
  t.equal(failures.length, 3)

  for (const err of failures) logger.error({ err }, 'job failed')
  const text = lines.join('')
  for (const secret of ['row-secret-aa01', 'cast-secret-bb02', 'debug-secret-cc03']) t.notMatch(text, secret, `${secret} is in no log line`)
  const logged = lines.map((line) => JSON.parse(line).err)
  t.match(logged[0], { type: 'PostgresError', code: '23514', constraint_name: 'vault_empty', message: /violates check constraint "vault_empty"/ })
  t.match(logged[1], { code: '22P02', message: 'invalid input syntax for type integer: "[redacted]"' })
  t.notOk('parameters' in logged[2], 'no parameters')
})
