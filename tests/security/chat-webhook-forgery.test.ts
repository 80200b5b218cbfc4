import t from 'tap'
import { buildChatTestApp, DEFAULT_PHONE_NUMBER_ID } from '../../apps/api/test/chat-helper.ts'

const chat = await buildChatTestApp(t, { worker: true })
const { request } = chat

// Number X is the installation's default account; number Y is an account a member linked.
const NUMBER_X = DEFAULT_PHONE_NUMBER_ID
const NUMBER_Y = '109876543210'
const CUSTOMER = '15552220001'

const member = await chat.newMember()
await chat.linkAccount(member.token, NUMBER_Y)

const statusOf = async (wamid: string): Promise<string | null | undefined> => {
  const res = await request({ method: 'GET', url: '/api/chat/conversations', token: member.token })
  const conversation = res.json().find((c: { phone: string }) => c.phone === CUSTOMER)
  return conversation?.messages.find((m: { wamid: string }) => m.wamid === wamid)?.status
}

t.test('a status delivered for number X does not change a message sent from number Y', async (t) => {
  await chat.receive([{ from: CUSTOMER, text: 'hello Y' }], NUMBER_Y)
  const sent = await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, payload: { to: CUSTOMER, text: 'hi from Y' } })
  t.equal(sent.statusCode, 200)
  const wamid: string = sent.json().messages[0].id
  const before = await statusOf(wamid)
  t.not(before, undefined, 'the message from Y is stored')

  // Signed correctly for X (whoever controls X's deliveries), naming Y's message.
  await chat.statuses([{ wamid, status: 'failed', recipientId: CUSTOMER, errors: [{ code: 131047, title: 'forged' }] }], NUMBER_X)
  await chat.statuses([{ wamid, status: 'read', recipientId: CUSTOMER }], NUMBER_X)
  t.equal(await statusOf(wamid), before, 'unchanged by deliveries for another number')
  const [row] = await chat.app.database.sql<Array<{ error_details: unknown }>>`select error_details from messages where wamid = ${wamid}`
  t.equal(row.error_details, null, 'no error recorded')

  await chat.statuses([{ wamid, status: 'delivered', recipientId: CUSTOMER }], NUMBER_Y)
  t.equal(await statusOf(wamid), 'delivered', 'a status for Y\'s own number applies')
})
