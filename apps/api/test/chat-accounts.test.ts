import t from 'tap'
import { FAKE_ACCESS_TOKEN } from '@switchboard/testing/fake-chat-platform'
import { buildChatTestApp, DEFAULT_BUSINESS_ACCOUNT_ID, DEFAULT_PHONE_NUMBER_ID } from './chat-helper.ts'

const chat = await buildChatTestApp(t, { fake: { accessTokens: [FAKE_ACCESS_TOKEN, 'secret-token-abc'] } })
const { request, fake, app, adminToken } = chat

const sendTemplate = (token: string, headers: Record<string, string> = {}) => request({
  method: 'POST', url: '/api/chat/send/template', token, headers, payload: { to: '16505550100', templateName: 'hello_world' }
})
const lastSendPath = () => fake.sends().at(-1)?.path

t.test('accounts: create, list, update and delete; the token is write-only and encrypted at rest', async (t) => {
  const member = await chat.newMember()
  const created = await request({
    method: 'POST',
    url: '/api/chat/accounts',
    token: member.token,
    payload: { name: 'Support line', phoneNumberId: '200000000000001', businessAccountId: '300000000000001', displayPhoneNumber: '+1 555 0100', accessToken: 'secret-token-abc', id: 'mine', userId: 'someone' }
  })
  t.equal(created.statusCode, 201, created.body)
  const account = created.json()
  t.match(account, { name: 'Support line', phoneNumberId: '200000000000001', businessAccountId: '300000000000001', displayPhoneNumber: '+1 555 0100', isDefault: false, userId: member.id, createdAt: String })
  t.not(account.id, 'mine')
  t.notOk('accessToken' in account)
  t.notOk('accessTokenEncrypted' in account)

  const [stored] = await app.database.sql<Array<{ token: string }>>`select access_token_encrypted as token from chat_accounts where id = ${account.id}`
  t.notOk(stored.token.includes('secret-token-abc'), 'not stored in clear')
  t.match(stored.token, /^v2\.[A-Za-z0-9_-]{11}\./, 'AES-GCM with the key id')

  const list = await request({ method: 'GET', url: '/api/chat/accounts', token: member.token })
  t.same(list.json().map((a: { id: string }) => a.id), [account.id])
  t.notOk(JSON.stringify(list.json()).includes('secret-token-abc'))

  const duplicate = await request({ method: 'POST', url: '/api/chat/accounts', token: member.token, payload: { name: 'Again', phoneNumberId: '200000000000001', accessToken: FAKE_ACCESS_TOKEN } })
  t.equal(duplicate.statusCode, 409)
  t.equal(duplicate.json().message, 'Chat account already linked')

  const patched = await request({ method: 'PATCH', url: `/api/chat/accounts/${account.id}`, token: member.token, payload: { name: 'Sales line', isDefault: true } })
  t.equal(patched.statusCode, 200)
  t.match(patched.json(), { name: 'Sales line', isDefault: true, phoneNumberId: '200000000000001' })

  const other = await chat.newMember()
  for (const [method, payload] of [['PATCH', { name: 'stolen' }], ['DELETE', undefined]] as const) {
    const res = await request({ method, url: `/api/chat/accounts/${account.id}`, token: other.token, payload })
    t.equal(res.statusCode, 404, `${method} by another user`)
    t.equal(res.json().message, 'Chat account not found')
  }
  t.same((await request({ method: 'GET', url: '/api/chat/accounts', token: other.token })).json(), [])
  const adminList = await request({ method: 'GET', url: '/api/chat/accounts', token: adminToken })
  t.ok(adminList.json().some((a: { id: string }) => a.id === account.id), 'the admin sees every account')

  const deleted = await request({ method: 'DELETE', url: `/api/chat/accounts/${account.id}`, token: member.token })
  t.equal(deleted.statusCode, 204)
  t.equal((await request({ method: 'DELETE', url: `/api/chat/accounts/${account.id}`, token: member.token })).statusCode, 404)
})

t.test('the account list pages with limit and offset', async (t) => {
  const member = await chat.newMember()
  const ids = []
  for (const number of ['200000000000051', '200000000000052', '200000000000053']) ids.push(await chat.linkAccount(member.token, number))
  const page = await request({ method: 'GET', url: '/api/chat/accounts?limit=2&offset=1', token: member.token })
  t.equal(page.statusCode, 200)
  t.same(page.json().map((a: { id: string }) => a.id), ids.slice(1))
  t.same((await request({ method: 'GET', url: '/api/chat/accounts?limit=1', token: member.token })).json().map((a: { id: string }) => a.id), ids.slice(0, 1))
  t.equal((await request({ method: 'GET', url: '/api/chat/accounts?offset=-1', token: member.token })).statusCode, 400)
})

