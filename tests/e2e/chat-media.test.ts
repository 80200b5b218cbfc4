import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import {
  deliver, FAKE_ACCESS_TOKEN, inboundMedia, messagesDelivery, startFakeChatPlatform, type FakeMedia
} from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/**
 * Media in and out, through the real api and worker: a customer's image and document stored
 * with their media ids and streamed back from the platform on request, within the size and time
 * bounds whatever the platform does; media sent by the api and by a workflow's send_chat_media node.
 */
const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'e2e-chat-media-app-secret'
const CUSTOMER = '15557654321'
const MAX_BYTES = 1024 * 1024
const TIMEOUT_MS = 3000

const fake = await startFakeChatPlatform()
t.teardown(async () => { await fake.close() })
const stack = await startStack(t, {
  env: {
    CHAT_API_URL: fake.url,
    CHAT_ACCESS_TOKEN: FAKE_ACCESS_TOKEN,
    CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    CHAT_BUSINESS_ACCOUNT_ID: '102290129340398',
    CHAT_APP_SECRET: APP_SECRET,
    CHAT_MEDIA_MAX_BYTES: String(MAX_BYTES),
    CHAT_MEDIA_TIMEOUT_MS: String(TIMEOUT_MS)
  }
})
const token = await stack.adminToken()
const { client } = stack

const processedDeliveries = async (): Promise<number> => {
  const { body } = await stack.call('GET', '/api/automation/queues', { token })
  return body.queues.find((queue: { name: string }) => queue.name === 'assistant-main').completed
}

async function deliverAndWait (payload: unknown): Promise<void> {
  const before = await processedDeliveries()
  const res = await deliver(`${stack.baseUrl}/webhook/chat`, payload, APP_SECRET)
  if (res.status !== 200) throw new Error(`delivery refused: ${res.status} ${await res.text()}`)
  await waitFor(async () => await processedDeliveries() > before ? true : undefined, { what: 'the delivery to be processed' })
}

interface StoredMessage { id: string, type: string, content: string, direction: string, media: Record<string, unknown> | null }

const messagesWith = async (phone: string, accessToken = token, headers: Record<string, string> = {}): Promise<StoredMessage[]> => {
  const { body } = await stack.call('GET', '/api/chat/conversations', { token: accessToken, headers })
  return body.find((c: { phone: string }) => c.phone === phone)?.messages ?? []
}

/** A customer sends `media` (held by the fake) as `kind`; returns its stored message. */
async function receive (kind: 'image' | 'document', media: FakeMedia, extra: { caption?: string, filename?: string } = {}, from = CUSTOMER): Promise<StoredMessage> {
  const mediaId = fake.addMedia(media)
  await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from, message: inboundMedia(kind, { id: mediaId, mimeType: media.mimeType, ...extra }) }]))
  return (await messagesWith(from)).find((message) => message.media?.id === mediaId)!
}

const mediaOf = async (messageId: string, accessToken = token, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(`${stack.baseUrl}/api/chat/messages/${messageId}/media`, { headers: { authorization: `Bearer ${accessToken}`, ...headers } })

/** The api answers, and at once: a bound that was hit left it healthy. */
async function healthy (t: Test): Promise<void> {
  const started = Date.now()
  const res = await stack.call('GET', '/api/chat/conversations', { token })
  t.equal(res.status, 200, 'the api still answers')
  t.ok(Date.now() - started < 2000, `at once (${Date.now() - started} ms)`)
}

// A workflow answers a customer's image by sending it back by its media id, with a caption.
const echoId = await client.createWorkflow(token, {
  name: 'image echo',
  triggerType: 'EVENT',
  triggerConfig: { eventName: 'chat.message.received' },
  nodes: [
    { id: 'isImage', type: 'condition', config: { field: '{{triggerData.type}}', operator: 'equals', value: 'image', then: 'echo' } },
    { id: 'echo', type: 'send_chat_media', config: { phone: '{{triggerData.phone}}', kind: 'image', mediaId: '{{triggerData.media.id}}', caption: 'Got your {{triggerData.media.mimeType}}' } }
  ]
})

const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), randomBytes(40_000)])
const image = await receive('image', { bytes: PNG, mimeType: 'image/png' }, { caption: 'my receipt' })

t.test('an inbound image is stored with its media id, type and caption', async (t) => {
  t.match(image, { direction: 'inbound', type: 'image', content: 'my receipt', media: { id: /^\d+$/, mimeType: 'image/png', caption: 'my receipt', sha256: /./ } })
})

