import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { messagesDelivery, signedDelivery, signature } from '@switchboard/testing/fake-chat-platform'
import { APP_SECRET, buildChatTestApp, DEFAULT_PHONE_NUMBER_ID } from '../../apps/api/test/chat-helper.ts'
import { errorBodyProblem } from './error-body.ts'
import { operationsOf } from './openapi.ts'

/**
 * Requests the fuzzer cannot make (over the body limit, bytes Node's HTTP parser
 * refuses, undeclared methods) and the cases it found, pinned: each answer is a
 * 4xx with the API's error body.
 */
const { app, request, adminToken } = await buildChatTestApp(t)
const BODY_LIMIT = 1024 * 1024
const operations = operationsOf((await request({ method: 'GET', url: '/docs/json' })).json())
const authorization = `Bearer ${adminToken}`

const address = new URL(await app.listen({ host: '127.0.0.1', port: 0 }))

/** Sends bytes as they are over a fresh connection and reads the answer until the server closes it. */
async function exchange (bytes: string | Buffer): Promise<{ status: number, body: string }> {
  const socket = connect(Number(address.port), '127.0.0.1')
  socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')))
  const chunks: Buffer[] = []
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  socket.on('error', () => {})
  socket.write(bytes)
  await once(socket, 'close')
  const text = Buffer.concat(chunks).toString('latin1')
  const [head = '', ...rest] = text.split('\r\n\r\n')
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), body: rest.join('\r\n\r\n') }
}

const withSamePath = (path: string): string => path.replace(/:[^/]+/g, 'x')

/** Routes whose body is not JSON (the contacts import takes text/csv, with its own limit): a JSON body is a 415 there. */
const TAKES_NO_JSON = new Set(['POST /api/chat/contacts/import'])
/** Routes with a body limit of their own, larger than the api's (a knowledge source may be a 20 MiB PDF). */
const OWN_LIMITS: Record<string, number> = { 'POST /api/chat/accounts/:id/knowledge': 20 * 1024 * 1024 }

t.test('bodies over 1 MiB (or a route\'s own limit) are refused with 413 on every route that takes one, whatever their type', async (t) => {
  const bodyRoutes = operations.filter((op) => op.method === 'POST' || op.method === 'PATCH')
  t.ok(bodyRoutes.length >= 15, `${bodyRoutes.length} routes take a body`)
  const oversized = (limit: number): Record<string, string> => ({
    'application/json': JSON.stringify({ name: 'x'.repeat(limit) }),
    'text/plain': 'x'.repeat(limit + 1),
    'application/x-www-form-urlencoded': `a=${'x'.repeat(limit)}`
  })
  for (const op of bodyRoutes) {
    for (const [contentType, payload] of Object.entries(oversized(OWN_LIMITS[`${op.method} ${op.path}`] ?? BODY_LIMIT))) {
      const res = await request({ method: op.method, url: withSamePath(op.path), headers: { authorization, 'content-type': contentType }, payload })
      // A route without a parser for the type may refuse it first (415): either way, nothing is read past the limit.
      const takesJson = !TAKES_NO_JSON.has(`${op.method} ${op.path}`)
      t.ok(res.statusCode === 413 || (res.statusCode === 415 && (contentType !== 'application/json' || !takesJson)), `${op.method} ${op.path} ${contentType}: ${res.statusCode}`)
      t.equal(errorBodyProblem(res.statusCode, res.body), undefined, `${op.method} ${op.path} ${contentType} body`)
    }
  }
})

