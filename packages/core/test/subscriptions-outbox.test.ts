import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { newWamid } from '@switchboard/testing/fake-chat-platform'
import { conversationsRepository } from '../src/chat/conversations.ts'
import { loadConfig } from '../src/config.ts'
import { eventDeliveries, eventDeliveryAttempts, eventSubscriptions, users, workflows } from '../src/db/schema/index.ts'
import { encryptSecret, keyringOf } from '../src/encryption.ts'
import { createHttpClient } from '../src/engine/nodes/http-client.ts'
import { createLogger } from '../src/logger.ts'
import { eventDeliverer } from '../src/subscriptions/delivery.ts'
import { dispatchEvents } from '../src/triggers/event.ts'

const PHONE_NUMBER_ID = '106540352242922'
const { db, queues } = await createCoreTestContext(t)
const logger = createLogger('silent', 'subscriptions-outbox-test')
const conversations = conversationsRepository(db)
const [listening] = await db.insert(users).values({ email: 'listening@example.com', passwordHash: 'x' }).returning()
const [deaf] = await db.insert(users).values({ email: 'deaf@example.com', passwordHash: 'x' }).returning()
const [subscription] = await db.insert(eventSubscriptions).values({
  userId: listening!.id, url: 'https://hooks.example.com/', events: ['chat.message.received', 'chat.message.status'], secretEncrypted: 'unused here'
}).returning()
// A chat.message.received EVENT workflow of the listening user: started by the keyword path, never by a dispatch.
await db.insert(workflows).values({ userId: listening!.id, name: 'log', triggerType: 'EVENT', triggerConfig: { eventName: 'chat.message.received' }, isActive: true, nodes: [] })
const userIds = [listening!.id, deaf!.id]
const eventsOf = async (name: string) => await db.execute<{ id: string, user_id: string, payload: Record<string, unknown> }>(sql`select id, user_id, payload from events where name = ${name} order by id`)

t.test('chat.message.received: written with the message, for the users with a subscription to it only', async (t) => {
  const wamid = newWamid()
  const stored = await conversations.recordInbound({ phoneNumberId: PHONE_NUMBER_ID, phone: '15550001111', wamid, type: 'text', content: 'hello', receivedAt: new Date(), userIds })
  t.equal(stored?.eventIds.length, 1)
  const [event] = await eventsOf('chat.message.received')
  t.match(event, { user_id: listening!.id, payload: { messageId: stored!.messageId, conversationId: stored!.conversationId, wamid, phone: '15550001111', phoneNumberId: PHONE_NUMBER_ID, type: 'text', text: 'hello', name: null } })
  t.equal(await conversations.recordInbound({ phoneNumberId: PHONE_NUMBER_ID, phone: '15550001111', wamid, type: 'text', content: 'hello', receivedAt: new Date(), userIds }).then((again) => again?.eventIds.length ?? 0), 0, 'a delivery repeated writes none again')

  await dispatchEvents({ db, queues, logger, eventFanoutMax: 10 }, { ids: stored!.eventIds })
  const deliveries = await db.select().from(eventDeliveries)
  t.match(deliveries, [{ subscriptionId: subscription!.id, eventId: event!.id, eventName: 'chat.message.received', status: 'pending', payload: event!.payload }], 'one delivery, with a copy of the payload')
  t.equal((await db.execute(sql`select id from runs`)).length, 0, 'the dispatch started no workflow: the keyword path does')
  t.equal((await queues['event-deliveries'].getJob(deliveries[0]!.id))?.data.deliveryId, deliveries[0]!.id, 'queued under its own id')

  // A dispatch repeated (a crash between commit and mark) makes no second delivery.
  await db.execute(sql`update events set dispatched_at = null`)
  await dispatchEvents({ db, queues, logger, eventFanoutMax: 10 }, { ids: stored!.eventIds })
  t.equal((await db.select().from(eventDeliveries)).length, 1)
})

t.test('chat.message.status: each forward status, for the users someone listens for; chat.message.failed as before', async (t) => {
  const wamid = newWamid()
  await conversations.recordOutbound({ phoneNumberId: PHONE_NUMBER_ID, address: '15550002222', wamid, type: 'text', content: 'hi', sender: { type: 'workflow', id: 'w1', runId: 'r1' } })
  const delivered = await conversations.applyStatus(PHONE_NUMBER_ID, wamid, 'delivered', undefined, userIds)
  t.same(delivered, { applied: true, eventIds: [delivered.eventIds[0]] })
  const read = await conversations.applyStatus(PHONE_NUMBER_ID, wamid, 'read', undefined, userIds)
  t.equal(read.eventIds.length, 1)
  const statuses = await eventsOf('chat.message.status')
  t.equal(statuses.length, 2)
  t.same(statuses.map((event) => [event.user_id, event.payload.status]).sort(), [[listening!.id, 'delivered'], [listening!.id, 'read']])
  t.same((await conversations.applyStatus(PHONE_NUMBER_ID, wamid, 'delivered', undefined, userIds)).eventIds, [], 'a status that does not move forward: none')

  await db.update(eventSubscriptions).set({ enabled: false })
  const other = newWamid()
  await conversations.recordOutbound({ phoneNumberId: PHONE_NUMBER_ID, address: '15550002222', wamid: other, type: 'text', content: 'hi', sender: { type: 'workflow', id: 'w1', runId: 'r1' } })
  t.same((await conversations.applyStatus(PHONE_NUMBER_ID, other, 'delivered', undefined, userIds)).eventIds, [], 'a disabled subscription listens to nothing')
})

t.test('a delivery goes through the guard of http_request: a name resolving to loopback is refused at connect, nothing sent', async (t) => {
  const sink = await startDeliverySink(t)
  const keyring = keyringOf({ encryptionKey: randomBytes(32), encryptionKeysPrevious: [] })
  const http = createHttpClient({ allowPrivate: false })
  t.teardown(http.close)
  const config = loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'subscriptions-')), EVENT_DELIVERY_RETRY_WINDOW_MS: '0' }).eventSubscriptions
  const [guarded] = await db.insert(eventSubscriptions).values({
    userId: deaf!.id, url: `http://localhost:${new URL(sink.url).port}/hook`, events: ['workflow.run.failed'], secretEncrypted: encryptSecret(keyring, `whsec_${Buffer.alloc(32, 5).toString('base64')}`)
  }).returning()
  const [delivery] = await db.insert(eventDeliveries).values({ id: 'dguarded', subscriptionId: guarded!.id, eventId: 'e1', eventName: 'workflow.run.failed', payload: {}, nextAttemptAt: new Date() }).returning()
  const deliverer = eventDeliverer({ db, keyring, dispatcher: http.dispatcher, config, logger })
  t.same(await deliverer.deliver(delivery!.id), { outcome: 'failed' }, 'a window of 0: one attempt, then failed')
  const [attempt] = await db.select().from(eventDeliveryAttempts)
  t.match(attempt, { deliveryId: 'dguarded', statusCode: null, error: 'Blocked request to private address' })
  t.equal(sink.deliveries.length, 0, 'nothing reached the loopback server')
  t.same(await deliverer.deliver(delivery!.id), { outcome: 'skipped' }, 'a finished delivery is not sent again by its job')
})
