import { and, asc, eq, inArray, or } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { testConfig } from '@switchboard/testing/config'
import { messagesDelivery, newWamid } from '@switchboard/testing/fake-chat-platform'
import { conversationsRepository } from '../src/chat/conversations.ts'
import { chatDeliveriesRepository } from '../src/chat/deliveries-repository.ts'
import { chatDeliveryProcessor, type InboundChatMessage } from '../src/chat/inbound.ts'
import { LABEL_BOUNDS } from '../src/chat/labels.ts'
import { notesRepository } from '../src/chat/notes.ts'
import { assistantTurns, chatAsks, chatContacts, conversationNotes, conversations, messages, runs, users, workflows } from '../src/db/schema/index.ts'
import { createLogger } from '../src/logger.ts'
import { WORKFLOW_RUNS } from '../src/queues/catalog.ts'

/**
 * Customers known by username (README, Customers known by username), against the database: what
 * tests/e2e/chat-usernames.test.ts does not cover. A phone recycled to a new platform user id, what
 * the join of a phone record and a platform-user-id record folds (labels, unread counts, consent,
 * attributes, notes, assistant turns, asks), a message that names nobody, and the username, parent id
 * and names a message writes. Each test uses customers of its own.
 */

const PHONE_NUMBER_ID = '106540352242931'
const { db, queuePrefix } = await createCoreTestContext(t)
const config = testConfig('postgres://unused', queuePrefix, { CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID, CHAT_ACCESS_TOKEN: 'token' })
const repository = conversationsRepository(db)
const deliveries = chatDeliveriesRepository(db)

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()
const [workflow] = await db.insert(workflows).values({ userId: owner!.id, name: 'asks', triggerType: 'MANUAL', isActive: true, nodes: [] }).returning()

let customers = 0
/** A customer of the test's own: a phone and two platform user ids (the second for a number's next owner). */
function newCustomer (): { phone: string, userId: string, otherUserId: string, username: string } {
  const n = String(++customers).padStart(4, '0')
  return { phone: `1555710${n}`, userId: `US.7100000000${n}`, otherUserId: `US.7199999999${n}`, username: `@customer${n}` }
}

interface Inbound { phone?: string, userId?: string, username?: string, parentUserId?: string, name?: string, text?: string }

/** An inbound message stored as the delivery processor stores it; its conversation, contact and message. */
async function inbound (who: Inbound): Promise<{ conversationId: string, contactId: string, messageId: string }> {
  const stored = await repository.recordInbound({
    phoneNumberId: PHONE_NUMBER_ID,
    phone: who.phone ?? '',
    ...(who.userId !== undefined && { platformUserId: who.userId }),
    ...(who.username !== undefined && { username: who.username }),
    ...(who.parentUserId !== undefined && { parentPlatformUserId: who.parentUserId }),
    ...(who.name !== undefined && { name: who.name }),
    wamid: newWamid(),
    type: 'text',
    content: who.text ?? 'hello',
    receivedAt: new Date()
  })
  if (stored === null) throw new Error('the message was not stored')
  return stored
}

/** Every conversation and contact row of the customer, by either identifier, straight from the table. */
async function recordsOf (customer: { phone: string, userId: string }) {
  return {
    conversations: await db.select().from(conversations).where(and(eq(conversations.phoneNumberId, PHONE_NUMBER_ID),
      or(eq(conversations.phone, customer.phone), eq(conversations.platformUserId, customer.userId)))).orderBy(asc(conversations.createdAt)),
    contacts: await db.select().from(chatContacts).where(and(eq(chatContacts.phoneNumberId, PHONE_NUMBER_ID),
      or(eq(chatContacts.phone, customer.phone), eq(chatContacts.platformUserId, customer.userId)))).orderBy(asc(chatContacts.createdAt))
  }
}

