import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { createTestClient, httpTransport } from '@switchboard/testing/client'
import { testConfig, TEST_ADMIN } from '@switchboard/testing/config'
import { uniqueQueuePrefix } from '@switchboard/testing/database'
import { requestsInDoubt } from '@switchboard/testing/in-doubt'
import { startOwnPostgres, startOwnRedis } from '@switchboard/testing/stores'
import { waitFor } from '@switchboard/testing/wait'
import { buildServer } from '../../apps/api/src/build.ts'

// Postgres and Redis of this file's own: they are stopped, killed and frozen under traffic.
const DEADLINE_MS = 2000
/** What the answer may take beyond the deadline: the event loop of a busy test machine. */
const SLACK_MS = 500
const ownPostgres = await startOwnPostgres(t)
const ownRedis = await startOwnRedis(t)
const config = testConfig(ownPostgres.url, uniqueQueuePrefix(), {
  REDIS_URL: ownRedis.url,
  REQUEST_DEADLINE_MS: String(DEADLINE_MS),
  DATABASE_CONNECT_TIMEOUT_MS: '1000'
})
// The api's log, read for the answers whose COMMIT was in doubt.
let logText = ''
const app = await buildServer({ config, logStream: new Writable({ write (chunk: Buffer, _encoding, done) { logText += chunk.toString(); done() } }) })
await app.listen({ port: 0, host: '127.0.0.1' })
const database = createDatabase(ownPostgres.url, { max: 1 })
const { sql } = database
t.teardown(async () => {
  await app.close()
  await database.close()
})
const baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
const client = createTestClient(httpTransport(baseUrl))
const token = await client.login(TEST_ADMIN)
const nodes = [{ id: 'n1', type: 'set', config: { values: {} } }]
const manual = await client.createWorkflow(token, { name: 'fired', nodes })
const hook = await client.createWorkflow(token, { name: 'hooked', triggerType: 'WEBHOOK', nodes })

interface Answer {
  kind: 'fire' | 'webhook'
  tag: string
  sentAt: number
  ms: number
  status: number
  body: any
  retryAfter: string | null
}

let sent = 0
async function send (kind: Answer['kind']): Promise<Answer> {
  const tag = `${kind}-${++sent}`
  const sentAt = Date.now()
  const url = kind === 'fire' ? `${baseUrl}/api/automation/workflows/${manual}/fire` : `${baseUrl}/api/automation/webhook/${hook}`
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': tag, ...(kind === 'fire' && { authorization: `Bearer ${token}` }) },
      body: JSON.stringify({ tag }),
      signal: AbortSignal.timeout(30_000)
    })
    const body = await res.json()
    return { kind, tag, sentAt, ms: Date.now() - sentAt, status: res.status, body, retryAfter: res.headers.get('retry-after') }
  } catch (err) {
    return { kind, tag, sentAt, ms: Date.now() - sentAt, status: 0, body: String(err), retryAfter: null }
  }
}

const accepted = (answer: Answer): boolean =>
  answer.kind === 'fire' ? answer.status === 202 : answer.status === 200 && answer.body?.status === 'received'

/**
 * Fires and posts webhooks from four loops while `outage` lasts `outageMs`, then until the api
 * accepts runs again after `recover`. Every answer must come within the deadline: accepted, or
 * (`refused`: Postgres away) the error the API answers then (README, Runs). Then, once anything
 * held back could have landed, the runs in Postgres must be those of the accepted requests, and
 * of requests answered with an error after their COMMIT was sent (the api logs them: their runs
 * may exist).
 */
