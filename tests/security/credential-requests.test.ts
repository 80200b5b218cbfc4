import { createHmac, randomBytes } from 'node:crypto'
import t from 'tap'
import { startDeliverySink, type Delivery, type DeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import type { RunBody } from '@switchboard/testing/client'

/**
 * What an http_request sends with credentials, against loopback services (issue 23, items 4 and
 * 5): the value must be masked in every encoding the request path gives it (a `Tok en:…` value
 * was logged as `Calling GET http://…/echo/p/Tok%20en:…` and stored as `?q=Tok+en%3A…`), and no
 * header that carries a credential or a signature may follow a redirect to another origin
 * (undici strips only authorization, cookie and proxy-authorization).
 */

/** A service that echoes every request back, with redirects: /to-other → the other service, /to-same → here. */
async function echoService (redirectTo: () => string): Promise<DeliverySink> {
  return await startDeliverySink(t, {
    answer: ({ path: url, headers, body }) => {
      const path = url.split('?')[0]!
      if (path === '/to-other') return { status: 302, headers: { location: `${redirectTo()}/landed` } }
      if (path === '/to-other-307') return { status: 307, headers: { location: `${redirectTo()}/landed` } }
      if (path === '/to-same') return { status: 302, headers: { location: '/landed-here' } }
      return { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url, headers, body }) }
    }
  })
}
const other = await echoService(() => '')
const service = await echoService(() => other.url)
const servicePort = new URL(service.url).port
/** What either service received, with which one received it. */
const received = (): Array<Delivery & { origin: string }> => [
  ...service.deliveries.map((delivery) => ({ ...delivery, origin: 'service' })),
  ...other.deliveries.map((delivery) => ({ ...delivery, origin: 'other' }))
]
const forgetReceived = (): void => {
  service.deliveries.length = 0
  other.deliveries.length = 0
}

const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'debug' } })
const member = await stack.client.newUser(await stack.adminToken())
const { call, client } = stack

async function credential (name: string, type: string, data: Record<string, string>): Promise<void> {
  const res = await call('POST', '/api/automation/credentials', { token: member.token, body: { name, type, data } })
  if (res.status !== 201) throw new Error(`credential ${name}: ${JSON.stringify(res.body)}`)
}

const tag = randomBytes(4).toString('hex')
/** Spaces, `:`, `@`, `/`, `+`, `=`, quotes and non-ASCII: characters every encoder writes its own way. */
const VALUE = `Tok en:@/+="'é✓-${tag}`
/** The same without non-ASCII, for headers (bytes beyond Latin-1 do not travel in them). */
const HEADER_VALUE = `Hdr en:@/+="'-${tag}`
/** A host name: the URL parser lowercases it. */
const HOST = 'LocalHost'
const BASIC = { username: `svc-user-ü-${tag}`, password: `pä ss:@/+="-${tag}` }
const HMAC_SECRET = `hmac secret é-${tag}`
const HEADER_KEY = `x-api-key value-${tag}`
await credential('g', 'generic', { value: VALUE, header: HEADER_VALUE, host: HOST })
await credential('svc', 'basic', BASIC)
await credential('keyed', 'header', { name: 'X-Api-Key', value: HEADER_KEY })
await credential('signing', 'hmac', { secret: HMAC_SECRET })

/** Every way a value can be written by what sends it: each must be missing from what runs store and log. */
function encodings (value: string): string[] {
  const inPath = new URL('http://h/')
  inPath.pathname = `/${value}`
  const inForm = new URLSearchParams([['q', value]]).toString().slice(2)
  // A query written in the URL, serialized again as a form when `query` adds a parameter.
  const reread = new URL(`http://h/?q=${value}`)
  reread.searchParams.append('more', '1')
  return [
    reread.search.slice(3).split('&')[0]!,
    value,
    value.toLowerCase(),
    JSON.stringify(value).slice(1, -1),
    encodeURIComponent(value),
    inPath.pathname.slice(1),
    new URL(`http://h/?q=${value}`).search.slice(3),
    inForm
  ]
}
const SEARCHED = [
  ...[VALUE, HEADER_VALUE, HMAC_SECRET, HEADER_KEY, BASIC.password].flatMap(encodings),
  Buffer.from(`${BASIC.username}:${BASIC.password}`).toString('base64')
]

/** Every string a run holds: its result, error and log lines. */
function strings (value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (Array.isArray(value)) return value.flatMap(strings)
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([key, item]) => [key, ...strings(item)])
  return []
}

async function run (nodes: unknown[]): Promise<RunBody> {
  return client.runWorkflow(member.token, { nodes }, {}, { timeoutMs: 30_000 })
}