const conversation = async (id: string) => (await db.select().from(conversations).where(eq(conversations.id, id)))[0]
const contact = async (id: string) => (await db.select().from(chatContacts).where(eq(chatContacts.id, id)))[0]
const contentsOf = async (conversationId: string): Promise<string[]> =>
  (await db.select({ content: messages.content }).from(messages).where(eq(messages.conversationId, conversationId)).orderBy(asc(messages.createdAt), asc(messages.content)))
    .map((row) => row.content)

/** A phone record and a platform-user-id record of one customer, made by a message naming only one of them each. */
async function twoRecords (t: Test, customer: { phone: string, userId: string, username: string }, messagesEach: { byPhone: number, byUser: number } = { byPhone: 1, byUser: 1 }) {
  let byPhone = await inbound({ phone: customer.phone, name: 'Phone profile', text: 'by phone 0' })
  for (let i = 1; i < messagesEach.byPhone; i++) byPhone = await inbound({ phone: customer.phone, name: 'Phone profile', text: `by phone ${i}` })
  let byUser = await inbound({ userId: customer.userId, username: customer.username, name: 'User profile', text: 'by user 0' })
  for (let i = 1; i < messagesEach.byUser; i++) byUser = await inbound({ userId: customer.userId, username: customer.username, name: 'User profile', text: `by user ${i}` })
  t.not(byPhone.conversationId, byUser.conversationId, 'two conversations until a message names both')
  t.not(byPhone.contactId, byUser.contactId, 'two contacts until a message names both')
  return { byPhone, byUser }
}

t.test('a recycled phone: the number\'s new owner (another platform user id) gets records of their own, the old ones keep their history without the phone', async (t) => {
  const customer = newCustomer()
  const first = await inbound({ phone: customer.phone, userId: customer.userId, username: customer.username, name: 'Old owner', text: 'old 1' })
  await inbound({ phone: customer.phone, userId: customer.userId, text: 'old 2' })
  await inbound({ userId: customer.userId, text: 'old 3' })
  t.same(await contentsOf(first.conversationId), ['old 1', 'old 2', 'old 3'])

  const recycled = await inbound({ phone: customer.phone, userId: customer.otherUserId, username: '@newowner', name: 'New owner', text: 'new 1' })
  t.not(recycled.conversationId, first.conversationId, 'a conversation of the new owner\'s own')
  t.not(recycled.contactId, first.contactId, 'a contact of the new owner\'s own')
  t.match(await conversation(first.conversationId), { phone: '', platformUserId: customer.userId, username: customer.username, name: 'Old owner' },
    'the old conversation is no longer the phone\'s, and still the old owner\'s')
  t.match(await contact(first.contactId), { phone: '', platformUserId: customer.userId, username: customer.username, name: 'Old owner' })
  t.same(await contentsOf(first.conversationId), ['old 1', 'old 2', 'old 3'], 'the old owner\'s history stays with them')
  t.match(await conversation(recycled.conversationId), { phone: customer.phone, platformUserId: customer.otherUserId, username: '@newowner', name: 'New owner' })
  t.match(await contact(recycled.contactId), { phone: customer.phone, platformUserId: customer.otherUserId, username: '@newowner', name: 'New owner' })
  t.same(await contentsOf(recycled.conversationId), ['new 1'], 'nothing of the old owner\'s is the new owner\'s')

  // From now on the phone is the new owner's; the old owner is still found by their platform user id.
  const byPhone = await inbound({ phone: customer.phone, text: 'new 2' })
  t.same({ conversationId: byPhone.conversationId, contactId: byPhone.contactId }, { conversationId: recycled.conversationId, contactId: recycled.contactId }, 'the phone alone names its new owner')
  const oldOwner = await inbound({ userId: customer.userId, text: 'old 4' })
  t.same({ conversationId: oldOwner.conversationId, contactId: oldOwner.contactId }, { conversationId: first.conversationId, contactId: first.contactId }, 'the old owner by their platform user id')
  t.same(await contentsOf(first.conversationId), ['old 1', 'old 2', 'old 3', 'old 4'])
  t.same(await contentsOf(recycled.conversationId), ['new 1', 'new 2'])
  const records = await db.select({ id: conversations.id }).from(conversations).where(and(eq(conversations.phoneNumberId, PHONE_NUMBER_ID),
    inArray(conversations.platformUserId, [customer.userId, customer.otherUserId])))
  t.equal(records.length, 2, 'two conversations, one per platform user id')
})