async function underTraffic (t: Test, outage: () => Promise<void> | void, recover: () => Promise<void> | void, expect: 'refused' | 'accepted', outageMs = 3000): Promise<void> {
  const answers: Answer[] = []
  const logFrom = logText.length
  const traffic = { stopped: false }
  const loop = async (kind: Answer['kind']): Promise<void> => {
    while (!traffic.stopped) answers.push(await send(kind))
  }
  const loops = [loop('fire'), loop('webhook'), loop('fire'), loop('webhook')]
  await sleep(300)
  const outageAt = Date.now()
  await outage()
  await sleep(outageMs)
  await recover()
  const recoveredAt = Date.now()
  await waitFor(async () => answers.some((a) => a.sentAt > recoveredAt && accepted(a)) ? true : undefined, { timeoutMs: 20_000, what: 'runs to be accepted again' })
  traffic.stopped = true
  await Promise.all(loops)
  // What a frozen server or a driver's queue held back would have landed by now.
  await sleep(2000)

  const failed = answers.filter((a) => !accepted(a))
  const during = answers.filter((a) => a.sentAt >= outageAt && a.sentAt <= recoveredAt)
  const inDoubt = requestsInDoubt(logText.slice(logFrom))
  t.comment(`${answers.length} answers, ${failed.length} errors (${failed.filter((a) => inDoubt.has(a.tag)).length} in doubt); during the outage: ${during.length} answers, ${during.filter(accepted).length} accepted, slowest ${Math.max(...during.map((a) => a.ms))} ms`)
  if (expect === 'refused') t.ok(failed.length > 0, 'the outage was felt')
  else t.same(failed.map(({ tag, status }) => ({ tag, status })), [], 'every request is accepted while Redis is away: a run is accepted once committed')
  t.ok(during.length > 0, 'requests were sent during the outage')
  const late = answers.filter((a) => a.ms > DEADLINE_MS + SLACK_MS)
  t.same(late.map(({ kind, ms, status }) => ({ kind, ms, status })), [], `every answer within ${DEADLINE_MS} ms (+${SLACK_MS})`)
  for (const answer of failed) {
    if (answer.kind === 'fire') {
      t.same({ status: answer.status, body: answer.body, retryAfter: answer.retryAfter }, {
        status: 503,
        body: { statusCode: 503, code: 'SERVICE_UNAVAILABLE', error: 'Service unavailable, retry later', message: 'Service unavailable, retry later' },
        retryAfter: '5'
      }, `${answer.tag}: 503 with Retry-After`)
    } else {
      t.same({ status: answer.status, body: answer.body }, {
        status: 500,
        body: { statusCode: 500, code: 'INTERNAL_SERVER_ERROR', error: 'Internal Server Error', message: 'Internal Server Error' }
      }, `${answer.tag}: the webhook's 500`)
    }
  }

  const runs: Array<{ id: string, tag: string }> = await sql`
    select id, coalesce(trigger_data->>'tag', trigger_data->'body'->>'tag') as tag from runs`
  const stored = new Map(runs.map(({ id, tag }) => [tag, id]))
  t.same(answers.filter(accepted).filter((a) => stored.get(a.tag) !== a.body.runId).map((a) => a.tag), [], 'every accepted request has its run')
  t.same(failed.filter((a) => stored.has(a.tag) && !inDoubt.has(a.tag)).map((a) => a.tag), [],
    'a request answered with an error has a run only when its COMMIT was in doubt (the api logged it)')
  t.same([...inDoubt].filter((tag) => !failed.some((a) => a.tag === tag)), [], 'only error answers are in doubt')
  t.equal(runs.filter((run) => !answers.some((a) => a.tag === run.tag)).length, 0, 'no run without a request')
  await sql`delete from runs`
}

t.test('Postgres stopped under traffic: 503 / 500 within the deadline, and a run only for an accepted or in-doubt answer', async (t) => {
  await underTraffic(t, ownPostgres.stop, ownPostgres.start, 'refused')
})

t.test('Postgres frozen under traffic (connections open, nothing answers): a run lands after its error answer only when its COMMIT was in doubt', async (t) => {
  await underTraffic(t, ownPostgres.freeze, ownPostgres.thaw, 'refused', 4000)
})

t.test('Redis killed under traffic and started again empty: every request accepted within the deadline, its run stored', async (t) => {
  await underTraffic(t, ownRedis.kill, ownRedis.start, 'accepted')
})

t.test('Redis frozen under traffic: every request accepted within the deadline; the enqueue waits apart', async (t) => {
  await underTraffic(t, ownRedis.freeze, ownRedis.thaw, 'accepted')
})

t.test('an Idempotency-Key answered while Redis hangs keeps its run: the retry gets the same one', async (t) => {
  const fire = async (key: string) => await fetch(`${baseUrl}/api/automation/workflows/${manual}/fire`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'idempotency-key': key },
    body: JSON.stringify({ tag: key })
  })
  await ownRedis.freeze()
  const first = await fire('kept-key')
  await ownRedis.thaw()
  const firstBody = await first.json() as { runId: string }
  t.equal(first.status, 202, 'accepted while Redis hangs: the run is committed')
  const retried = await fire('kept-key')
  t.equal(retried.status, 202)
  t.same(await retried.json(), { runId: firstBody.runId }, 'the retry with the key gets the same run')
  const stored = await sql`select id from runs where trigger_data->>'tag' = 'kept-key'`
  t.same(stored.map((row) => row.id), [firstBody.runId], 'one run')
  await sql`delete from runs`
})