t.test('a value in path, query, host, headers and body is masked in every encoding, in results, logs and errors', async (t) => {
  const runs = [
    await run([{
      id: 'form',
      type: 'http_request',
      config: {
        method: 'POST',
        url: `${service.url}/echo/{{credentials.g.value}}?inurl={{credentials.g.value}}`,
        query: { q: '{{credentials.g.value}}' },
        headers: { 'x-token': '{{credentials.g.header}}' },
        body: { v: '{{credentials.g.value}}' },
        credential: 'svc'
      }
    }]),
    await run([{ id: 'url', type: 'http_request', config: { url: `${service.url}/echo/{{credentials.g.value}}?inurl={{credentials.g.value}}` } }]),
    await run([{ id: 'host', type: 'http_request', config: { url: `http://{{credentials.g.host}}:${servicePort}/echo/host`, headers: { 'x-host': '{{credentials.g.host}}' } } }]),
    await run([{ id: 'broken', type: 'http_request', config: { url: 'http://[{{credentials.g.value}}]/' } }])
  ]
  const [form, url, host, broken] = runs

  // The values were sent: the services saw them as each encoder writes them.
  const formRequest = received().find((request) => request.path.startsWith('/echo/') && request.method === 'POST')!
  const sent = new URL(`http://h/echo/${VALUE}?inurl=${VALUE}`)
  sent.searchParams.append('q', VALUE)
  t.equal(formRequest.path, `${sent.pathname}${sent.search}`, 'the path as the URL serializer writes it, the query re-serialized as a form')
  t.equal(formRequest.headers['x-token'], HEADER_VALUE)
  t.equal(formRequest.headers.authorization, `Basic ${Buffer.from(`${BASIC.username}:${BASIC.password}`).toString('base64')}`)
  t.same(JSON.parse(formRequest.body), { v: VALUE })
  t.equal(received().find((request) => request.path === '/echo/host')?.headers.host, `localhost:${servicePort}`, 'the host, lowercased')

  t.same([form!.status, url!.status, host!.status, broken!.status], ['SUCCESS', 'SUCCESS', 'SUCCESS', 'FAILED'])
  const messages = form!.logs.map((line) => line.message)
  t.ok(messages.includes(`Calling POST ${service.url}/echo/{{credentials.g.value}} (attempt 1)`), 'the log shows the address as written')
  t.ok(messages.includes(`POST ${service.url}/echo/{{credentials.g.value}} answered 200`))
  t.equal(broken!.error, 'url is not a valid URL: http://[[credential]]/')
  t.equal(host!.result.host.body.headers.host, `[credential]:${servicePort}`)

  const stored = runs.flatMap(strings)
  for (const form of SEARCHED) t.notOk(stored.some((text) => text.includes(form)), `no run holds ${JSON.stringify(form)}`)
  const logged = stack.workers[0]!.output()
  for (const form of SEARCHED) t.notOk(logged.includes(form) || logged.includes(JSON.stringify(form).slice(1, -1)), `the worker's log does not hold ${JSON.stringify(form)}`)
})

t.test('a redirect to another origin drops every header that carries a credential or a signature', async (t) => {
  forgetReceived()
  const headers = { accept: 'application/json', 'x-token': '{{credentials.g.header}}', authorization: 'Bearer literal-token-value', cookie: 'session=literal-cookie' }
  const keyed = await run([{ id: 'keyed', type: 'http_request', config: { url: `${service.url}/to-other`, credential: 'keyed', headers } }])
  const signed = await run([{ id: 'signed', type: 'http_request', config: { method: 'POST', url: `${service.url}/to-other-307`, credential: 'signing', body: { order: 1 } } }])
  t.same([keyed.status, signed.status], ['SUCCESS', 'SUCCESS'])

  const landed = received().filter((request) => request.origin === 'other')
  t.equal(landed.length, 2, 'both redirects were followed')
  const [get, post] = landed
  for (const name of ['x-api-key', 'x-token', 'authorization', 'cookie']) t.notOk(name in get!.headers, `${name} stayed behind`)
  t.equal(get!.headers.accept, 'application/json', 'harmless headers go on')
  t.ok(get!.headers['idempotency-key'], 'and so does the Idempotency-Key')
  t.notOk('x-signature-256' in post!.headers, 'the signature stayed behind')
  t.same([post!.method, post!.body], ['POST', '{"order":1}'], 'a 307 keeps its method and body')

  const first = received().find((request) => request.path === '/to-other-307')!
  t.equal(first.headers['x-signature-256'], `sha256=${createHmac('sha256', HMAC_SECRET).update('{"order":1}').digest('hex')}`, 'the first origin had it')
})

t.test('a redirect within the origin keeps the credential', async (t) => {
  forgetReceived()
  const same = await run([{ id: 'same', type: 'http_request', config: { url: `${service.url}/to-same`, credential: 'keyed' } }])
  t.equal(same.status, 'SUCCESS')
  const landed = received().find((request) => request.path === '/landed-here')
  t.equal(landed?.headers['x-api-key'], HEADER_KEY)
  t.equal(same.result.same.body.headers['x-api-key'], '[credential]', 'and masks it in the echo')
})