t.test('the join folds the joined record into the kept one (the phone\'s): labels, unread counts, attributes, notes, assistant turns', async (t) => {
  const customer = newCustomer()
  const { byPhone, byUser } = await twoRecords(t, customer, { byPhone: 2, byUser: 3 })
  const half = LABEL_BOUNDS.perRecord / 2 + 5
  const keptLabels = Array.from({ length: half }, (_, i) => `kept-${i}`)
  const goneLabels = Array.from({ length: half }, (_, i) => `gone-${i}`)
  await db.update(conversations).set({ labels: keptLabels }).where(eq(conversations.id, byPhone.conversationId))
  await db.update(conversations).set({ labels: goneLabels }).where(eq(conversations.id, byUser.conversationId))
  // The contacts share one label: it is kept once, where the kept record has it.
  const contactKept = Array.from({ length: half }, (_, i) => `c-${i}`)
  const contactGone = ['c-5', ...Array.from({ length: half - 1 }, (_, i) => `d-${i}`)]
  await db.update(chatContacts).set({ labels: contactKept, attributes: { city: 'Rome', plan: 'gold' } }).where(eq(chatContacts.id, byPhone.contactId))
  await db.update(chatContacts).set({ labels: contactGone, attributes: { plan: 'silver', language: 'it' } }).where(eq(chatContacts.id, byUser.contactId))
  const notes = notesRepository(db)
  const keptNote = await notes.insert({ conversationId: byPhone.conversationId, authorId: owner!.id, text: 'on the phone one', mentions: [] })
  const goneNote = await notes.insert({ conversationId: byUser.conversationId, authorId: owner!.id, text: 'on the username one', mentions: [] })
  const [turn] = await db.insert(assistantTurns).values({ conversationId: byUser.conversationId, messageId: byUser.messageId }).returning()
  t.match(await conversation(byPhone.conversationId), { unreadCount: 2 })
  t.match(await conversation(byUser.conversationId), { unreadCount: 3 })

  const joined = await inbound({ phone: customer.phone, userId: customer.userId, username: customer.username, text: 'both' })
  t.equal(joined.conversationId, byPhone.conversationId, 'the phone\'s conversation is kept')
  t.equal(joined.contactId, byPhone.contactId, 'the phone\'s contact is kept')
  const records = await recordsOf(customer)
  t.same(records.conversations.map((row) => row.id), [byPhone.conversationId], 'the joined conversation is gone')
  t.same(records.contacts.map((row) => row.id), [byPhone.contactId], 'the joined contact is gone')

  const [kept] = records.conversations
  t.match(kept, { phone: customer.phone, platformUserId: customer.userId, username: customer.username, unreadCount: 2 + 3 + 1, lastMessage: 'both' })
  t.same(kept!.labels, [...keptLabels, ...goneLabels].slice(0, LABEL_BOUNDS.perRecord), `the labels of both, the kept one's first, at most ${LABEL_BOUNDS.perRecord}`)
  t.equal(kept!.labels.length, LABEL_BOUNDS.perRecord)
  t.same([...await contentsOf(kept!.id)].sort(), ['both', 'by phone 0', 'by phone 1', 'by user 0', 'by user 1', 'by user 2'], 'every message of both, in the kept conversation')
  const movedNotes = await db.select({ id: conversationNotes.id, conversationId: conversationNotes.conversationId }).from(conversationNotes)
    .where(inArray(conversationNotes.id, [keptNote, goneNote]))
  t.same(movedNotes.map((note) => note.conversationId), [kept!.id, kept!.id], 'both notes are on the kept conversation')
  t.match((await db.select().from(assistantTurns).where(eq(assistantTurns.id, turn!.id)))[0], { conversationId: kept!.id }, 'the assistant turn moved')

  const [keptContact] = records.contacts
  t.match(keptContact, { phone: customer.phone, platformUserId: customer.userId, username: customer.username, name: 'Phone profile' })
  t.same(keptContact!.labels, [...contactKept, ...contactGone.filter((label) => !contactKept.includes(label))].slice(0, LABEL_BOUNDS.perRecord),
    'the contact\'s labels: each once, the kept record\'s first, bounded')
  t.equal(keptContact!.labels.filter((label) => label === 'c-5').length, 1, 'a label both carry is kept once')
  t.same(keptContact!.attributes, { city: 'Rome', plan: 'gold', language: 'it' }, 'attributes merged, the kept record\'s value on a shared key')
})

