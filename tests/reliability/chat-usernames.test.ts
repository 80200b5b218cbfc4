import postgres from 'postgres'
import t from 'tap'
import { deliver, fakeChatEnv, messagesDelivery, startFakeChatPlatform, type InboundMessageSpec } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/**
 * Customers known by username under load (README, Customers known by username): signed webhook
 * deliveries of 50 messages each, 20 in flight, to an api and two workers. Each customer's messages
 * alternate the three ways the platform names them (phone and platform user id, the platform user id
 * with the phone withheld, the phone alone), so that deliveries taken at once by both workers make
 * records by one identifier while another message makes (or joins) them by the other. Whatever the
 * interleaving, one customer ends as one conversation and one contact holding each of their messages once.
 */

t.setTimeout(300_000)

const PHONE_NUMBER_ID = '106540352242966'
const APP_SECRET = 'reliability-usernames-secret'
const PER_DELIVERY = 50
const IN_FLIGHT = 20

const fake = await startFakeChatPlatform()
t.teardown(async () => { await fake.close() })
const stack = await startStack(t, { workers: 2, env: fakeChatEnv(fake, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET }) })
const sql = postgres(stack.env.DATABASE_URL!, { max: 2, onnotice: () => {} })
t.teardown(async () => { await sql.end() })

interface Customer { phone: string, userId: string, username: string }
const customerOf = (n: number): Customer => {
  const id = String(n).padStart(5, '0')
  return { phone: `155580${id}`, userId: `US.8800000000${id}`, username: `@user${id}` }
}

/**
 * A customer's `n`th message: the three kinds in turn, the platform user id alone (the phone withheld),
 * the phone alone (a delivery from before the platform sent user ids), then both. Messages by one
 * identifier each may make a record each, which a message naming both joins.
 */
function messageOf (customer: Customer, n: number, wamid: string): InboundMessageSpec {
  switch (n % 3) {
    case 0: return { from: customer.phone, withholdPhone: true, userId: customer.userId, username: customer.username, text: wamid, wamid }
    case 1: return { from: customer.phone, text: wamid, wamid }
    default: return { from: customer.phone, userId: customer.userId, username: customer.username, text: wamid, wamid }
  }
}

/** Posts the deliveries, `IN_FLIGHT` at a time, each signed as the platform signs it; every one must be accepted. */
async function post (deliveries: InboundMessageSpec[][]): Promise<void> {
  let next = 0
  const refused: number[] = []
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < deliveries.length) {
      const specs = deliveries[next++]!
      const res = await deliver(`${stack.baseUrl}/webhook/chat`, messagesDelivery(PHONE_NUMBER_ID, specs), APP_SECRET)
      if (res.status !== 200) refused.push(res.status)
    }
  }))
  if (refused.length > 0) throw new Error(`deliveries refused: ${refused.join(', ')}`)
}

const chunks = <T>(items: T[], size: number): T[][] => Array.from({ length: Math.ceil(items.length / size) }, (_, c) => items.slice(c * size, (c + 1) * size))

t.test('10,000 messages of one customer, alternating phone and platform user id, in concurrent deliveries: one conversation, one contact, each message once', async (t) => {
  const MESSAGES = 10_000
  const customer = customerOf(0)
  const specs = Array.from({ length: MESSAGES }, (_, i) => messageOf(customer, i, `wamid.usernames.one.${i}`))
  const ofCustomer = sql`phone_number_id = ${PHONE_NUMBER_ID} and (phone = ${customer.phone} or platform_user_id = ${customer.userId})`
  // The customer is known twice when the burst starts: by their platform user id, then by their phone.
  // Its first message naming both joins the two while the others, by either, land on them.
  for (const first of specs.slice(0, 2)) {
    await post([[first]])
    await waitFor(async () => (await sql`select 1 from messages where wamid = ${first.wamid!}`).length === 1 ? true : undefined, { what: `${first.wamid} stored` })
  }
  const before = await sql<Array<{ id: string, phone: string }>>`select id, phone from conversations where ${ofCustomer} order by phone`
  t.same(before.map((row) => row.phone), ['', customer.phone], 'two conversations before the burst: by platform user id, by phone')
  const startedAt = Date.now()
  await post(chunks(specs.slice(2), PER_DELIVERY))
  await waitFor(async () => {
    const [{ stored }] = await sql<Array<{ stored: number }>>`select count(*)::int as stored from messages where wamid like 'wamid.usernames.one.%'`
    return stored === MESSAGES ? true : undefined
  }, { what: `${MESSAGES} messages stored`, timeoutMs: 150_000, intervalMs: 500 })
  t.comment(`${MESSAGES} messages stored in ${Date.now() - startedAt} ms`)

  const conversations = await sql<Array<{ id: string, phone: string, platformUserId: string | null, username: string | null, unreadCount: number }>>`
    select id, phone, platform_user_id as "platformUserId", username, unread_count as "unreadCount" from conversations where ${ofCustomer}`
  t.equal(conversations.length, 1, 'one conversation')
  t.equal(conversations[0]!.id, before[1]!.id, 'the phone\'s, joined by the first message naming both')
  t.match(conversations[0], { phone: customer.phone, platformUserId: customer.userId, username: customer.username, unreadCount: MESSAGES },
    'it carries both identifiers, and counts every message unread')
  const contacts = await sql<Array<{ phone: string, platformUserId: string | null, username: string | null }>>`
    select phone, platform_user_id as "platformUserId", username from chat_contacts where ${ofCustomer}`
  t.same(contacts, [{ phone: customer.phone, platformUserId: customer.userId, username: customer.username }], 'one contact, carrying both identifiers')
  const [{ total, distinct, elsewhere }] = await sql<Array<{ total: number, distinct: number, elsewhere: number }>>`
    select count(*)::int as total, count(distinct wamid)::int as distinct, count(*) filter (where conversation_id <> ${conversations[0]!.id})::int as elsewhere
    from messages where wamid like 'wamid.usernames.one.%'`
  t.same({ total, distinct, elsewhere }, { total: MESSAGES, distinct: MESSAGES, elsewhere: 0 }, 'each message once, all in the one conversation')
  const [{ records }] = await sql<Array<{ records: number }>>`select count(*)::int as records from conversations where phone_number_id = ${PHONE_NUMBER_ID}`
  t.equal(records, 1, 'no other conversation was left behind (a record joined and not deleted)')
})

