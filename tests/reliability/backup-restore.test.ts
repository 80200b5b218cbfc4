/**
 * The backup and restore runbook (README, "Operations"), run as written against real api and
 * worker processes. Runs of every unfinished kind are in flight, next to a finished one: PENDING
 * behind a paused queue, WAITING in a wait node, RUNNING in an http_request that a loopback
 * server holds. infra/ops/backup.sh dumps the database while the service runs; then the processes
 * die, the database is dropped and Redis loses every key of the installation; an empty database
 * is created and infra/ops/restore.sh fills it; new processes start on it with an empty Redis,
 * and every unfinished run finishes while the finished one stays as it was.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import postgres from 'postgres'
import t from 'tap'
import { closeQueues, createProducerConnection, createQueues, WORKFLOW_RUNS } from '@switchboard/core/queues'
import { startDeliverySink, type SinkAnswer } from '@switchboard/testing/delivery-sink'
import { BASE_DATABASE_URL, createTestDatabase, dropDatabase, REDIS_URL } from '@switchboard/testing/database'
import { startStack } from '@switchboard/testing/processes'
import { deleteQueuePrefix } from '@switchboard/testing/redis'
import { waitFor } from '@switchboard/testing/wait'

t.setTimeout(240_000)
/** The restored processes take a RUNNING run over once it started this long ago (RECONCILER_RUNNING_AFTER_MS; a minute by default). */
const RUNNING_AFTER_MS = 5000

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const runScript = promisify(execFile)

/** infra/ops/<script> as an operator runs it; its exit code and what it printed. */
async function ops (script: string, args: string[], env: Record<string, string>): Promise<{ code: number, output: string }> {
  try {
    const { stdout, stderr } = await runScript(join(ROOT, 'infra/ops', script), args, { env: { PATH: process.env.PATH, ...env }, timeout: 60_000 })
    return { code: 0, output: stdout + stderr }
  } catch (err) {
    const { code, stdout, stderr } = err as { code: number, stdout: string, stderr: string }
    return { code, output: stdout + stderr }
  }
}

// The partner an http_request node calls: while `holding` it never answers (the run stays
// RUNNING), then it answers at once.
let holding = true
const partner = await startDeliverySink(t, { answer: async () => holding ? await new Promise<SinkAnswer>(() => {}) : {} })

const dir = await mkdtemp(join(tmpdir(), 'switchboard-backup-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const dump = join(dir, 'switchboard.dump')

// Both generations of processes read the same secrets, as a restored installation must.
const env = { HTTP_REQUEST_ALLOW_PRIVATE: 'true', ENCRYPTION_KEY: randomBytes(32).toString('base64'), RECONCILER_INTERVAL_MS: '1000' }
const database = await createTestDatabase()

t.test('dump while running, drop, restore into an empty database: every unfinished run finishes', async (t) => {
  const before = await startStack(t, { database, env })
  const token = await before.adminToken()
  const { client } = before
  const queuePrefix = before.env.QUEUE_PREFIX!

  const finished = await client.runWorkflow(token, { name: 'done before the backup', nodes: [{ id: 'done', type: 'set', config: { values: { done: true } } }] })
  t.equal(finished.status, 'SUCCESS')

  const waitingFlow = await client.createWorkflow(token, {
    name: 'waits',
    nodes: [{ id: 'pause', type: 'wait', config: { seconds: 3 }, next: 'after' }, { id: 'after', type: 'set', config: { values: { resumed: true } } }]
  })
  const waiting = [await client.fire(token, waitingFlow), await client.fire(token, waitingFlow)]
  for (const runId of waiting) await client.runReaching(token, runId, ['WAITING'])

  const callingFlow = await client.createWorkflow(token, { name: 'calls a partner', nodes: [{ id: 'call', type: 'http_request', config: { method: 'GET', url: `${partner.url}/hold`, timeoutMs: 120_000 } }] })
  const running = await client.fire(token, callingFlow)
  await client.runReaching(token, running, ['RUNNING'])
  await waitFor(async () => partner.deliveries.length === 1 ? true : undefined, { what: 'the partner to be called', timeoutMs: 10_000 })

  // New runs wait behind a paused queue: PENDING at the backup.
  const connection = createProducerConnection(REDIS_URL)
  const queues = createQueues(connection, queuePrefix)
  await queues[WORKFLOW_RUNS].pause()
  const pendingFlow = await client.createWorkflow(token, { name: 'queued', nodes: [{ id: 'set', type: 'set', config: { values: { queued: true } } }] })
  const pending = [await client.fire(token, pendingFlow), await client.fire(token, pendingFlow)]
  await closeQueues(queues)
  connection.disconnect()

  const unfinished = { PENDING: pending, WAITING: waiting, RUNNING: [running] }
  for (const [status, runIds] of Object.entries(unfinished)) {
    for (const runId of runIds) t.equal((await client.getRun(token, runId)).status, status, `${runId} is ${status} at the backup`)
  }

  const backupStarted = Date.now()
  const backup = await ops('backup.sh', [dump], { DATABASE_URL: database.url })
  const backupMs = Date.now() - backupStarted
  t.equal(backup.code, 0, backup.output)

  // The disaster: processes gone, the database dropped, Redis without a key of the installation.
  await Promise.all([before.api, ...before.workers].map(async (process) => { await process.stop('SIGKILL') }))
  await dropDatabase(database.name)
  await deleteQueuePrefix(queuePrefix)

  const admin = postgres(BASE_DATABASE_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${database.name}"`)
  await admin.end()
  const restoreStarted = Date.now()
  const restore = await ops('restore.sh', [dump], { DATABASE_MIGRATION_URL: database.url })
  const restoreMs = Date.now() - restoreStarted
  t.equal(restore.code, 0, restore.output)
  const again = await ops('restore.sh', [dump], { DATABASE_MIGRATION_URL: database.url })
  t.equal(again.code, 1, 'a database that is not empty is refused')
  t.match(again.output, /restore\.sh: the database holds \d+ tables: restore into an empty one/)

  holding = false
  const after = await startStack(t, { database, env: { ...env, RECONCILER_RUNNING_AFTER_MS: String(RUNNING_AFTER_MS) } })
  const startedAt = Date.now()
  const restoredToken = await after.adminToken()
  const all = Object.values(unfinished).flat()
  const done = await waitFor(async () => {
    const runs = await Promise.all(all.map(async (runId) => after.client.getRun(restoredToken, runId)))
    return runs.every((run) => run.status === 'SUCCESS') ? runs : undefined
  }, { what: 'every restored unfinished run to succeed', timeoutMs: 150_000, intervalMs: 500 })
  t.comment(`backup.sh ${backupMs} ms, restore.sh ${restoreMs} ms; every unfinished run done ${Date.now() - startedAt} ms after the new processes started (the RUNNING one is taken over ${RUNNING_AFTER_MS} ms after it started)`)
  t.equal(done.length, 5, 'the two PENDING, the two WAITING and the RUNNING run succeeded')
  for (const run of done.filter((run) => waiting.includes(run.id))) t.match(run.result, { after: { resumed: true } }, `${run.id} resumed after its wait`)
  t.equal(partner.deliveries.length, 2, 'the RUNNING run was taken over and called its partner again')
  t.same(await after.client.getRun(restoredToken, finished.id), finished, 'the finished run is as it was')
})
