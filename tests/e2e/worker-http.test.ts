/**
 * The worker's own listener (WORKER_HTTP_PORT) for probes and scraping, and WORKER_QUEUES:
 * a worker process consumes only the queues it is given.
 */
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { entryArgs } from '@switchboard/testing/entries'
import { testEnv } from '@switchboard/testing/config'
import { freePort, spawnTied, startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const workerPort = await freePort()
const stack = await startStack(t, { env: { WORKER_HTTP_PORT: String(workerPort), WORKER_QUEUES: 'agent-execution' } })
const workerUrl = `http://127.0.0.1:${workerPort}`

t.test('live, ready with both stores, Prometheus metrics; nothing else', async (t) => {
  const live = await fetch(`${workerUrl}/health/live`)
  t.equal(live.status, 200)
  t.same(await live.json(), { status: 'ok' })
  const ready = await fetch(`${workerUrl}/health/ready`)
  t.equal(ready.status, 200)
  t.same(await ready.json(), { status: 'ok', checks: { database: 'ok', redis: 'ok' } })
  const metrics = await fetch(`${workerUrl}/metrics`)
  t.equal(metrics.status, 200)
  t.match(metrics.headers.get('content-type'), /^text\/plain/)
  t.match(await metrics.text(), /^process_cpu_user_seconds_total \d/m)
  t.equal((await fetch(`${workerUrl}/api/automation/queues`)).status, 404)
  t.equal((await fetch(`${workerUrl}/health/ready`, { method: 'POST' })).status, 405)
})

t.test('WORKER_QUEUES: the worker takes agent runs and leaves other runs to other workers', async (t) => {
  t.match(stack.workers[0]!.output(), /"queues":\["agent-execution"\]/)
  const token = await stack.adminToken()
  const { client } = stack
  const create = async (triggerType: string): Promise<string> =>
    client.createWorkflow(token, { name: triggerType, triggerType, nodes: [{ id: 'a', type: 'set', config: { values: { x: '1' } } }] })
  const agentRun = await client.fire(token, await create('AGENT'))
  const manualRun = await client.fire(token, await create('MANUAL'))
  await client.runReaching(token, agentRun, ['SUCCESS'])
  t.pass('the agent run succeeded')
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  t.equal((await client.getRun(token, manualRun)).status, 'PENDING', 'the workflow-runs queue is left alone')
})

t.test('liveness answers while the worker is still connecting; readiness does not', async (t) => {
  const port = await freePort()
  const unusedRedis = await freePort()
  const env = { ...testEnv(stack.env.DATABASE_URL!, 'sbtest-unused', { REDIS_URL: `redis://127.0.0.1:${unusedRedis}`, WORKER_HTTP_PORT: String(port), LOG_LEVEL: 'info' }) }
  const child = spawnTied(process.execPath, entryArgs('apps/worker/src/main.ts'), { cwd: ROOT, env: { ...process.env, ...env }, stdio: 'ignore' })
  const exited = once(child, 'exit')
  t.teardown(async () => {
    child.kill('SIGKILL')
    await exited
  })
  const live = await waitFor(async () => {
    try {
      return await fetch(`http://127.0.0.1:${port}/health/live`)
    } catch {
      return undefined
    }
  }, { what: 'the worker listener' })
  t.equal(live.status, 200)
  const ready = await fetch(`http://127.0.0.1:${port}/health/ready`)
  t.equal(ready.status, 503)
  t.same(await ready.json(), { status: 'unavailable', checks: { worker: 'starting' } })
})

t.test('invalid WORKER_QUEUES stops the worker with the setting named', async (t) => {
  const child = spawnTied(process.execPath, entryArgs('apps/worker/src/main.ts'), {
    cwd: ROOT,
    env: { ...process.env, ...stack.env, WORKER_QUEUES: 'workflow-runs,emails' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const [code] = await once(child, 'exit')
  t.equal(code, 78, 'EX_CONFIG')
  t.match(JSON.parse(output), {
    name: 'worker',
    settings: ['WORKER_QUEUES'],
    problems: ['WORKER_QUEUES must be a comma-separated list of workflow-runs, scheduled-tasks, agent-execution, assistant-main, chat-broadcasts, event-deliveries, knowledge-index, got "emails"']
  })
})