t.test('the image reaches chat.message.received with its media, and send_chat_media sends it back by id', async (t) => {
  const run = await client.latestRunReaching(token, echoId, ['SUCCESS', 'FAILED'])
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.triggerData, { type: 'image', media: { id: image.media?.id, mimeType: 'image/png', caption: 'my receipt' } })
  t.match(run.result.echo, { kind: 'image', to: CUSTOMER, wamid: /^wamid\./ })
  const send = fake.sends().find((request) => (request.body as { type?: string }).type === 'image')
  t.same(send?.body, {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: CUSTOMER,
    type: 'image',
    image: { id: image.media?.id, caption: 'Got your image/png' }
  }, 'the platform got the exact media send')
  const stored = (await messagesWith(CUSTOMER)).find((message) => message.direction === 'outbound' && message.type === 'image')
  t.match(stored, { content: 'Got your image/png', media: { id: image.media?.id, caption: 'Got your image/png' } })
})

t.test('GET /api/chat/messages/:id/media streams the platform\'s bytes with the platform\'s type', async (t) => {
  const res = await mediaOf(image.id)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'image/png')
  t.equal(res.headers.get('content-length'), String(PNG.length))
  t.equal(res.headers.get('content-disposition'), 'attachment')
  t.equal(res.headers.get('cache-control'), 'private, no-store')
  t.ok(Buffer.from(await res.arrayBuffer()).equals(PNG), 'the bytes as the platform holds them')
  const mediaId = String(image.media?.id)
  const [record, download] = fake.requests.filter((request) => request.path === `/v21.0/${mediaId}` || request.query.mid === mediaId).slice(-2)
  t.match(record, { method: 'GET', path: `/v21.0/${mediaId}`, headers: { authorization: `Bearer ${FAKE_ACCESS_TOKEN}` } }, 'the media record, with the account\'s token')
  t.match(download, { method: 'GET', path: '/whatsapp_business/attachments/', headers: { authorization: `Bearer ${FAKE_ACCESS_TOKEN}` } }, 'then its download URL, with the same token')
})

t.test('a document keeps its file name, given back as the attachment\'s', async (t) => {
  const pdf = Buffer.from('%PDF-1.4\n% a price list\n')
  const document = await receive('document', { bytes: pdf, mimeType: 'application/pdf' }, { filename: 'prices 2026 (€).pdf' })
  t.match(document, { type: 'document', content: '[document]', media: { mimeType: 'application/pdf', filename: 'prices 2026 (€).pdf' } })
  const res = await mediaOf(document.id)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'application/pdf')
  t.equal(res.headers.get('content-disposition'), 'attachment; filename="prices 2026 (_).pdf"; filename*=UTF-8\'\'prices%202026%20(%E2%82%AC).pdf')
  t.same(Buffer.from(await res.arrayBuffer()), pdf)
})

t.test('POST /api/chat/send/media sends by link inside the window and stores the message', async (t) => {
  const res = await stack.call('POST', '/api/chat/send/media', { token, body: { to: `+${CUSTOMER}`, kind: 'document', link: 'https://example.com/menu.pdf', caption: 'Our menu', filename: 'menu.pdf' } })
  t.equal(res.status, 200, JSON.stringify(res.body))
  t.match(res.body, { messaging_product: 'whatsapp', messages: [{ id: /^wamid\./ }] })
  t.same(fake.sends().at(-1)?.body, {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: CUSTOMER,
    type: 'document',
    document: { link: 'https://example.com/menu.pdf', caption: 'Our menu', filename: 'menu.pdf' }
  })
  const audio = await stack.call('POST', '/api/chat/send/media', { token, body: { to: CUSTOMER, kind: 'audio', mediaId: image.media?.id } })
  t.equal(audio.status, 200, JSON.stringify(audio.body))
  const stored = (await messagesWith(CUSTOMER)).filter((message) => message.direction === 'outbound').slice(-2)
  t.match(stored, [
    { type: 'document', content: 'Our menu', media: { link: 'https://example.com/menu.pdf', caption: 'Our menu', filename: 'menu.pdf' } },
    { type: 'audio', content: '[audio]', media: { id: image.media?.id } }
  ])
})

t.test('media sends the platform would refuse are 400s naming the field; outside the window, the window\'s 400', async (t) => {
  const sendsBefore = fake.sends().length
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ kind: 'image' }, 'link or mediaId is required'],
    [{ kind: 'image', link: 'https://example.com/a.jpg', mediaId: '1' }, 'link and mediaId cannot both be given: send one'],
    [{ kind: 'image', link: 'http://example.com/a.jpg' }, 'link must be an https URL'],
    [{ kind: 'audio', mediaId: '1', caption: 'listen' }, 'caption is not allowed for audio messages'],
    [{ kind: 'sticker', mediaId: '1', caption: 'hi' }, 'caption is not allowed for sticker messages'],
    [{ kind: 'image', mediaId: '1', filename: 'a.jpg' }, 'filename is only for document messages'],
    [{ kind: 'gif', mediaId: '1' }, 'kind must be one of image, document, audio, video, sticker'],
    [{ kind: 'image', mediaId: '1', caption: 'x'.repeat(1025) }, 'caption must be 1 to 1024 characters']
  ]
  for (const [body, message] of cases) {
    const res = await stack.call('POST', '/api/chat/send/media', { token, body: { to: CUSTOMER, ...body } })
    t.match(res, { status: 400, body: { code: 'VALIDATION_ERROR', message } }, message)
  }
  const outside = await stack.call('POST', '/api/chat/send/media', { token, body: { to: '15550009999', kind: 'image', link: 'https://example.com/a.jpg' } })
  t.match(outside, { status: 400, body: { code: 'OUTSIDE_WINDOW', message: 'Outside the 24-hour window: send a template' } })
  t.equal(fake.sends().length, sendsBefore, 'none reached the platform')
})