t.test('account validation names the field', async (t) => {
  const member = await chat.newMember()
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ phoneNumberId: '1', accessToken: 'x' }, 'name is required'],
    [{ name: 'A', accessToken: 'x' }, 'phoneNumberId is required'],
    [{ name: 'A', phoneNumberId: '1' }, 'accessToken is required'],
    [{ name: 'A', phoneNumberId: 'abc', accessToken: 'x' }, 'phoneNumberId must be the platform phone number id (digits)'],
    [{ name: 'x'.repeat(201), phoneNumberId: '1', accessToken: 'x' }, 'name must be 1 to 200 characters']
  ]
  for (const [payload, message] of cases) {
    const res = await request({ method: 'POST', url: '/api/chat/accounts', token: member.token, payload })
    t.equal(res.statusCode, 400, message)
    t.equal(res.json().message, message)
  }
})

t.test('zero linked accounts: the default account from the environment, with or without X-Account-Id', async (t) => {
  const member = await chat.newMember()
  t.equal((await sendTemplate(member.token)).statusCode, 200)
  t.equal(lastSendPath(), `/v21.0/${DEFAULT_PHONE_NUMBER_ID}/messages`)
  t.equal((await sendTemplate(member.token, { 'x-account-id': 'default' })).statusCode, 200)
  const unknown = await sendTemplate(member.token, { 'x-account-id': 'no-such-account' })
  t.equal(unknown.statusCode, 404)
  t.same(unknown.json(), { statusCode: 404, code: 'CHAT_ACCOUNT_NOT_FOUND', error: 'Chat account not found', message: 'Chat account not found' })
})

t.test('one linked account: used with or without X-Account-Id; the default account is no longer theirs', async (t) => {
  const member = await chat.newMember()
  const accountId = await chat.linkAccount(member.token, '200000000000011')
  t.equal((await sendTemplate(member.token)).statusCode, 200)
  t.equal(lastSendPath(), '/v21.0/200000000000011/messages')
  t.equal((await sendTemplate(member.token, { 'x-account-id': accountId })).statusCode, 200)
  t.equal(lastSendPath(), '/v21.0/200000000000011/messages')
  t.equal((await sendTemplate(member.token, { 'x-account-id': 'default' })).statusCode, 404)
})

t.test('two linked accounts: X-Account-Id is required and selects; someone else\'s account is 404', async (t) => {
  const member = await chat.newMember()
  const first = await chat.linkAccount(member.token, '200000000000021')
  const second = await chat.linkAccount(member.token, '200000000000022', { isDefault: true })
  const missing = await sendTemplate(member.token)
  t.equal(missing.statusCode, 400)
  t.same(missing.json(), { statusCode: 400, code: 'CHAT_ACCOUNT_REQUIRED', error: 'X-Account-Id header is required', message: 'X-Account-Id header is required' })
  for (const url of ['/api/chat/templates', '/api/chat/conversations']) {
    const res = await request({ method: 'GET', url, token: member.token })
    t.equal(res.statusCode, 400, url)
    t.equal(res.json().message, 'X-Account-Id header is required')
  }

  t.equal((await sendTemplate(member.token, { 'x-account-id': first })).statusCode, 200)
  t.equal(lastSendPath(), '/v21.0/200000000000021/messages')
  t.equal((await sendTemplate(member.token, { 'x-account-id': second })).statusCode, 200)
  t.equal(lastSendPath(), '/v21.0/200000000000022/messages')
  t.equal(fake.sends().at(-1)?.headers.authorization, `Bearer ${FAKE_ACCESS_TOKEN}`, 'the decrypted account token is sent')

  const other = await chat.newMember()
  const foreign = await sendTemplate(other.token, { 'x-account-id': first })
  t.equal(foreign.statusCode, 404)
  t.equal(foreign.json().message, 'Chat account not found')
  t.equal((await sendTemplate(adminToken, { 'x-account-id': first })).statusCode, 200, 'the admin may select any account')
})

