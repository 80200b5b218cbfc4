import { once } from 'node:events'
import { createServer as createHttpServer, type ServerResponse } from 'node:http'
import { connect, createServer as createTcpServer, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { REDIS_URL } from '@switchboard/testing/database'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/**
 * Fenced workers, end to end (issue 12): real api and worker processes, a local
 * HTTP sink counting deliveries. A worker cut off from Redis (its connections go
 * through a TCP proxy the test pauses) stops executing nodes before its job
 * lock can expire, and the run goes on elsewhere with every delivery in its log.
 * (A worker killed mid-call: worker-crash.test.ts.)
 */

/** The worker's BullMQ lockDuration (apps/worker/src/worker.ts). */
const LOCK_DURATION_MS = 10_000

/**
 * A TCP proxy to Redis that can be paused: while paused, bytes in both
 * directions are held (connections stay open, nothing answers), as when a
 * network partition cuts a worker off; resuming delivers them.
 */
async function pausableProxy (target: URL) {
  const links = new Set<{ forward: () => void, sockets: Socket[] }>()
  let paused = false
  const server = createTcpServer((client) => {
    const upstream = connect(Number(target.port), target.hostname)
    const held: Array<[Socket, Buffer]> = []
    const relay = (from: Socket, to: Socket): void => {
      from.on('data', (chunk: Buffer) => { if (paused) held.push([to, chunk]); else to.write(chunk) })
      from.on('close', () => { to.destroy() })
      from.on('error', () => { to.destroy() })
    }
    relay(client, upstream)
    relay(upstream, client)
    const link = { forward: () => { for (const [to, chunk] of held.splice(0)) to.write(chunk) }, sockets: [client, upstream] }
    links.add(link)
    client.on('close', () => { links.delete(link) })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `redis://127.0.0.1:${(server.address() as { port: number }).port}`,
    pause: () => { paused = true },
    resume: () => {
      paused = false
      for (const link of links) link.forward()
    },
    close: () => {
      for (const link of links) for (const socket of link.sockets) socket.destroy()
      server.close()
    }
  }
}

interface Delivery { path: string, key: string | undefined, at: number }
const deliveries: Delivery[] = []
const answer = (res: ServerResponse): void => { res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}') }
const sink = createHttpServer((req, res) => {
  const key = req.headers['idempotency-key']
  const delivery = { path: req.url ?? '', key: typeof key === 'string' ? key : undefined, at: Date.now() }
  deliveries.push(delivery)
  req.resume()
  setTimeout(() => { answer(res) }, 250)
})
sink.listen(0, '127.0.0.1')
await once(sink, 'listening')
const sinkUrl = `http://127.0.0.1:${(sink.address() as { port: number }).port}`

const proxy = await pausableProxy(new URL(REDIS_URL))
t.teardown(() => {
  proxy.resume()
  proxy.close()
  sink.closeAllConnections()
  sink.close()
})

const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true', REDIS_URL: proxy.url } })
const token = await stack.adminToken()

t.test('a worker cut off from Redis stops executing nodes before its job lock can expire; the run is taken over and completes', async (t) => {
  // Longer than the outage, so that a worker that did not stop would still be calling steps when its lock expired.
  const steps = 60
  const nodes = Array.from({ length: steps }, (_, i) => ({
    id: `s${i}`,
    type: 'http_request',
    config: { url: `${sinkUrl}/step/${i}`, timeoutMs: 30_000 },
    ...(i < steps - 1 && { next: `s${i + 1}` })
  }))
  const runId = await stack.client.fire(token, await stack.client.createWorkflow(token, { name: 'partitioned', nodes }))
  await waitFor(async () => deliveries.filter((d) => d.path.startsWith('/step/')).length >= 3 ? true : undefined, { what: 'the first steps' })

  // Its last lock renewal was at or before this moment: the lock expires in Redis by pausedAt + lockDuration.
  const pausedAt = Date.now()
  proxy.pause()
  await sleep(LOCK_DURATION_MS + 4000)
  const duringPause = deliveries.filter((d) => d.path.startsWith('/step/') && d.at > pausedAt)
  const lastStarted = Math.max(...deliveries.filter((d) => d.path.startsWith('/step/')).map((d) => d.at))
  t.ok(lastStarted < pausedAt + LOCK_DURATION_MS, `the last node started ${lastStarted - pausedAt} ms into the outage, before the lock expired (${LOCK_DURATION_MS} ms)`)
  t.match(stack.workers[0]!.output(), /job stopped: its lock cannot be kept/)
  t.comment(`steps delivered during the outage: ${duringPause.length}; the worker stopped ${lastStarted - pausedAt} ms into it`)

  const resumedAt = Date.now()
  proxy.resume()
  const run = await stack.client.runReaching(token, runId, undefined, { timeoutMs: 60_000, intervalMs: 250 })
  t.comment(`run completed ${Date.now() - resumedAt} ms after Redis came back`)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  const perStep = Array.from({ length: steps }, (_, i) => deliveries.filter((d) => d.path === `/step/${i}`))
  t.ok(perStep.every((calls) => calls.length >= 1), 'every step was delivered')
  t.ok(perStep.filter((calls) => calls.length > 1).length <= 1, 'at most the step in flight when the worker stopped was delivered twice')
  t.ok(perStep.every((calls, i) => calls.every((call) => call.key === `${runId}:s${i}`)), 'each step with its own Idempotency-Key, the same on both deliveries')
  // Every delivery is in the run's log. The call in flight when the worker stopped is logged
  // before it leaves, and the stop may abort it before it reached the sink: one step may have one
  // line more than it has deliveries.
  const unsent: number[] = []
  for (let i = 0; i < steps; i++) {
    const logged = run.logs.filter((line) => line.message === `Calling GET ${sinkUrl}/step/${i} (attempt 1)`).length
    if (logged < perStep[i]!.length || logged > perStep[i]!.length + 1) t.fail(`step ${i}: ${perStep[i]!.length} deliveries, ${logged} in the run's log`)
    if (logged > perStep[i]!.length) unsent.push(i)
  }
  const twice = perStep.filter((calls) => calls.length > 1).length
  t.ok(unsent.length + twice <= 1, `every delivery is in the run's log; only the call in flight at the stop was sent twice (${twice}) or logged without reaching the sink (${unsent.join(', ') || 'none'})`)
  const runLines = run.logs.filter((line) => line.nodeId === null).map((line) => line.message)
  t.comment(runLines.join(' | '))
  t.ok(runLines.some((line) => /^Run (taken over after its worker stopped|resumed after)/.test(line)), 'the log says how the run went on')
})