t.test('the join takes the consent set last, whichever record set it', async (t) => {
  const earlier = new Date(Date.now() - 3_600_000)
  const later = new Date(Date.now() - 60_000)

  const optedOutLater = newCustomer()
  const first = await twoRecords(t, optedOutLater)
  await db.update(chatContacts).set({ optedOut: false, consentSource: 'staff', consentChangedAt: earlier }).where(eq(chatContacts.id, first.byPhone.contactId))
  await db.update(chatContacts).set({ optedOut: true, consentSource: 'keyword', consentChangedAt: later }).where(eq(chatContacts.id, first.byUser.contactId))
  const joined = await inbound({ phone: optedOutLater.phone, userId: optedOutLater.userId })
  t.equal(joined.contactId, first.byPhone.contactId)
  t.match(await contact(joined.contactId), { optedOut: true, consentSource: 'keyword', consentChangedAt: later },
    'the joined record\'s later opt-out stands, with its source and time')

  const optedInLater = newCustomer()
  const second = await twoRecords(t, optedInLater)
  await db.update(chatContacts).set({ optedOut: false, consentSource: 'import', consentChangedAt: later }).where(eq(chatContacts.id, second.byPhone.contactId))
  await db.update(chatContacts).set({ optedOut: true, consentSource: 'keyword', consentChangedAt: earlier }).where(eq(chatContacts.id, second.byUser.contactId))
  const rejoined = await inbound({ phone: optedInLater.phone, userId: optedInLater.userId })
  t.match(await contact(rejoined.contactId), { optedOut: false, consentSource: 'import', consentChangedAt: later },
    'the kept record\'s later opt-in stands over the joined one\'s earlier opt-out')

  const neverSet = newCustomer()
  const third = await twoRecords(t, neverSet)
  await db.update(chatContacts).set({ optedOut: true, consentSource: 'keyword', consentChangedAt: earlier }).where(eq(chatContacts.id, third.byUser.contactId))
  const joinedAgain = await inbound({ phone: neverSet.phone, userId: neverSet.userId })
  t.match(await contact(joinedAgain.contactId), { optedOut: true, consentSource: 'keyword', consentChangedAt: earlier },
    'consent set only on the joined record is taken')
})