t.test('200 customers, 10 alternating messages each, all at once: 200 conversations and 200 contacts, none split, none merged', async (t) => {
  const CUSTOMERS = 200
  const EACH = 10
  const customers = Array.from({ length: CUSTOMERS }, (_, c) => customerOf(c + 1))
  // Round by round: a delivery holds one message of each of 50 customers, so each customer's ten are in ten deliveries at once.
  const specs = Array.from({ length: EACH }, (_, i) => customers.map((customer, c) => messageOf(customer, i + c, `wamid.usernames.many.${c}.${i}`))).flat()
  const startedAt = Date.now()
  await post(chunks(specs, PER_DELIVERY))
  await waitFor(async () => {
    const [{ stored }] = await sql<Array<{ stored: number }>>`select count(*)::int as stored from messages where wamid like 'wamid.usernames.many.%'`
    return stored === CUSTOMERS * EACH ? true : undefined
  }, { what: `${CUSTOMERS * EACH} messages stored`, timeoutMs: 90_000, intervalMs: 500 })
  t.comment(`${CUSTOMERS * EACH} messages stored in ${Date.now() - startedAt} ms`)

  const phones = customers.map((customer) => customer.phone)
  const userIds = customers.map((customer) => customer.userId)
  const conversations = await sql<Array<{ id: string, phone: string, platformUserId: string | null, messages: number, wamids: string[] }>>`
    select c.id, c.phone, c.platform_user_id as "platformUserId", count(m.id)::int as messages, coalesce(array_agg(m.wamid) filter (where m.id is not null), '{}') as wamids
    from conversations c left join messages m on m.conversation_id = c.id
    where c.phone_number_id = ${PHONE_NUMBER_ID} and (c.phone in ${sql(phones)} or c.platform_user_id in ${sql(userIds)})
    group by c.id`
  const contacts = await sql<Array<{ phone: string, platformUserId: string | null }>>`
    select phone, platform_user_id as "platformUserId" from chat_contacts
    where phone_number_id = ${PHONE_NUMBER_ID} and (phone in ${sql(phones)} or platform_user_id in ${sql(userIds)})`
  t.equal(conversations.length, CUSTOMERS, 'one conversation per customer')
  t.equal(contacts.length, CUSTOMERS, 'one contact per customer')
  const expected = (c: number): string[] => Array.from({ length: EACH }, (_, i) => `wamid.usernames.many.${c}.${i}`).sort()
  const wrong = customers.flatMap((customer, c) => {
    const mine = conversations.filter((row) => row.phone === customer.phone || row.platformUserId === customer.userId)
    const contact = contacts.filter((row) => row.phone === customer.phone || row.platformUserId === customer.userId)
    const whole = mine.length === 1 && mine[0]!.phone === customer.phone && mine[0]!.platformUserId === customer.userId &&
      JSON.stringify([...mine[0]!.wamids].sort()) === JSON.stringify(expected(c)) &&
      contact.length === 1 && contact[0]!.phone === customer.phone && contact[0]!.platformUserId === customer.userId
    return whole ? [] : [{ customer: customer.phone, conversations: mine.map(({ wamids, ...row }) => ({ ...row, wamids: wamids.length })), contacts: contact }]
  })
  t.same(wrong, [], 'each customer: one conversation and one contact with both identifiers, holding their ten messages and no other\'s')
})