t.test('a chunked body that grows past 1 MiB is cut off with 413', async (t) => {
  const chunk = 'x'.repeat(64 * 1024)
  const chunks = Array.from({ length: 20 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('')
  const res = await exchange(`POST /api/automation/events HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\n` +
    `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`)
  t.equal(res.status, 413)
  t.equal(errorBodyProblem(res.status, res.body), undefined, res.body)
})

t.test('bytes the HTTP parser refuses are answered in the API\'s error shape', async (t) => {
  const request = (headers: string, line = 'GET /api/automation/queues HTTP/1.1'): string =>
    `${line}\r\nHost: x\r\nAuthorization: ${authorization}\r\n${headers}\r\n`
  const cases: Record<string, [string | Buffer, number]> = {
    'a NUL in X-Account-Id': [request('X-Account-Id: a\u0000b\r\n'), 400],
    'a NUL in Idempotency-Key': [request('Idempotency-Key: a\u0000b\r\n'), 400],
    'a NUL in Content-Type': [request('Content-Type: application/json\u0000\r\n'), 400],
    'a NUL in Authorization': [`GET /api/automation/queues HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\u0000\r\n\r\n`, 400],
    'a bare CR in a header value': [request('Idempotency-Key: a\rb\r\n'), 400],
    'a header name with a space': [request('Bad Header: 1\r\n'), 400],
    'headers over 16 KiB': [request(`X-Padding: ${'a'.repeat(20 * 1024)}\r\n`), 431],
    'a garbage request line': ['HELLO\r\n\r\n', 400],
    'a non-numeric Content-Length': [request('Content-Length: abc\r\n', 'POST /api/automation/events HTTP/1.1'), 400],
    'Content-Length beside Transfer-Encoding (request smuggling)': [
      request('Content-Length: 3\r\nTransfer-Encoding: chunked\r\n', 'POST /api/automation/events HTTP/1.1'), 400
    ],
    'a broken chunk size': [request('Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n', 'POST /api/automation/events HTTP/1.1') + 'zz\r\n\r\n', 400]
  }
  for (const [name, [bytes, status]] of Object.entries(cases)) {
    const res = await exchange(bytes)
    t.equal(res.status, status, name)
    t.equal(errorBodyProblem(res.status, res.body), undefined, `${name}: ${res.body}`)
  }
})

t.test('header bytes beyond ASCII (a lone surrogate\'s UTF-8, invalid UTF-8) reach the routes and are answered in the API\'s error shape', async (t) => {
  const withBytes = (line: string, name: string, bytes: number[], extra = ''): Buffer => Buffer.concat([
    Buffer.from(`${line}\r\nHost: x\r\nConnection: close\r\n${extra}${name}: a`, 'latin1'), Buffer.from(bytes), Buffer.from('b\r\n\r\n', 'latin1')
  ])
  const cases: Record<string, [Buffer, number]> = {
    'X-Account-Id': [withBytes('GET /api/chat/conversations HTTP/1.1', 'X-Account-Id', [0xed, 0xa0, 0x80], `Authorization: ${authorization}\r\n`), 404],
    Authorization: [withBytes('GET /api/automation/queues HTTP/1.1', 'Authorization', [0xff, 0xfe]), 401],
    'Content-Type': [withBytes('POST /api/automation/events HTTP/1.1', 'Content-Type', [0xc0, 0xaf], `Authorization: ${authorization}\r\nContent-Length: 2\r\n`), 415]
  }
  for (const [name, [bytes, status]] of Object.entries(cases)) {
    const res = await exchange(Buffer.concat([bytes, name === 'Content-Type' ? Buffer.from('{}') : Buffer.alloc(0)]))
    t.equal(res.status, status, name)
    t.equal(errorBodyProblem(res.status, res.body), undefined, `${name}: ${res.body}`)
  }
})

t.test('a path that is not valid percent-encoded UTF-8 is a 400 in the API\'s error shape, over the wire too', async (t) => {
  for (const path of ['/api/automation/workflows/%zz', '/api/automation/runs/%ED%A0%80', '/api/chat/conversations/%C0%AF/read', '/api/automation/webhook/%']) {
    const res = await exchange(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nConnection: close\r\n\r\n`)
    t.equal(res.status, 400, path)
    t.same(JSON.parse(res.body), {
      statusCode: 400,
      code: 'INVALID_URL',
      error: 'URL is not valid: malformed percent-encoding',
      message: 'URL is not valid: malformed percent-encoding'
    }, path)
  }
})

/** Whether a declared route with parameters takes `method` on `path`, as PATCH /workflows/:id takes PATCH /workflows/import. */
const takenByParamRoute = (method: string, path: string): boolean => operations.some((op) =>
  op.method === method && op.path !== path && op.path.includes(':') && new RegExp(`^${op.path.replace(/:[^/]+/g, '[^/]+')}$`).test(path))

t.test('undeclared methods answer 404 in the API\'s error shape; under /api/ and on /mcp without a token, 401', async (t) => {
  const declared = new Map<string, Set<string>>()
  for (const op of operations) declared.set(op.path, (declared.get(op.path) ?? new Set()).add(op.method))
  for (const [path, methods] of declared) {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => !methods.has(m) && !takenByParamRoute(m, path))) {
      for (const headers of [{ authorization }, {}]) {
        const res = await request({ method: method as 'GET', url: withSamePath(path), headers })
        const expected = (path.startsWith('/api/') || path === '/mcp') && headers.authorization === undefined ? 401 : 404
        t.equal(res.statusCode, expected, `${method} ${path}${headers.authorization === undefined ? ' without a token' : ''}`)
        t.equal(errorBodyProblem(res.statusCode, res.body), undefined, `${method} ${path}: ${res.body}`)
      }
    }
  }
})

t.test('an OPTIONS request that is not a complete CORS preflight is answered like one, not with a text/plain 400', async (t) => {
  for (const headers of [{}, { origin: 'https://app.example.com' }, { 'access-control-request-method': 'POST' }, { origin: '', 'access-control-request-method': '' }]) {
    const res = await request({ method: 'OPTIONS', url: '/api/automation/workflows', headers })
    t.equal(res.statusCode, 204, JSON.stringify(headers))
    t.equal(res.body, '')
  }
  const preflight = await request({ method: 'OPTIONS', url: '/api/automation/workflows', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' } })
  t.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.com')
})

t.test('unknown routes say the same thing in error and message', async (t) => {
  const res = await request({ method: 'GET', url: '/api/nope?x=1', headers: { authorization } })
  t.same(res.json(), { statusCode: 404, code: 'NOT_FOUND', error: 'Route GET /api/nope not found', message: 'Route GET /api/nope not found' })
})

t.test('numbers a query string cannot mean are refused, not sent to the database', async (t) => {
  const cases: Record<string, string> = {
    '/api/automation/workflows?limit=1e999': 'limit must be a finite number',
    '/api/automation/runs?limit=Infinity': 'limit must be a finite number',
    '/api/chat/accounts?offset=1e999': 'offset must be a finite number',
    '/api/users?offset=-Infinity': 'offset must be a finite number',
    '/api/chat/conversations?offset=1e20': 'offset must be <= 9007199254740991'
  }
  for (const [url, message] of Object.entries(cases)) {
    const res = await request({ method: 'GET', url, headers: { authorization } })
    t.equal(res.statusCode, 400, url)
    t.same(res.json(), { statusCode: 400, code: 'VALIDATION_ERROR', error: message, message }, url)
  }
  const largest = await request({ method: 'GET', url: `/api/automation/workflows?offset=${Number.MAX_SAFE_INTEGER}`, headers: { authorization } })
  t.equal(largest.statusCode, 200, 'the largest exact offset is a valid, empty page')
  t.same(largest.json(), [])
})

t.test('a chat delivery whose keys Postgres cannot store is kept with U+FFFD in them, not refused with 500', async (t) => {
  const delivery = messagesDelivery(DEFAULT_PHONE_NUMBER_ID, [{ from: '15557654321', text: 'hi' }])
  const payload = { ...delivery, '\udbff': { 'a\u0000b': 1 } }
  const { body, headers } = signedDelivery(payload, APP_SECRET)
  t.equal(signature(body, APP_SECRET), headers['x-hub-signature-256'])
  const res = await app.inject({ method: 'POST', url: '/webhook/chat', payload: body, headers })
  t.equal(res.statusCode, 200, res.body)
  const [stored] = await app.database.sql<Array<{ payload: Record<string, unknown> }>>`select payload from chat_deliveries order by created_at desc limit 1`
  t.same(stored?.payload['\ufffd'], { 'a\ufffdb': 1 })
})
