import t from 'tap'
import { deliver, fakeChatEnv, messagesDelivery, newWamid, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { fakeModelEnv, startFakeModelProvider } from '@switchboard/testing/fake-model-provider'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'reliability-assistant-secret'
const CUSTOMER = '15557000001'

const platform = await startFakeChatPlatform()
const provider = await startFakeModelProvider()
t.teardown(async () => { await Promise.all([platform.close(), provider.close()]) })
// One attempt of at most a second: the turn's lease is 1 s + 5 s (README, The assistant: Faults).
const stack = await startStack(t, {
  env: {
    ...fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }),
    ...fakeModelEnv(provider),
    AI_TIMEOUT_MS: '1000',
    AI_MAX_RETRIES: '0'
  }
})
const token = await stack.adminToken()

t.test('a worker SIGKILLed while its turn waits for the model: another worker takes the turn over, one draft', async (t) => {
  // The first model call is answered too late for the killed worker; the turn's second run gets the default reply.
  provider.script({ delayMs: 800, then: { reply: 'from the killed worker' } })
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, name: 'Ivo', text: 'Is the shop open today?', wamid: newWamid() }]), APP_SECRET)
  t.equal(res.status, 200)
  await provider.waitForRequests(1)
  await stack.workers[0]!.stop('SIGKILL')
  await stack.startWorker()

  const conversation = await waitFor(async () => {
    const { body } = await stack.call('GET', '/api/chat/conversations', { token })
    return (body as Array<{ id: string, phone: string }>).find((c) => c.phone === CUSTOMER)
  }, { what: 'the conversation' })
  const turn = await waitFor(async () => {
    const { body } = await stack.call('GET', `/api/chat/conversations/${conversation.id}/turns`, { token })
    return body[0]?.status === 'done' || body[0]?.status === 'failed' ? body[0] : undefined
  }, { what: 'the turn to end on the new worker', timeoutMs: 40_000 })
  t.equal(turn.outcome, 'drafted', turn.error ?? '')
  t.equal(turn.attempts, 2, 'claimed by the killed worker, then taken over')
  t.equal(provider.requests.length, 2, 'the model was asked again by the worker that took the turn over')
  const { body: drafts } = await stack.call('GET', `/api/chat/conversations/${conversation.id}/drafts`, { token })
  t.equal(drafts.length, 1, 'one draft for the message')
  t.equal(drafts[0].content, 'Echo: Is the shop open today?', 'the draft of the turn that finished')
  const { body: conversations } = await stack.call('GET', '/api/chat/conversations', { token })
  t.equal(conversations.find((c: { id: string }) => c.id === conversation.id).pendingApprovalCount, 1)
  t.equal(platform.sends().length, 0, 'nothing was sent in HYBRID')
})
