import t from 'tap'
import { createLogger } from '@switchboard/core/logger'
import { createTestClient, httpTransport } from '@switchboard/testing/client'
import { TEST_ADMIN } from '@switchboard/testing/config'
import type { TemplateStatusSpec } from '@switchboard/testing/fake-chat-platform'
import { waitFor } from '@switchboard/testing/wait'
import { APP_SECRET, buildChatTestApp, DEFAULT_BUSINESS_ACCOUNT_ID, DEFAULT_PHONE_NUMBER_ID } from './chat-helper.ts'

/**
 * Templates made here (README, Chat: templates), through the api's HTTP listener: the submission the
 * fake platform receives, its status and quality webhooks (posted and signed by the fake, worked by
 * the worker) onto the stored rows and `chat.template.status`, deletes, who may make them, and a send
 * of a template that is not approved.
 */
const workerLines: string[] = []
const chat = await buildChatTestApp(t, {
  worker: true,
  workerLogger: createLogger('info', 'worker', { write: (line: string) => { workerLines.push(line) } })
})
const { app, fake, adminToken } = chat
const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
fake.options.webhook = { url: `${baseUrl}/webhook/chat`, appSecret: APP_SECRET, phoneNumberId: DEFAULT_PHONE_NUMBER_ID }
const { call, createWorkflow, runsOf, newUser } = createTestClient(httpTransport(baseUrl))

const shippingComponents = [
  { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['A-42'] } },
  { type: 'BODY', text: 'Hi {{1}}, order {{2}} has shipped.', example: { body_text: [['Ana', 'A-42']] } },
  { type: 'FOOTER', text: 'Reply STOP to opt out' },
  { type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Track', url: 'https://shop.example/track/{{1}}', example: ['https://shop.example/track/A-42'] }] }
]

const newTemplate = (name: string, fields: Record<string, unknown> = {}) => ({ name, language: 'en_US', category: 'UTILITY', components: shippingComponents, ...fields })

const templateRequests = (method: string) => fake.requests.filter((r) => r.method === method && r.path.endsWith('/message_templates'))

async function create (token: string, body: unknown, headers?: Record<string, string>) {
  return call('POST', '/api/chat/templates', { token, body, headers })
}

