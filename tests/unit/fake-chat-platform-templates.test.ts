import { once } from 'node:events'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { FAKE_ACCESS_TOKEN, signature, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'

/**
 * The fake platform's template management in the Graph API's wire format (issue 42): create,
 * its refusals, delete, and the signed status webhook its `/_fake/template-status` route posts.
 */
const APP_SECRET = 'fake-templates-secret'
const BUSINESS_ACCOUNT_ID = '1234567890'

const received: Array<{ body: string, headers: IncomingMessage['headers'] }> = []
const receiver = createServer((request, response) => {
  let body = ''
  request.on('data', (chunk: Buffer) => { body += chunk.toString() })
  request.on('end', () => {
    received.push({ body, headers: request.headers })
    response.end('{"status":"received"}')
  })
})
receiver.listen(0, '127.0.0.1')
await once(receiver, 'listening')
t.teardown(() => { receiver.close() })
const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhook/chat`

const fake = await startFakeChatPlatform({ webhook: { url: webhookUrl, appSecret: APP_SECRET, phoneNumberId: '106540352242922' } })
t.teardown(fake.close)
const origin = new URL(fake.url).origin

const graph = async (method: string, path: string, body?: unknown): Promise<{ status: number, body: any }> => {
  const res = await fetch(`${fake.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${FAKE_ACCESS_TOKEN}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, body: await res.json() }
}

const template = { name: 'order_shipped', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Order {{1}} shipped', example: { body_text: [['A-42']] } }] }

t.test('a template is created PENDING; a second of that name and language is refused as the Graph API refuses it', async (t) => {
  const created = await graph('POST', `/${BUSINESS_ACCOUNT_ID}/message_templates`, template)
  t.equal(created.status, 200)
  t.match(created.body, { id: /^\d+$/, status: 'PENDING', category: 'UTILITY' })
  t.same(Object.keys(created.body).sort(), ['category', 'id', 'status'])

  const again = await graph('POST', `/${BUSINESS_ACCOUNT_ID}/message_templates`, template)
  t.equal(again.status, 400)
  t.match(again.body.error, {
    message: 'Invalid parameter',
    type: 'OAuthException',
    code: 100,
    error_subcode: 2388024,
    is_transient: false,
    error_user_title: 'Content in This Language Already Exists',
    error_user_msg: 'There is already en_US content for this template. You can create a new template and try again.',
    fbtrace_id: String
  })

  const listed = await graph('GET', `/${BUSINESS_ACCOUNT_ID}/message_templates?status=PENDING`)
  const named = listed.body.data.find((record: { name: string }) => record.name === 'order_shipped')
  t.match(named, { id: created.body.id, status: 'PENDING', category: 'UTILITY', components: template.components })
})

t.test('the review: the template\'s status, and the signed message_template_status_update delivery', async (t) => {
  const answer = await fetch(`${origin}/_fake/template-status`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'order_shipped', language: 'en_US', event: 'REJECTED', reason: 'INVALID_FORMAT' })
  })
  t.same(await answer.json(), { webhookStatus: 200 })
  const delivery = received.at(-1)
  t.equal(delivery?.headers['x-hub-signature-256'], signature(delivery?.body ?? '', APP_SECRET), 'signed with the app secret')
  const payload = JSON.parse(delivery?.body ?? '{}')
  const id = (await graph('GET', `/${BUSINESS_ACCOUNT_ID}/message_templates?status=REJECTED`)).body.data[0]?.id
  t.same(payload, {
    object: 'whatsapp_business_account',
    entry: [{
      id: BUSINESS_ACCOUNT_ID,
      time: payload.entry[0].time,
      changes: [{
        value: {
          event: 'REJECTED',
          message_template_id: Number(id),
          message_template_name: 'order_shipped',
          message_template_language: 'en_US',
          reason: 'INVALID_FORMAT',
          message_template_category: 'UTILITY'
        },
        field: 'message_template_status_update'
      }]
    }]
  })
  t.ok(Number.isInteger(payload.entry[0].time), 'time is Unix seconds')

  const refused = await fetch(`${origin}/_fake/template-status`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"order_shipped"}' })
  t.equal(refused.status, 400)
})

t.test('a delete by name takes every language; a name it does not have is the Graph API\'s not found', async (t) => {
  t.equal((await graph('POST', `/${BUSINESS_ACCOUNT_ID}/message_templates`, { ...template, language: 'es' })).status, 200)
  const deleted = await graph('DELETE', `/${BUSINESS_ACCOUNT_ID}/message_templates?name=order_shipped`)
  t.same(deleted, { status: 200, body: { success: true } })
  t.notOk(fake.options.templates.some((record) => record.name === 'order_shipped'), 'both languages are gone')
  const missing = await graph('DELETE', `/${BUSINESS_ACCOUNT_ID}/message_templates?name=order_shipped`)
  t.equal(missing.status, 400)
  t.match(missing.body.error, { message: 'Invalid parameter', code: 100, error_subcode: 2593002, error_user_title: 'Message template not found', error_user_msg: 'The message template order_shipped wasn\'t found for this account.' })
})