t.test('templates: every page of the business account, approved only, passed through', async (t) => {
  const member = await chat.newMember()
  const before = fake.requests.length
  const res = await request({ method: 'GET', url: '/api/chat/templates', token: member.token })
  t.equal(res.statusCode, 200)
  const templates = res.json()
  t.same(templates.map((tpl: { name: string, language: string }) => `${tpl.name}/${tpl.language}`),
    ['hello_world/en_US', 'order_update/en_US', 'order_update/ar', 'appointment_reminder/en_US', 'welcome/es'])
  t.match(templates[1], { id: String, status: 'APPROVED', category: 'UTILITY', parameter_format: 'POSITIONAL', components: [{ type: 'BODY', text: 'Good news {{1}}! Order {{2}} has shipped.' }] })
  const pages = fake.requests.slice(before)
  t.equal(pages.length, 3, 'three pages of two')
  t.ok(pages.every((p) => p.path === `/v21.0/${DEFAULT_BUSINESS_ACCOUNT_ID}/message_templates` && p.query.status === 'APPROVED'))
  t.equal(pages[0].query.after, undefined)
  t.type(pages[1].query.after, 'string')

  const noBusiness = await chat.newMember()
  await chat.linkAccount(noBusiness.token, '200000000000031')
  const refused = await request({ method: 'GET', url: '/api/chat/templates', token: noBusiness.token })
  t.equal(refused.statusCode, 400)
  t.equal(refused.json().message, 'The chat account has no businessAccountId: templates cannot be listed')
})

t.test('a deleted user\'s still-signed token can no longer link accounts, read the inbox or send', async (t) => {
  const gone = await chat.newMember()
  const goneAdmin = await chat.newMember()
  await app.database.sql`update users set role = 'admin' where id = ${goneAdmin.id}`
  const goneAdminToken = app.jwt.sign({ sub: goneAdmin.id, email: goneAdmin.email, role: 'admin', ver: 0 })
  const linked = await chat.linkAccount((await chat.newMember()).token, '200000000000041')
  for (const user of [gone, goneAdmin]) {
    t.equal((await request({ method: 'DELETE', url: `/api/users/${user.id}`, token: adminToken })).statusCode, 204)
  }
  const sendsBefore = fake.sends().length

  const link = await request({ method: 'POST', url: '/api/chat/accounts', token: gone.token, payload: { name: 'x', phoneNumberId: '200000000000042', accessToken: FAKE_ACCESS_TOKEN } })
  t.equal(link.statusCode, 401, link.body)
  t.equal(link.json().message, 'Unauthorized')
  for (const token of [gone.token, goneAdminToken]) {
    const inbox = await request({ method: 'GET', url: '/api/chat/conversations', token })
    t.equal(inbox.statusCode, 401, 'the shared default inbox')
    t.equal((await sendTemplate(token)).statusCode, 401, 'a send from the default account')
  }
  t.equal((await sendTemplate(goneAdminToken, { 'x-account-id': linked })).statusCode, 401, 'an admin who is gone is refused before any account is selected')
  t.equal(fake.sends().length, sendsBefore, 'nothing reached the platform')
})

t.test('linking proves the token may use the number: nobody reads another business\'s inbox by naming its number', async (t) => {
  const owner = await chat.newMember()
  const ownerAccount = await chat.linkAccount(owner.token, '200000000000061')
  await app.database.sql`insert into conversations (id, phone_number_id, phone, last_message) values ('conversation-61', '200000000000061', '15550006100', 'private')`
  fake.options.numbersByToken = { 'intruder-token': ['200000000000062'] }
  fake.options.accessTokens = [FAKE_ACCESS_TOKEN, 'secret-token-abc', 'intruder-token']
  t.teardown(() => {
    fake.options.numbersByToken = undefined
    fake.options.accessTokens = [FAKE_ACCESS_TOKEN, 'secret-token-abc']
  })

  const intruder = await chat.newMember()
  const link = (token: string, phoneNumberId: string) => request({ method: 'POST', url: '/api/chat/accounts', token: intruder.token, payload: { name: 'Mine', phoneNumberId, accessToken: token } })
  for (const [token, number, code] of [['intruder-token', '200000000000061', 100], ['not-a-token', '200000000000061', 190]] as const) {
    const refused = await link(token, number)
    t.equal(refused.statusCode, 400, `${token} for ${number}`)
    t.match(refused.json(), { code: 'CHAT_ACCOUNT_REJECTED', message: 'The chat platform refused accessToken for this phoneNumberId', details: { code } })
  }
  t.same((await request({ method: 'GET', url: '/api/chat/accounts', token: intruder.token })).json(), [], 'nothing was linked')

  const own = await link('intruder-token', '200000000000062')
  t.equal(own.statusCode, 201, own.body)
  t.equal(fake.requests.at(-1)?.path, '/v21.0/200000000000062', 'the number was looked up with the token')
  const moved = await request({ method: 'PATCH', url: `/api/chat/accounts/${own.json().id}`, token: intruder.token, payload: { phoneNumberId: '200000000000061' } })
  t.equal(moved.statusCode, 400, 'nor by moving a linked account to it')
  const badToken = await request({ method: 'PATCH', url: `/api/chat/accounts/${ownerAccount}`, token: owner.token, payload: { accessToken: 'intruder-token' } })
  t.equal(badToken.statusCode, 400, 'a new token must fit the stored number')
  t.equal((await request({ method: 'PATCH', url: `/api/chat/accounts/${ownerAccount}`, token: owner.token, payload: { accessToken: 'secret-token-abc' } })).statusCode, 200)

  const inbox = await request({ method: 'GET', url: '/api/chat/conversations', token: intruder.token })
  t.same(inbox.json(), [], 'the owner\'s conversation stays theirs')
  const ownerInbox = await request({ method: 'GET', url: '/api/chat/conversations', token: owner.token })
  t.same(ownerInbox.json().map((c: { phone: string }) => c.phone), ['15550006100'])
})