t.test('the join and asks: one stays open on the kept conversation, the joined one\'s ends superseded; a lone open ask moves', async (t) => {
  async function ask (conversationId: string): Promise<string> {
    const [run] = await db.insert(runs).values({ workflowId: workflow!.id, userId: owner!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData: {}, status: 'WAITING' }).returning()
    await db.insert(chatAsks).values({ runId: run!.id, nodeId: 'ask', conversationId, status: 'waiting', asked: 1, expiresAt: new Date(Date.now() + 3_600_000) })
    return run!.id
  }
  const asksOf = async (runIds: string[]) => Object.fromEntries((await db.select().from(chatAsks).where(inArray(chatAsks.runId, runIds)))
    .map((row) => [row.runId, { conversationId: row.conversationId, status: row.status }]))

  const both = newCustomer()
  const { byPhone, byUser } = await twoRecords(t, both)
  const keptRun = await ask(byPhone.conversationId)
  const goneRun = await ask(byUser.conversationId)
  const joined = await inbound({ phone: both.phone, userId: both.userId })
  t.equal(joined.conversationId, byPhone.conversationId)
  t.same(await asksOf([keptRun, goneRun]), {
    [keptRun]: { conversationId: byPhone.conversationId, status: 'waiting' },
    [goneRun]: { conversationId: byPhone.conversationId, status: 'superseded' }
  }, 'the kept conversation\'s ask still waits; the joined one\'s moved and ended superseded')
  const open = await db.select().from(chatAsks).where(and(eq(chatAsks.conversationId, byPhone.conversationId), inArray(chatAsks.status, ['waiting', 'answered'])))
  t.same(open.map((row) => row.runId), [keptRun], 'exactly one open ask on the kept conversation')

  const lone = newCustomer()
  const second = await twoRecords(t, lone)
  const loneRun = await ask(second.byUser.conversationId)
  await inbound({ phone: lone.phone, userId: lone.userId })
  t.same(await asksOf([loneRun]), { [loneRun]: { conversationId: second.byPhone.conversationId, status: 'waiting' } },
    'the joined conversation\'s ask, the only open one, moves and still waits')
})

t.test('a delivery whose message names neither a phone nor a platform user id stores nothing of it', async (t) => {
  const reached: InboundChatMessage[] = []
  const processDelivery = chatDeliveryProcessor({
    db,
    config,
    logger: createLogger('silent', 'chat-customers-test'),
    dispatchEvents: async () => {},
    onMessage: async (message) => { reached.push(message) }
  })
  const count = async () => ({
    conversations: (await db.select({ id: conversations.id }).from(conversations)).length,
    contacts: (await db.select({ id: chatContacts.id }).from(chatContacts)).length,
    messages: (await db.select({ id: messages.id }).from(messages)).length
  })
  const before = await count()
  const nobody = newWamid()
  const badIds = newWamid()
  const payload = messagesDelivery(PHONE_NUMBER_ID, [{ from: '15550000000', text: 'nameless', wamid: nobody }])
  const value = (payload as any).entry[0].changes[0].value
  // The first names nobody at all; the second a phone and a user id that are neither.
  value.messages = [
    { id: nobody, timestamp: String(Math.floor(Date.now() / 1000)), type: 'text', text: { body: 'nameless' } },
    { from: '+1 555 000', from_user_id: 'not-a-user-id', id: badIds, timestamp: String(Math.floor(Date.now() / 1000)), type: 'text', text: { body: 'bad ids' } }
  ]
  value.contacts = [{ profile: { name: 'Nobody', username: '@nobody' } }]
  t.same(await processDelivery(await deliveries.create(payload)), { messages: 0, duplicates: 0, statuses: 0, ignored: 2 },
    'nothing stored: both counted ignored, none a duplicate')
  t.same(await count(), before, 'no conversation, contact or message')
  t.equal((await db.select().from(messages).where(inArray(messages.wamid, [nobody, badIds]))).length, 0)
  t.same(reached, [], 'nothing reacts to it')

  const customer = newCustomer()
  const mixed = messagesDelivery(PHONE_NUMBER_ID, [{ from: customer.phone, withholdPhone: true, userId: customer.userId, text: 'somebody' }])
  ;(mixed as any).entry[0].changes[0].value.messages.unshift({ id: newWamid(), timestamp: String(Math.floor(Date.now() / 1000)), type: 'text', text: { body: 'nameless' } })
  t.same(await processDelivery(await deliveries.create(mixed)), { messages: 1, duplicates: 0, statuses: 0, ignored: 1 }, 'the message beside it is stored')
  t.same(reached.map((message) => [message.platformUserId, message.text]), [[customer.userId, 'somebody']])
  t.same(await count(), { conversations: before.conversations + 1, contacts: before.contacts + 1, messages: before.messages + 1 })
})

