import t from 'tap'
import { fakeChatEnv, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const PHONE_NUMBER_ID = '106540352242922'
const RECIPIENTS = 300

/** Every template send the platform received, by recipient. */
const received = new Map<string, number>()
const platform = await startFakeChatPlatform({
  onRequest: (request) => {
    const body = request.body as { type?: string, to?: string } | undefined
    if (request.method === 'POST' && body?.type === 'template' && typeof body.to === 'string') received.set(body.to, (received.get(body.to) ?? 0) + 1)
  }
})
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, {
  env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID })
})
const token = await stack.adminToken()

t.test('a worker SIGKILLed mid-broadcast: another finishes it; none lost, none skipped, repeats only of interrupted sends and counted', async (t) => {
  const recipients = Array.from({ length: RECIPIENTS }, (_, n) => ({ to: `1558${String(n).padStart(6, '0')}` }))
  const created = await stack.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'hello_world', recipients, ratePerSecond: 100 } })
  t.equal(created.status, 201)
  const id = created.body.id as string
  await waitFor(async () => received.size >= 80 ? true : undefined, { what: 'the first sends' })
  await stack.workers[0]!.stop('SIGKILL')
  const atKill = received.size
  await stack.startWorker()

  const done = await waitFor(async () => {
    const { body } = await stack.call('GET', `/api/chat/broadcasts/${id}`, { token })
    return body.status === 'done' ? body : undefined
  }, { what: 'the broadcast to be finished by the new worker', timeoutMs: 90_000 })
  t.ok(atKill < RECIPIENTS, `the worker was killed mid-broadcast (${atKill} of ${RECIPIENTS} sent)`)
  t.match(done.counts, { sent: RECIPIENTS, queued: 0, failed: 0, skipped: 0 }, 'every recipient sent, none skipped')
  t.equal(received.size, RECIPIENTS, 'every recipient reached')
  const twice = [...received.values()].filter((count) => count > 1).length
  t.ok([...received.values()].every((count) => count <= 2), 'no recipient reached more than twice')
  t.ok(twice <= done.repeated, `recipients reached twice (${twice}) are among the repeated sends counted (${done.repeated})`)
  t.ok(done.repeated <= 16, `only the sends in flight at the kill were repeated (${done.repeated}, at most 16 lanes)`)
})