t.test('sandbox numbers: made with a name only, listed as sandbox, their sends stored delivered with no platform call', async (t) => {
  const member = await chat.newMember()
  const created = await request({ method: 'POST', url: '/api/chat/accounts', token: member.token, payload: { name: 'Try-out', sandbox: true } })
  t.equal(created.statusCode, 201, created.body)
  const sandbox = created.json()
  t.match(sandbox, { name: 'Try-out', sandbox: true, isDefault: false, businessAccountId: null, phoneNumberId: /^sandbox-/, displayPhoneNumber: /^\+1 555 01\d\d$/ })
  const second = await request({ method: 'POST', url: '/api/chat/accounts', token: member.token, payload: { name: 'Another', sandbox: true } })
  t.not(second.json().phoneNumberId, sandbox.phoneNumberId, 'each has a number of its own')
  const real = await chat.linkAccount(member.token, '200000000000071')
  const list = (await request({ method: 'GET', url: '/api/chat/accounts', token: member.token })).json()
  t.same(list.map((a: { id: string, sandbox: boolean }) => [a.id, a.sandbox]), [[sandbox.id, true], [second.json().id, true], [real, false]])

  const before = fake.requests.length
  const sent = await sendTemplate(member.token, { 'x-account-id': sandbox.id })
  t.equal(sent.statusCode, 200, sent.body)
  t.match(sent.json(), { messaging_product: 'whatsapp', contacts: [{ input: '16505550100', wa_id: '16505550100' }], messages: [{ id: /^wamid\.sandbox-/ }] })
  t.equal(fake.requests.length, before, 'the platform was not called')
  const [stored] = await app.database.sql<Array<{ status: string, phoneNumberId: string }>>`
    select m.status, c.phone_number_id as "phoneNumberId" from messages m join conversations c on c.id = m.conversation_id where m.wamid = ${sent.json().messages[0].id}`
  t.same(stored, { status: 'delivered', phoneNumberId: sandbox.phoneNumberId }, 'stored on the sandbox number\'s conversation, delivered')

  const text = await request({ method: 'POST', url: '/api/chat/send/text', token: member.token, headers: { 'x-account-id': sandbox.id }, payload: { to: '16505550100', text: 'hi' } })
  t.equal(text.statusCode, 400, 'the 24-hour rule holds as for any number')
  t.equal(text.json().message, 'Outside the 24-hour window: send a template')
})

