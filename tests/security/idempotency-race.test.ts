import { once } from 'node:events'
import { connect, createServer, type Socket } from 'node:net'
import t from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { foldCounterDeltas } from '@switchboard/core/workflows'
import { REDIS_URL } from '@switchboard/testing/database'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { Teardown } from '@switchboard/testing/teardown'

/**
 * A TCP proxy in front of Redis that can stop passing the clients' commands on
 * (they wait, unanswered, like a Redis that hangs) and then cut those connections,
 * so that what was held never reaches Redis.
 */
async function redisProxy (t: Teardown): Promise<{ url: string, hold: () => void, cut: () => void }> {
  const target = new URL(REDIS_URL)
  const pairs = new Set<{ client: Socket, upstream: Socket }>()
  let holding = false
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname)
    const pair = { client, upstream }
    pairs.add(pair)
    client.on('data', (chunk) => { if (!holding) upstream.write(chunk) })
    upstream.on('data', (chunk) => { client.write(chunk) })
    const close = (): void => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    for (const socket of [client, upstream]) {
      socket.on('error', close)
      socket.on('close', close)
    }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    for (const { client, upstream } of pairs) { client.destroy(); upstream.destroy() }
    server.close()
  })
  return {
    url: `redis://127.0.0.1:${(server.address() as { port: number }).port}`,
    hold: () => { holding = true },
    cut: () => {
      for (const { client, upstream } of pairs) { client.destroy(); upstream.destroy() }
      holding = false
    }
  }
}

t.test('two requests with one Idempotency-Key while Redis hangs get the one stored run, which runs once Redis is back', async (t) => {
  const redis = await redisProxy(t)
  // The api alone at first: the worker comes once Redis answers again.
  const stack = await startStack(t, { workers: 0, env: { REDIS_URL: redis.url } })
  const token = await stack.adminToken()
  const database = createDatabase(stack.env.DATABASE_URL!, { max: 1 })
  t.teardown(database.close)
  const { sql } = database

  const workflowId = await stack.client.createWorkflow(token, { name: 'race', nodes: [{ id: 'n1', type: 'set', config: { values: { done: true } } }] })
  const fire = async (): Promise<{ status: number, body: unknown }> => {
    const { status, body } = await stack.call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: {}, headers: { 'idempotency-key': 'order-7' } })
    return { status, body }
  }

  // Redis stops answering: the first request commits its run and its key; its enqueue waits (3 s) apart from the answer.
  redis.hold()
  const first = fire()
  const runId = await waitFor(async () => (await sql`select id from runs where workflow_id = ${workflowId}`)[0]?.id as string | undefined, { what: 'the first run row' })
  // Meanwhile a retry of the same request finds the key and is answered with the first run's id.
  const second = await fire()
  t.same(second, { status: 202, body: { runId } }, 'the concurrent request is answered with the first run')

  // The first request was answered at its commit; its enqueue then times out, and the run stays PENDING.
  t.same(await first, { status: 202, body: { runId } }, 'the first request is answered with the same, stored run')
  const stored = await stack.call('GET', `/api/automation/runs/${runId}`, { token })
  t.equal(stored.status, 200, 'the run id both requests got exists')
  t.equal(stored.body.status, 'PENDING')
  t.same(await sql`select count(*)::int as runs from runs where workflow_id = ${workflowId}`, [{ runs: 1 }], 'one run for the key')
  await foldCounterDeltas(database.db)
  t.same(await sql`select run_count as "runCount" from workflows where id = ${workflowId}`, [{ runCount: 1 }])
  t.same(await sql`select run_id as "runId" from idempotency_keys where workflow_id = ${workflowId}`, [{ runId }], 'the key still names it')

  // Redis comes back without the job (the held connection is cut). The worker's reconciler
  // queues PENDING runs older than its grace: the run is made that old rather than waited for.
  redis.cut()
  await sql`update runs set created_at = created_at - interval '1 minute' where id = ${runId}`
  await stack.startWorker()
  const finished = await stack.client.runReaching(token, runId, ['SUCCESS', 'FAILED'], { timeoutMs: 30_000 })
  t.match(finished, { status: 'SUCCESS', result: { n1: { done: true } } }, 'the run was executed')
})
