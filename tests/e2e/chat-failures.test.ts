import t from 'tap'
import { deliver, fakeChatEnv, messagesDelivery, newWamid, startFakeChatPlatform, statusesDelivery } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/** Failed messages (README, Chat: failures): their error, the `chat.message.failed` event, statuses out of order. */

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'e2e-failures-secret'
/** Messages of the out-of-order test: 25 statuses each, 10,000 in all. */
const MESSAGES = 400

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, {
  env: {
    ...fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET })
  }
})
const token = await stack.adminToken()
const { client } = stack

async function post (payload: unknown): Promise<void> {
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, payload, APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status}`)
}

interface Message { id: string, wamid: string | null, status: string | null, error: { code: number | null, title: string, details: string | null } | null }

/** A customer who wrote (the window is open), and `count` texts sent to them; their wamids. */
async function customerWithSends (phone: string, count: number): Promise<string[]> {
  await post(messagesDelivery(PHONE_NUMBER_ID, [{ from: phone, name: 'Rui', text: 'hi', wamid: newWamid() }]))
  await waitFor(async () => (await stack.call('GET', '/api/chat/conversations?limit=500', { token })).body.some((c: { phone: string }) => c.phone === phone) ? true : undefined)
  const wamids: string[] = []
  let next = 0
  await Promise.all(Array.from({ length: 20 }, async () => {
    while (next < count) {
      const n = next++
      const res = await stack.call('POST', '/api/chat/send/text', { token, body: { to: phone, text: `message ${n}` } })
      if (res.status !== 200) throw new Error(`send ${n}: ${res.status}`)
      wamids[n] = res.body.messages[0].id
    }
  }))
  return wamids
}

async function messagesOf (phone: string): Promise<Message[]> {
  const { body } = await stack.call('GET', '/api/chat/conversations?limit=500', { token })
  const conversation = body.find((c: { phone: string }) => c.phone === phone)
  const all: Message[] = []
  let before: string | undefined
  for (;;) {
    const page = (await stack.call('GET', `/api/chat/conversations/${conversation.id}/messages?limit=500${before === undefined ? '' : `&before=${before}`}`, { token })).body as Message[]
    all.unshift(...page)
    if (page.length < 500) return all
    before = page[0]!.id
  }
}

const listener = await client.createWorkflow(token, {
  name: 'failed messages',
  triggerType: 'EVENT',
  triggerConfig: { eventName: 'chat.message.failed' },
  nodes: [{ id: 'note', type: 'set', config: { values: { wamid: '{{triggerData.wamid}}', code: '{{triggerData.error.code}}' } } }]
})

t.test('a failed status: the message carries its error, and chat.message.failed starts the listeners once', async (t) => {
  const phone = '15553000001'
  const [wamid] = await customerWithSends(phone, 1)
  const errors = [{ code: 131026, title: 'Message undeliverable', message: 'Message undeliverable', error_data: { details: 'The recipient is not on the platform' } }]
  await post(statusesDelivery(PHONE_NUMBER_ID, [{ wamid: wamid!, status: 'sent', recipientId: phone }, { wamid: wamid!, status: 'failed', recipientId: phone, errors }]))
  const run = await client.latestRunReaching(token, listener, ['SUCCESS', 'FAILED'])
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.triggerData, {
    wamid,
    phone,
    phoneNumberId: PHONE_NUMBER_ID,
    messageId: /./,
    conversationId: /./,
    error: { code: 131026, title: 'Message undeliverable', details: 'The recipient is not on the platform' }
  })
  const [message] = (await messagesOf(phone)).filter((m) => m.wamid === wamid)
  t.match(message, { status: 'failed', error: { code: 131026, title: 'Message undeliverable', details: 'The recipient is not on the platform' } })

  await post(statusesDelivery(PHONE_NUMBER_ID, [{ wamid: wamid!, status: 'failed', recipientId: phone, errors }]))
  await post(statusesDelivery(PHONE_NUMBER_ID, [{ wamid: wamid!, status: 'sent', recipientId: phone }]))
  await new Promise((resolve) => setTimeout(resolve, 500))
  t.equal((await client.runsOf(token, listener)).length, 1, 'a repeated failure is no new event')
  t.equal((await messagesOf(phone)).find((m) => m.wamid === wamid)?.status, 'failed', 'a late sent does not undo failed')
})

t.test('10,000 statuses out of order and repeated: every message ends at its furthest status, each failure one event', async (t) => {
  const phone = '15553000002'
  const wamids = await customerWithSends(phone, MESSAGES)
  const targets = ['read', 'delivered', 'failed', 'sent'] as const
  const path = { read: ['sent', 'delivered', 'read'], delivered: ['sent', 'delivered'], failed: ['sent', 'failed'], sent: ['sent'] }
  const statuses = wamids.flatMap((wamid, n) => {
    const steps = path[targets[n % 4]!]
    // Every step at least once, then repeats of any step: 25 statuses per message.
    return Array.from({ length: 25 }, (_, i) => {
      const status = (i < steps.length ? steps[i]! : steps[Math.floor(Math.random() * steps.length)]!) as 'sent' | 'delivered' | 'read' | 'failed'
      return { wamid, status, recipientId: phone, ...(status === 'failed' && { errors: [{ code: 131047, title: 'Re-engagement message' }] }) }
    })
  })
  for (let i = statuses.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [statuses[i], statuses[j]] = [statuses[j]!, statuses[i]!]
  }
  t.equal(statuses.length, 10_000)
  const batches = Array.from({ length: 100 }, (_, b) => statuses.slice(b * 100, b * 100 + 100))
  let next = 0
  await Promise.all(Array.from({ length: 10 }, async () => { while (next < batches.length) await post(statusesDelivery(PHONE_NUMBER_ID, batches[next++]!)) }))

  const expected = new Map(wamids.map((wamid, n) => [wamid, targets[n % 4]!]))
  const settled = await waitFor(async () => {
    const messages = (await messagesOf(phone)).filter((m) => expected.has(m.wamid ?? ''))
    return messages.length === MESSAGES && messages.every((m) => m.status === expected.get(m.wamid!)) ? messages : undefined
  }, { what: 'every message at its furthest status', timeoutMs: 90_000 })
  t.equal(settled.length, MESSAGES, 'every message at its furthest status')
  t.ok(settled.filter((m) => m.status === 'failed').every((m) => m.error?.code === 131047), 'each failed message carries its error')
  t.ok(settled.filter((m) => m.status !== 'failed').every((m) => m.error === null), 'no other message has an error')
  const failedRuns = await waitFor(async () => {
    const runs = await client.runsOf(token, listener, { limit: 500 })
    return runs.length >= MESSAGES / 4 + 1 ? runs : undefined
  }, { what: 'a listener run per failed message' })
  await new Promise((resolve) => setTimeout(resolve, 500))
  t.equal(failedRuns.length, MESSAGES / 4 + 1)
  t.equal((await client.runsOf(token, listener, { limit: 500 })).length, MESSAGES / 4 + 1, 'one chat.message.failed per failed message, however often its failure came')
})