t.test('sandbox numbers never count when an account is chosen implicitly', async (t) => {
  const defaultUser = await chat.newMember()
  await request({ method: 'POST', url: '/api/chat/accounts', token: defaultUser.token, payload: { name: 'Sandbox', sandbox: true } })
  t.equal((await sendTemplate(defaultUser.token)).statusCode, 200, 'a sandbox only: the default account stays theirs')
  t.equal(lastSendPath(), `/v21.0/${DEFAULT_PHONE_NUMBER_ID}/messages`)
  t.equal((await request({ method: 'GET', url: '/api/chat/conversations', token: defaultUser.token, headers: { 'x-account-id': 'default' } })).statusCode, 200, 'and the shared inbox')

  const linker = await chat.newMember()
  await chat.linkAccount(linker.token, '200000000000081')
  const sandbox = (await request({ method: 'POST', url: '/api/chat/accounts', token: linker.token, payload: { name: 'Sandbox', sandbox: true } })).json()
  t.equal((await sendTemplate(linker.token)).statusCode, 200, 'one real number and a sandbox: the real one, no header needed')
  t.equal(lastSendPath(), '/v21.0/200000000000081/messages')

  const marked = await request({ method: 'PATCH', url: `/api/chat/accounts/${sandbox.id}`, token: linker.token, payload: { isDefault: true } })
  t.equal(marked.statusCode, 400)
  t.equal(marked.json().message, 'A sandbox number cannot be the default account')
  const moved = await request({ method: 'PATCH', url: `/api/chat/accounts/${sandbox.id}`, token: linker.token, payload: { phoneNumberId: '200000000000082' } })
  t.equal(moved.statusCode, 400)
  t.equal(moved.json().message, 'A sandbox number has no phoneNumberId: it has no chat platform behind it')
  t.equal((await request({ method: 'PATCH', url: `/api/chat/accounts/${sandbox.id}`, token: linker.token, payload: { name: 'Renamed' } })).json().name, 'Renamed')
})

t.test('sandbox numbers: broadcasts refuse them; the inbound route is their users\' only, for sandbox numbers, one message at a time', async (t) => {
  const member = await chat.newMember()
  const sandbox = (await request({ method: 'POST', url: '/api/chat/accounts', token: member.token, payload: { name: 'Sandbox', sandbox: true } })).json()
  const broadcast = await request({ method: 'POST', url: '/api/chat/broadcasts', token: member.token, headers: { 'x-account-id': sandbox.id }, payload: { templateName: 'hello_world', recipients: [{ to: '16505550100' }] } })
  t.equal(broadcast.statusCode, 400)
  t.match(broadcast.json(), { code: 'CHAT_ACCOUNT_SANDBOX', message: 'Broadcasts cannot be sent from a sandbox number: its customers are played' })

  const inbound = (id: string, token: string, payload: Record<string, unknown>) => request({ method: 'POST', url: `/api/chat/accounts/${id}/sandbox/inbound`, token, payload })
  const other = await chat.newMember()
  const foreign = await inbound(sandbox.id, other.token, { from: '15550001111', text: 'hi' })
  t.equal(foreign.statusCode, 404)
  t.equal(foreign.json().message, 'Chat account not found')
  const real = await chat.linkAccount(other.token, '200000000000091')
  const notSandbox = await inbound(real, other.token, { from: '15550001111', text: 'hi' })
  t.equal(notSandbox.statusCode, 400)
  t.match(notSandbox.json(), { code: 'CHAT_ACCOUNT_NOT_SANDBOX', message: 'Chat account is not a sandbox number: its customers write through the chat platform' })
  t.equal((await inbound('default', member.token, { from: '15550001111', text: 'hi' })).statusCode, 400, 'nor is the default account')

  const cases: Array<[Record<string, unknown>, string]> = [
    [{ from: '15550001111' }, 'Give exactly one of text, interactive and media'],
    [{ from: '15550001111', text: 'hi', media: { kind: 'image' } }, 'Give exactly one of text, interactive and media'],
    [{ text: 'hi' }, 'from is required'],
    [{ from: '+1 555', text: 'hi' }, 'from must be a phone number in international format, digits only, or a platform user id'],
    [{ from: '15550001111', text: 'x'.repeat(4097) }, 'text must be 1 to 4096 characters'],
    [{ from: '15550001111', interactive: { type: 'button_reply', id: 'yes', title: 'x'.repeat(25) } }, 'interactive.title must be 1 to 24 characters'],
    [{ from: '15550001111', media: { kind: 'image', caption: 'x'.repeat(1025) } }, 'media.caption must be 1 to 1024 characters']
  ]
  for (const [payload, message] of cases) {
    const res = await inbound(sandbox.id, member.token, payload)
    t.equal(res.statusCode, 400, message)
    t.equal(res.json().message, message)
  }
  const [pending] = await app.database.sql<Array<{ n: number }>>`select count(*)::int as n from chat_deliveries where id like 'sandbox-%'`
  t.equal(pending.n, 0, 'nothing refused was stored')

  const sandboxFields = await request({ method: 'POST', url: '/api/chat/accounts', token: member.token, payload: { name: 'x', sandbox: true, accessToken: 'abc' } })
  t.equal(sandboxFields.statusCode, 400)
  t.equal(sandboxFields.json().message, 'A sandbox number has no accessToken: it has no chat platform behind it')
})
