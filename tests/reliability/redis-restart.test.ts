import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { ASSISTANT_MAIN, closeQueues, createProducerConnection, createQueues, WORKFLOW_RUNS } from '@switchboard/core/queues'
import { messagesDelivery, newWamid } from '@switchboard/testing/fake-chat-platform'
import { startStack, type ManagedProcess } from '@switchboard/testing/processes'
import { startOwnRedis } from '@switchboard/testing/stores'
import { waitFor } from '@switchboard/testing/wait'

// Redis of this file's own, killed while work waits in it and started again empty: the api and
// the worker keep running, and everything Postgres holds is back in Redis within seconds.
const RECOVERY_LIMIT_MS = 10_000
const PHONE_NUMBER_ID = '106540352242922'
const ownRedis = await startOwnRedis(t)
const stack = await startStack(t, {
  env: {
    REDIS_URL: ownRedis.url,
    CRON_MIN_INTERVAL_SECONDS: '1',
    CHAT_ACCESS_TOKEN: 'token',
    CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    LOG_LEVEL: 'info'
  }
})
const token = await stack.adminToken()
const { client } = stack
const database = createDatabase(stack.env.DATABASE_URL!, { max: 1 })
t.teardown(database.close)
const { sql } = database

/** The lines a process printed since `from` (an offset in its output). */
const linesOf = (process: ManagedProcess, from: number): string[] =>
  process.output().slice(from).split('\n').filter((line) => line.trim() !== '')

t.test('Redis killed and started empty: pending runs, chat deliveries and cron schedules are back within 10 s; two log lines per process', async (t) => {
  const set = [{ id: 'n1', type: 'set', config: { values: { done: true } } }]
  const manual = await client.createWorkflow(token, { name: 'fired', nodes: set })
  const cron = await client.createWorkflow(token, { name: 'every second', triggerType: 'CRON', triggerConfig: { cronExpression: '* * * * * *' }, nodes: set })
  await client.latestRunReaching(token, cron, ['SUCCESS'])

  // Work accepted while its queues hold it: runs and a chat delivery, waiting behind paused queues.
  const connection = createProducerConnection(ownRedis.url)
  connection.on('error', () => {})
  const queues = createQueues(connection, stack.env.QUEUE_PREFIX!)
  for (const queue of Object.values(queues)) queue.on('error', () => {})
  t.teardown(async () => {
    await closeQueues(queues)
    connection.disconnect()
  })
  await Promise.all([queues[WORKFLOW_RUNS].pause(), queues[ASSISTANT_MAIN].pause()])
  const fired = await Promise.all([1, 2, 3].map(async () => client.fire(token, manual, {})))
  const wamid = newWamid()
  const delivered = await stack.call('POST', '/webhook/chat', { body: messagesDelivery(PHONE_NUMBER_ID, [{ from: '15557654321', text: 'hello', wamid }]) })
  t.equal(delivered.status, 200)
  for (const runId of fired) t.equal((await client.getRun(token, runId)).status, 'PENDING')
  t.equal((await sql`select id from chat_deliveries`).length, 1, 'the delivery is stored, not processed')

  const offsets = { api: stack.api.output().length, worker: stack.workers[0]!.output().length }
  await ownRedis.kill()
  await sleep(2000)
  await ownRedis.start()
  const returnedAt = Date.now()

  /** How long after Redis came back `check` first held; undefined when it did not within 30 s. */
  const recovered = async (what: string, check: () => Promise<boolean>): Promise<number | undefined> => {
    try {
      await waitFor(async () => await check() ? true : undefined, { what, timeoutMs: 30_000, intervalMs: 100 })
      return Date.now() - returnedAt
    } catch {
      return undefined
    }
  }
  const [runsMs, deliveryMs, cronMs] = await Promise.all([
    recovered('the fired runs to succeed', async () => (await Promise.all(fired.map(async (runId) => (await client.getRun(token, runId)).status))).every((status) => status === 'SUCCESS')),
    recovered('the chat delivery to be processed', async () => (await sql`select id from messages where wamid = ${wamid}`).length === 1),
    recovered('a cron tick to run again', async () => (await sql`select id from runs where workflow_id = ${cron} and created_at > ${new Date(returnedAt).toISOString()} and status = 'SUCCESS'`).length > 0)
  ])
  t.comment(`after Redis came back empty: pending runs done in ${runsMs} ms, chat delivery processed in ${deliveryMs} ms, cron ticking again in ${cronMs} ms`)
  t.ok(runsMs !== undefined && runsMs < RECOVERY_LIMIT_MS, `pending runs re-enqueued and done in ${runsMs} ms`)
  t.ok(deliveryMs !== undefined && deliveryMs < RECOVERY_LIMIT_MS, `stored chat delivery re-enqueued and processed in ${deliveryMs} ms`)
  t.ok(cronMs !== undefined && cronMs < RECOVERY_LIMIT_MS, `cron scheduler restored and ticking in ${cronMs} ms`)

  for (const [name, process] of [['api', stack.api], ['worker', stack.workers[0]!]] as const) {
    const lines = linesOf(process, offsets[name])
    const unstructured = lines.filter((line) => { try { JSON.parse(line); return false } catch { return true } })
    t.same(unstructured.slice(0, 5), [], `${name}: every line is a JSON log line (no raw stack trace)`)
    const messages = lines.flatMap((line) => { try { return [JSON.parse(line).msg as string] } catch { return [] } })
    t.equal(messages.filter((msg) => msg === 'redis unavailable').length, 1, `${name}: one line when Redis went away`)
    t.equal(messages.filter((msg) => msg === 'redis available again').length, 1, `${name}: one line when it was back`)
    const redisLines = messages.filter((msg) => /redis/i.test(msg))
    t.ok(redisLines.length <= 6, `${name}: ${redisLines.length} lines about Redis for the outage (${[...new Set(redisLines)].join(', ')})`)
  }
})