/** The stored templates of the caller's account, by `status` (`all` or one). */
async function stored (token: string, status = 'all', headers?: Record<string, string>): Promise<any[]> {
  const res = await call('GET', `/api/chat/templates?status=${status}`, { token, headers })
  if (res.status !== 200) throw new Error(`stored templates: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

const storedNamed = async (name: string): Promise<any> => (await stored(adminToken)).find((tpl) => tpl.name === name)

const liveNames = async (token: string): Promise<string[]> =>
  (await call('GET', '/api/chat/templates', { token })).body.map((tpl: { name: string, language: string }) => `${tpl.name}/${tpl.language}`)

/** The platform reviewed a template: its signed webhook is posted by the fake and worked by the worker. */
async function review (test: Pick<typeof t, 'equal'>, spec: TemplateStatusSpec): Promise<void> {
  test.equal(await fake.reviewTemplate(spec), 200, `the webhook took ${spec.event} of ${spec.name}`)
  await chat.deliveriesProcessed()
}

const templateEvents = async (name: string) => app.database.sql<Array<{ userId: string, payload: Record<string, unknown> }>>`
  select user_id as "userId", payload from events where name = 'chat.template.status' and payload->>'name' = ${name} order by created_at`

t.test('a template within the rules is submitted as written, stored PENDING, and listed by status only', async (t) => {
  const before = templateRequests('POST').length
  const res = await create(adminToken, newTemplate('shipping_update', { category: 'MARKETING' }))
  t.equal(res.status, 201, JSON.stringify(res.body))
  const submitted = templateRequests('POST').slice(before)
  t.equal(submitted.length, 1)
  t.equal(submitted[0]?.path, `/v21.0/${DEFAULT_BUSINESS_ACCOUNT_ID}/message_templates`)
  t.equal(submitted[0]?.headers.authorization, 'Bearer fake-platform-token')
  t.same(submitted[0]?.body, { name: 'shipping_update', language: 'en_US', category: 'MARKETING', components: shippingComponents })
  t.match(res.body, { id: /^\d+$/, name: 'shipping_update', language: 'en_US', category: 'MARKETING', status: 'PENDING', reason: null, quality: null })
  t.same(res.body.components, shippingComponents)
  t.ok(Date.parse(res.body.createdAt) > Date.now() - 60_000, 'createdAt is now')

  t.notOk((await liveNames(adminToken)).includes('shipping_update/en_US'), 'the live list stays the approved templates')
  t.same((await stored(adminToken)).map((tpl) => [tpl.name, tpl.status]), [['shipping_update', 'PENDING']])
  t.same((await stored(adminToken, 'PENDING')).map((tpl) => tpl.id), [res.body.id])
  t.same(await stored(adminToken, 'APPROVED'), [])
  const unknown = await call('GET', '/api/chat/templates?status=LIVE', { token: adminToken })
  t.equal(unknown.status, 400)
  t.equal(unknown.body.message, 'status must be one of all, PENDING, APPROVED, REJECTED, PAUSED, DISABLED')
})

t.test('the platform\'s review moves the stored status and reason and emits chat.template.status once per change', async (t) => {
  t.equal((await create(adminToken, newTemplate('review_flow'))).status, 201)
  const workflowId = await createWorkflow(adminToken, {
    name: 'template reviews',
    triggerType: 'EVENT',
    triggerConfig: { eventName: 'chat.template.status' },
    nodes: [{ id: 'seen', type: 'set', config: { values: { status: '{{triggerData.status}}' } } }]
  })
  const runFor = async (status: string) => waitFor(async () =>
    (await runsOf(adminToken, workflowId)).find((run) => run.triggerData.name === 'review_flow' && run.triggerData.status === status), { what: `the ${status} event's run` })

  await review(t, { name: 'review_flow', language: 'en_US', event: 'APPROVED' })
  t.match(await storedNamed('review_flow'), { language: 'en_US', status: 'APPROVED', reason: null })
  t.ok((await liveNames(adminToken)).includes('review_flow/en_US'), 'approved on the platform, so in the live list')
  t.same((await runFor('APPROVED')).triggerData, { businessAccountId: DEFAULT_BUSINESS_ACCOUNT_ID, name: 'review_flow', language: 'en_US', status: 'APPROVED', reason: null })
  const approvedEvents = async () => (await templateEvents('review_flow')).filter((e) => e.payload.status === 'APPROVED')
  const [admin] = await app.database.sql<Array<{ id: string }>>`select id from users where email = ${TEST_ADMIN.email}`
  t.ok((await approvedEvents()).some((e) => e.userId === admin?.id), 'to the admin, who uses the default account')
  const once = (await approvedEvents()).length
  await review(t, { name: 'review_flow', language: 'en_US', event: 'APPROVED' })
  t.equal((await approvedEvents()).length, once, 'the same APPROVED again emits nothing more')

  await review(t, { name: 'review_flow', language: 'en_US', event: 'PAUSED', otherInfo: { title: 'FIRST_PAUSE', description: 'Paused for 3 hours: low read rates' } })
  t.match(await storedNamed('review_flow'), { status: 'PAUSED', reason: 'Paused for 3 hours: low read rates' }, 'a pause\'s reason is its explanation')
  await review(t, { name: 'review_flow', language: 'en_US', event: 'REJECTED', reason: 'INVALID_FORMAT' })
  t.match(await stored(adminToken, 'REJECTED'), [{ name: 'review_flow', status: 'REJECTED', reason: 'INVALID_FORMAT' }])
  t.same((await runFor('REJECTED')).triggerData, { businessAccountId: DEFAULT_BUSINESS_ACCOUNT_ID, name: 'review_flow', language: 'en_US', status: 'REJECTED', reason: 'INVALID_FORMAT' })

  const eventsBefore = (await templateEvents('review_flow')).length
  await review(t, { name: 'review_flow', language: 'en_US', event: 'FLAGGED' })
  t.equal((await storedNamed('review_flow')).status, 'REJECTED', 'an event that is no status of ours changes nothing')
  t.equal((await templateEvents('review_flow')).length, eventsBefore, 'and emits nothing')

  t.equal(await fake.rateTemplate({ name: 'review_flow', language: 'en_US', previous: 'GREEN', quality: 'YELLOW' }), 200)
  await chat.deliveriesProcessed()
  t.match(await storedNamed('review_flow'), { status: 'REJECTED', quality: 'YELLOW' })
  t.equal((await templateEvents('review_flow')).length, eventsBefore, 'a quality score is stored, not an event')
})

t.test('a status webhook for a template not made here is ignored and logged', async (t) => {
  const rowsBefore = (await stored(adminToken)).length
  const logged = workerLines.length
  await review(t, { name: 'made_in_the_platform_ui', language: 'es', event: 'REJECTED', reason: 'SCAM' })
  t.equal((await stored(adminToken)).length, rowsBefore, 'no row made')
  t.same(await templateEvents('made_in_the_platform_ui'), [], 'no event')
  const line = workerLines.slice(logged).map((text) => JSON.parse(text)).find((entry) => entry.msg === 'chat template update for a template not made here ignored')
  t.match(line, { level: 30, field: 'message_template_status_update', event: 'REJECTED', businessAccountId: DEFAULT_BUSINESS_ACCOUNT_ID, templateName: 'made_in_the_platform_ui', language: 'es' })
})

