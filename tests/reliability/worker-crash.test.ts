import t from 'tap'
import { startDeliverySink, type SinkAnswer } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

// The first call hangs (the worker is killed while waiting for it); later calls answer at once.
const sink = await startDeliverySink(t, { answer: async () => sink.deliveries.length > 1 ? {} : await new Promise<SinkAnswer>(() => {}) })
const calls = (): string[] => sink.deliveries.map((delivery) => delivery.path)

const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
const token = await stack.adminToken()

t.test('a worker SIGKILLed mid-run: a restarted worker takes the run over and brings it to a terminal state', async (t) => {
  const created = await stack.call('POST', '/api/automation/workflows', {
    token,
    body: {
      name: 'crash',
      triggerType: 'MANUAL',
      isActive: true,
      nodes: [
        { id: 'before', type: 'set', config: { values: { step: 1 } }, next: 'slow' },
        { id: 'slow', type: 'http_request', config: { url: `${sink.url}/slow`, timeoutMs: 60000 }, next: 'after' },
        { id: 'after', type: 'set', config: { values: { step: 3 } } }
      ]
    }
  })
  t.equal(created.status, 201)
  const fired = await stack.call('POST', `/api/automation/workflows/${created.body.id}/fire`, { token, body: {} })
  t.equal(fired.status, 202)
  const runId = fired.body.runId as string

  await waitFor(async () => calls().length > 0 ? true : undefined, { what: 'the slow call to start' })
  const running = await stack.call('GET', `/api/automation/runs/${runId}`, { token })
  t.equal(running.body.status, 'RUNNING')

  await stack.workers[0]!.stop('SIGKILL')
  await stack.startWorker()

  // The dead worker's job lock has to expire before the job comes back: seconds, not minutes.
  const run = await stack.client.runReaching(token, runId, undefined, { timeoutMs: 60_000, intervalMs: 250 })

  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.after, { step: 3 })
  t.match(run.result.slow, { status: 200, body: { ok: true } })
  t.same(calls(), ['/slow', '/slow'], 'the interrupted node ran again; the completed one did not')
  t.same(sink.deliveries.map((delivery) => delivery.idempotencyKey), [`${runId}:slow`, `${runId}:slow`], 'both deliveries carry the node\'s Idempotency-Key')
  t.equal(run.logs.filter((line: { message: string }) => line.message === `Calling GET ${sink.url}/slow (attempt 1)`).length, 2, 'both deliveries are in the run\'s log')
  t.ok(run.logs.some((line: { message: string }) => line.message === 'Run taken over after its worker stopped (attempt 1)'))
  t.equal(run.logs.filter((line: { message: string }) => line.message === 'Node before (set) started').length, 1)
})