t.test('username, parent id and names: from the message and its contact entry, updated by later messages, staff\'s contact name kept', async (t) => {
  const processDelivery = chatDeliveryProcessor({ db, config, logger: createLogger('silent', 'chat-customers-test'), dispatchEvents: async () => {}, onMessage: async () => {} })
  interface Said { userId: string, phone?: string, username?: string, name?: string, messageParent?: string, contactParent?: string }
  async function say (who: Said): Promise<void> {
    const wamid = newWamid()
    const delivery = messagesDelivery(PHONE_NUMBER_ID, [{ from: who.phone ?? '', withholdPhone: who.phone === undefined, userId: who.userId, wamid, ...(who.username !== undefined && { username: who.username }), ...(who.name !== undefined && { name: who.name }) }])
    const value = (delivery as any).entry[0].changes[0].value
    if (who.messageParent !== undefined) value.messages[0].from_parent_user_id = who.messageParent
    if (who.contactParent !== undefined) value.contacts[0].parent_user_id = who.contactParent
    t.match(await processDelivery(await deliveries.create(delivery)), { messages: 1 })
  }
  const byUser = async (userId: string) => ({
    conversation: (await db.select().from(conversations).where(and(eq(conversations.phoneNumberId, PHONE_NUMBER_ID), eq(conversations.platformUserId, userId))))[0],
    contact: (await db.select().from(chatContacts).where(and(eq(chatContacts.phoneNumberId, PHONE_NUMBER_ID), eq(chatContacts.platformUserId, userId))))[0]
  })

  const noor = newCustomer()
  await say({ userId: noor.userId, username: '@noor', name: 'Noor', messageParent: 'US.ENT.7100000000parent1' })
  let records = await byUser(noor.userId)
  t.match(records.contact, { phone: '', username: '@noor', parentPlatformUserId: 'US.ENT.7100000000parent1', name: 'Noor' }, 'the parent from the message\'s from_parent_user_id')
  t.match(records.conversation, { phone: '', username: '@noor', name: 'Noor' })

  await say({ userId: noor.userId, username: '@noor.k', name: 'Noor K' })
  records = await byUser(noor.userId)
  t.match(records.contact, { username: '@noor.k', parentPlatformUserId: 'US.ENT.7100000000parent1' }, 'a new username replaces the old; a message without a parent keeps it')
  t.match(records.conversation, { username: '@noor.k', name: 'Noor K' }, 'the conversation shows the latest profile name')

  await db.update(chatContacts).set({ name: 'Noor (staff)' }).where(eq(chatContacts.id, records.contact!.id))
  await say({ userId: noor.userId, name: 'Noor Again' })
  records = await byUser(noor.userId)
  t.match(records.contact, { name: 'Noor (staff)', username: '@noor.k' }, 'staff\'s name stays; a message without a username keeps it')
  t.match(records.conversation, { name: 'Noor Again', username: '@noor.k' })

  const sam = newCustomer()
  await say({ userId: sam.userId, phone: sam.phone, username: '@sam', contactParent: 'US.ENT.7100000000parent2' })
  records = await byUser(sam.userId)
  t.match(records.contact, { phone: sam.phone, username: '@sam', parentPlatformUserId: 'US.ENT.7100000000parent2' }, 'the parent from the contact entry\'s parent_user_id')
  await say({ userId: sam.userId, messageParent: 'US.ENT.7100000000parent3', contactParent: 'US.ENT.7100000000parent4' })
  t.match((await byUser(sam.userId)).contact, { parentPlatformUserId: 'US.ENT.7100000000parent3' }, 'the message\'s parent first, and a new one replaces the old')
  await say({ userId: sam.userId, messageParent: 'not a user id' })
  t.match((await byUser(sam.userId)).contact, { parentPlatformUserId: 'US.ENT.7100000000parent3' }, 'a parent that is no platform user id is not stored')
  await say({ userId: sam.userId, messageParent: 'not a user id', contactParent: 'US.ENT.7100000000parent5' })
  t.match((await byUser(sam.userId)).contact, { parentPlatformUserId: 'US.ENT.7100000000parent5' }, 'a malformed parent on the message hides no valid one on the contact entry')
})