t.test('sending a template that is not approved answers the spec\'s 500, with the stored status', async (t) => {
  t.equal((await create(adminToken, newTemplate('not_yet_approved'))).status, 201)
  const send = async (templateName: string) => call('POST', '/api/chat/send/template', {
    token: adminToken,
    body: { to: '16505550123', templateName, components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }, { type: 'text', text: 'A-42' }] }] }
  })
  const pending = await send('not_yet_approved')
  t.equal(pending.status, 500)
  t.match(pending.body, { code: 'CHAT_PLATFORM_ERROR', message: 'Template name does not exist', details: { code: 132001, status: 'PENDING' } })
  const unknown = await send('never_heard_of')
  t.equal(unknown.status, 500)
  t.equal(unknown.body.message, 'Template name does not exist')
  t.notOk('status' in unknown.body.details, 'no status for a template not made here')

  await review(t, { name: 'not_yet_approved', language: 'en_US', event: 'APPROVED' })
  const approved = await send('not_yet_approved')
  t.equal(approved.status, 200, JSON.stringify(approved.body))
  t.match(approved.body, { messages: [{ id: /^wamid\./ }] })
})

t.test('the platform\'s refusal of a duplicate is relayed with its words; another language is another template', async (t) => {
  t.equal((await create(adminToken, newTemplate('twice_made'))).status, 201)
  const again = await create(adminToken, newTemplate('twice_made', { category: 'MARKETING' }))
  t.equal(again.status, 500)
  t.match(again.body, {
    code: 'CHAT_PLATFORM_ERROR',
    message: 'Invalid parameter',
    details: { code: 100, subcode: 2388024, platformUserTitle: 'Content in This Language Already Exists', platformUserMessage: /already en_US content/ }
  })
  t.match(await storedNamed('twice_made'), { category: 'UTILITY', status: 'PENDING' }, 'the stored template is left as it was')
  t.equal((await create(adminToken, newTemplate('twice_made', { language: 'es' }))).status, 201)
  t.same((await stored(adminToken)).filter((tpl) => tpl.name === 'twice_made').map((tpl) => tpl.language), ['en_US', 'es'])
})

t.test('a delete removes every language on the platform and here; an unknown name is 404', async (t) => {
  for (const language of ['en_US', 'ar']) t.equal((await create(adminToken, newTemplate('to_delete', { language }))).status, 201)
  const before = templateRequests('DELETE').length
  const deleted = await call('DELETE', '/api/chat/templates/to_delete', { token: adminToken })
  t.equal(deleted.status, 204, JSON.stringify(deleted.body))
  const [platformCall] = templateRequests('DELETE').slice(before)
  t.equal(platformCall?.path, `/v21.0/${DEFAULT_BUSINESS_ACCOUNT_ID}/message_templates`)
  t.same(platformCall?.query, { name: 'to_delete' })
  t.same((await stored(adminToken)).filter((tpl) => tpl.name === 'to_delete'), [])

  const again = await call('DELETE', '/api/chat/templates/to_delete', { token: adminToken })
  t.equal(again.status, 404)
  t.match(again.body, { code: 'TEMPLATE_NOT_FOUND', message: 'Template not found' })
  const calls = templateRequests('DELETE').length
  const malformed = await call('DELETE', '/api/chat/templates/Not-A-Name', { token: adminToken })
  t.equal(malformed.status, 404)
  t.equal(templateRequests('DELETE').length, calls, 'a name no template can have is not asked of the platform')
})

t.test('the default account\'s templates are the admins\' to make; a linked account\'s are its own business account\'s', async (t) => {
  const member = await newUser(adminToken)
  const before = templateRequests('POST').length
  const refused = await create(member.token, newTemplate('member_made'))
  t.equal(refused.status, 403)
  t.equal((await call('DELETE', '/api/chat/templates/shipping_update', { token: member.token })).status, 403)
  t.equal(templateRequests('POST').length, before, 'the platform was not called')
  t.ok((await stored(member.token)).some((tpl) => tpl.name === 'shipping_update'), 'but the member reads them')

  const owner = await newUser(adminToken)
  await chat.linkAccount(owner.token, '200000000000077', { businessAccountId: '300000000000077' })
  const own = await create(owner.token, newTemplate('owner_made'))
  t.equal(own.status, 201, JSON.stringify(own.body))
  t.equal(templateRequests('POST').at(-1)?.path, '/v21.0/300000000000077/message_templates')
  t.same((await stored(owner.token)).map((tpl) => tpl.name), ['owner_made'], 'its business account\'s templates only')
  t.notOk((await stored(adminToken)).some((tpl) => tpl.name === 'owner_made'), 'not the default account\'s')

  const noBusiness = await newUser(adminToken)
  await chat.linkAccount(noBusiness.token, '200000000000078')
  const withoutBusiness = await create(noBusiness.token, newTemplate('nowhere'))
  t.equal(withoutBusiness.status, 400)
  t.equal(withoutBusiness.body.message, 'The chat account has no businessAccountId: it has no templates')
})
