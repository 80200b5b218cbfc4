import { eq } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { testConfig } from '@switchboard/testing/config'
import { messagesDelivery, newWamid } from '@switchboard/testing/fake-chat-platform'
import { chatDeliveryProcessor, type InboundChatMessage } from '../src/chat/inbound.ts'
import { reactToInboundMessage } from '../src/triggers/keyword.ts'
import { messages, runs, users, workflows } from '../src/db/schema/index.ts'
import { createLogger } from '../src/logger.ts'
import { WORKFLOW_RUNS } from '../src/queues/catalog.ts'
import { chatDeliveriesRepository } from '../src/chat/deliveries-repository.ts'
import { foldCounterDeltas } from '../src/workflows/counters.ts'

const PHONE_NUMBER_ID = '106540352242922'
const { db, queues, queuePrefix } = await createCoreTestContext(t)
const config = testConfig('postgres://unused', queuePrefix, { CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID, CHAT_ACCESS_TOKEN: 'token' })
const logger = createLogger('silent', 'chat-inbound-test')
const deliveries = chatDeliveriesRepository(db)

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()
const [keywordWorkflow] = await db.insert(workflows).values({
  userId: owner.id, name: 'price', triggerType: 'KEYWORD', triggerConfig: { keywords: ['price'] }, isActive: true, nodes: []
}).returning()
const [eventWorkflow] = await db.insert(workflows).values({
  userId: owner.id, name: 'log', triggerType: 'EVENT', triggerConfig: { eventName: 'chat.message.received' }, isActive: true, nodes: []
}).returning()

const runsOf = async (workflowId: string): Promise<Array<{ id: string }>> =>
  db.select({ id: runs.id }).from(runs).where(eq(runs.workflowId, workflowId))

/** The assistant-main processor, whose reaction to a message can be made to fail once, before or after it starts the runs. */
function processor (failOnce?: 'before runs' | 'after runs') {
  let failure = failOnce
  let calls = 0
  const processDelivery = chatDeliveryProcessor({
    db,
    config,
    logger,
    dispatchEvents: async () => {},
    onMessage: async (message: InboundChatMessage) => {
      calls++
      if (failure === 'before runs') {
        failure = undefined
        throw new Error('worker died before starting runs')
      }
      await reactToInboundMessage({ db, queues, eventFanoutMax: 100 }, message)
      if (failure === 'after runs') {
        failure = undefined
        throw new Error('worker died before recording the dispatch')
      }
    }
  })
  return { processDelivery, calls: () => calls }
}

const priceDelivery = (): Record<string, unknown> =>
  messagesDelivery(PHONE_NUMBER_ID, [{ from: '15551230001', name: 'Ana', text: 'what is the price?', wamid: newWamid() }])

t.test('a delivery retried after the worker died between storing the message and starting its runs starts them once', async (t) => {
  const payload = priceDelivery()
  const deliveryId = await deliveries.create(payload)
  const { processDelivery, calls } = processor('before runs')

  await t.rejects(processDelivery(deliveryId), /worker died before starting runs/)
  const [stored] = await db.select().from(messages)
  t.equal(stored.content, 'what is the price?', 'the message was stored by the failed attempt')
  t.equal(stored.dispatchedAt, null)
  t.equal((await runsOf(keywordWorkflow.id)).length, 0)

  t.same(await processDelivery(deliveryId), { messages: 0, duplicates: 1, statuses: 0, ignored: 0 }, 'the retry sees a stored message')
  const [keywordRun] = await runsOf(keywordWorkflow.id)
  const [eventRun] = await runsOf(eventWorkflow.id)
  t.ok(keywordRun, 'the retry started the KEYWORD run')
  t.ok(eventRun, 'the retry started the chat.message.received run')
  t.ok(await queues[WORKFLOW_RUNS].getJob(keywordRun.id), 'and enqueued it')
  t.not((await db.select().from(messages).where(eq(messages.id, stored.id)))[0].dispatchedAt, null, 'the dispatch is recorded')
  t.equal(await deliveries.get(deliveryId), null, 'the processed delivery is removed')

  await processDelivery(await deliveries.create(payload))
  t.equal(calls(), 2, 'a duplicate of a dispatched message does not reach the reaction')
  t.equal((await runsOf(keywordWorkflow.id)).length, 1)
  t.equal((await runsOf(eventWorkflow.id)).length, 1)
})

t.test('a delivery retried after the runs were started but before that was recorded starts nothing twice', async (t) => {
  const before = { keyword: (await runsOf(keywordWorkflow.id)).length, event: (await runsOf(eventWorkflow.id)).length }
  const deliveryId = await deliveries.create(priceDelivery())
  const { processDelivery, calls } = processor('after runs')

  await t.rejects(processDelivery(deliveryId), /before recording the dispatch/)
  t.equal((await runsOf(keywordWorkflow.id)).length, before.keyword + 1, 'the failed attempt started the KEYWORD run')

  await processDelivery(deliveryId)
  t.equal(calls(), 2, 'the retry reacted again')
  t.equal((await runsOf(keywordWorkflow.id)).length, before.keyword + 1, 'no second KEYWORD run')
  t.equal((await runsOf(eventWorkflow.id)).length, before.event + 1, 'no second event run')
  await foldCounterDeltas(db)
  const [workflow] = await db.select({ runCount: workflows.runCount }).from(workflows).where(eq(workflows.id, keywordWorkflow.id))
  t.equal(workflow.runCount, before.keyword + 1, 'runCount counts the run once')
})

t.test('a message that matches nothing is still recorded as dispatched, so its duplicates cost nothing', async (t) => {
  const payload = messagesDelivery(PHONE_NUMBER_ID, [{ from: '15551230002', text: 'hello', wamid: newWamid() }])
  const { processDelivery, calls } = processor()
  t.same(await processDelivery(await deliveries.create(payload)), { messages: 1, duplicates: 0, statuses: 0, ignored: 0 })
  t.same(await processDelivery(await deliveries.create(payload)), { messages: 0, duplicates: 1, statuses: 0, ignored: 0 })
  t.equal(calls(), 1)
})

t.test('beyond EVENT_FANOUT_MAX a message starts the oldest workflows and counts the others', async (t) => {
  const before = { keyword: (await runsOf(keywordWorkflow.id)).length, event: (await runsOf(eventWorkflow.id)).length }
  const message: InboundChatMessage = {
    phoneNumberId: PHONE_NUMBER_ID,
    userIds: [owner.id],
    phone: '15551230003',
    platformUserId: null,
    username: null,
    contactId: 'contact',
    name: 'Bo',
    text: 'price please',
    type: 'text',
    wamid: newWamid(),
    conversationId: 'conversation',
    messageId: 'message'
  }
  const bounded = await reactToInboundMessage({ db, queues, eventFanoutMax: 1 }, message)
  t.equal(bounded.keywordRunIds.length, 1, 'the oldest workflow (KEYWORD) started')
  t.same({ eventRunIds: bounded.eventRunIds, skipped: bounded.skipped }, { eventRunIds: [], skipped: 1 }, 'the newer one was left out and counted')

  const again = await reactToInboundMessage({ db, queues, eventFanoutMax: 100 }, message)
  t.same({ keywordRunIds: again.keywordRunIds, skipped: again.skipped }, { keywordRunIds: [], skipped: 0 }, 'the started run is not started twice')
  t.equal(again.eventRunIds.length, 1, 'the one left out starts with a larger bound')
  t.equal((await runsOf(keywordWorkflow.id)).length, before.keyword + 1)
  t.equal((await runsOf(eventWorkflow.id)).length, before.event + 1)
})