t.test('media of another account\'s conversation is a 404, like a missing message; a text message has none', async (t) => {
  const member = await client.newUser(token)
  const linked = await stack.call('POST', '/api/chat/accounts', { token: member.token, body: { name: 'B', phoneNumberId: '200000000001', accessToken: FAKE_ACCESS_TOKEN } })
  t.equal(linked.status, 201, JSON.stringify(linked.body))
  const foreign = await mediaOf(image.id, member.token)
  t.equal(foreign.status, 404)
  const missing = await mediaOf('m0000000000000000000000000', member.token)
  t.same(await foreign.json(), await missing.json(), 'exactly a missing message\'s answer')
  t.match(await (await mediaOf(image.id, member.token, { 'x-account-id': 'default' })).json(), { statusCode: 404, code: 'CHAT_ACCOUNT_NOT_FOUND' }, 'nor may the member select the default account')

  await deliverAndWait(messagesDelivery(PHONE_NUMBER_ID, [{ from: CUSTOMER, text: 'thanks' }]))
  const text = (await messagesWith(CUSTOMER)).findLast((message) => message.content === 'thanks')!
  t.match(await (await mediaOf(text.id)).json(), { statusCode: 404, code: 'MEDIA_NOT_FOUND', message: 'Message has no media' })
})

t.test('hostile downloads are bounded and aborted, and the api stays healthy', async (t) => {
  t.test('a download that declares 2 GB: 502 before a byte, its connection dropped', async (t) => {
    const huge = await receive('image', { bytes: PNG, mimeType: 'image/png', download: 'huge' })
    const started = Date.now()
    const res = await mediaOf(huge.id)
    t.equal(res.status, 502)
    t.match(await res.json(), { code: 'CHAT_MEDIA_TOO_LARGE', message: /^Media is larger than the media size limit \(2147483648 bytes, CHAT_MEDIA_MAX_BYTES is 1048576\)$/ })
    t.ok(Date.now() - started < TIMEOUT_MS, 'without waiting for its body')
    await healthy(t)
  })

  t.test('a media record that declares 2 GB: 502, and nothing is downloaded', async (t) => {
    const huge = await receive('image', { bytes: PNG, mimeType: 'image/png', fileSize: 2 ** 31 })
    const downloadsBefore = fake.requests.filter((request) => request.path === '/whatsapp_business/attachments/').length
    const res = await mediaOf(huge.id)
    t.equal(res.status, 502)
    t.match(await res.json(), { code: 'CHAT_MEDIA_TOO_LARGE' })
    t.equal(fake.requests.filter((request) => request.path === '/whatsapp_business/attachments/').length, downloadsBefore)
  })

  t.test('a download without a length that never ends: cut once CHAT_MEDIA_MAX_BYTES have passed', async (t) => {
    const endless = await receive('image', { bytes: PNG, mimeType: 'image/png', download: 'endless' })
    const res = await mediaOf(endless.id)
    t.equal(res.status, 200, 'the bytes began before the bound was known to be passed')
    let received = 0
    const reader = res.body!.getReader()
    const outcome = await (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) return 'ended'
          received += value.length
        }
      } catch {
        return 'cut'
      }
    })()
    t.equal(outcome, 'cut', 'the transfer is broken, not ended: the caller cannot take it for the whole media')
    t.ok(received <= MAX_BYTES, `${received} bytes passed, at most ${MAX_BYTES}`)
    await healthy(t)
  })

  t.test('a download that never answers: 504 at CHAT_MEDIA_TIMEOUT_MS', async (t) => {
    const stalled = await receive('image', { bytes: PNG, mimeType: 'image/png', download: 'stall' })
    const started = Date.now()
    const res = await mediaOf(stalled.id)
    const elapsed = Date.now() - started
    t.equal(res.status, 504)
    t.match(await res.json(), { code: 'CHAT_MEDIA_TIMEOUT', message: `Chat platform media did not arrive within CHAT_MEDIA_TIMEOUT_MS (${TIMEOUT_MS} ms)` })
    t.ok(elapsed >= TIMEOUT_MS - 100 && elapsed < TIMEOUT_MS + 3000, `answered after ${elapsed} ms`)
    await healthy(t)
  })

  t.test('after all of them, media still streams', async (t) => {
    const res = await mediaOf(image.id)
    t.equal(res.status, 200)
    t.ok(Buffer.from(await res.arrayBuffer()).equals(PNG))
  })
})
