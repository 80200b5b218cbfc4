import t from 'tap'
import { createSigner } from 'fast-jwt'
import { TEST_ADMIN, TEST_JWT_SECRET } from '@switchboard/testing/config'
import { buildTestApp } from './helper.ts'

const { request, adminToken, newMember, scrape } = await buildTestApp(t)

const unauthorizedBody = { statusCode: 401, code: 'UNAUTHORIZED', error: 'Unauthorized', message: 'Unauthorized' }

t.test('login returns a 24-hour HS256 token and the user', async (t) => {
  const res = await request({ method: 'POST', url: '/api/auth/login', payload: { email: TEST_ADMIN.email, password: TEST_ADMIN.password } })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.match(body.user, { email: TEST_ADMIN.email, role: 'admin', id: String })
  const [header, payload] = body.token.split('.').slice(0, 2).map((part: string) => JSON.parse(Buffer.from(part, 'base64url').toString()))
  t.equal(header.alg, 'HS256')
  t.equal(payload.exp - payload.iat, 86400)
  t.equal(payload.sub, body.user.id)
  t.equal(payload.role, 'admin')
})

t.test('login failures', async (t) => {
  const wrong = await request({ method: 'POST', url: '/api/auth/login', payload: { email: TEST_ADMIN.email, password: 'nope' } })
  t.equal(wrong.statusCode, 401)
  t.same(wrong.json(), { statusCode: 401, code: 'INVALID_CREDENTIALS', error: 'Invalid email or password', message: 'Invalid email or password' })

  const unknown = await request({ method: 'POST', url: '/api/auth/login', payload: { email: 'ghost@example.com', password: 'x' } })
  t.equal(unknown.statusCode, 401)
  t.equal(unknown.json().message, 'Invalid email or password')

  const missing = await request({ method: 'POST', url: '/api/auth/login', payload: { email: TEST_ADMIN.email } })
  t.equal(missing.statusCode, 400)
  t.equal(missing.json().message, 'email and password are required')
})

t.test('login is rate limited per address and account', async (t) => {
  const email = 'limited@example.com'
  const statuses: number[] = []
  for (let i = 0; i < 11; i++) {
    statuses.push((await request({ method: 'POST', url: '/api/auth/login', payload: { email, password: 'x' } })).statusCode)
  }
  t.same(statuses.slice(0, 10), Array(10).fill(401))
  t.equal(statuses[10], 429)
})

t.test('by default no peer is a trusted proxy: forged X-Forwarded-For counts as the peer, from a private address too', async (t) => {
  // A private peer may be any container or pod beside the api (docs/decisions.md, "Login floods, the metrics port and /docs").
  for (const remoteAddress of ['203.0.113.7', '10.1.2.3']) {
    const email = `forged-forwarding-${remoteAddress}@example.com`
    const statuses: number[] = []
    for (let i = 0; i < 11; i++) {
      statuses.push((await request({
        method: 'POST', url: '/api/auth/login', remoteAddress, headers: { 'x-forwarded-for': `198.51.100.${i}` }, payload: { email, password: 'x' }
      })).statusCode)
    }
    t.same(statuses, [...Array(10).fill(401), 429], `from ${remoteAddress}: the forged addresses all count as the one peer`)
  }
})

t.test('TRUST_PROXY names the proxies whose X-Forwarded-For is honoured', async (t) => {
  const proxied = await buildTestApp(t, { TRUST_PROXY: '203.0.113.7' })
  const email = 'configured-proxy@example.com'
  const login = async (remoteAddress: string, client: string): Promise<number> => (await proxied.request({
    method: 'POST', url: '/api/auth/login', remoteAddress, headers: { 'x-forwarded-for': client }, payload: { email, password: 'x' }
  })).statusCode

  const statuses: number[] = []
  for (let i = 0; i < 11; i++) statuses.push(await login('203.0.113.7', '198.51.100.1'))
  t.equal(statuses[10], 429, 'one client behind the configured proxy is limited')
  t.equal(await login('203.0.113.7', '198.51.100.2'), 401, 'another client behind it has its own limit')

  const viaPrivate: number[] = []
  for (let i = 0; i < 11; i++) viaPrivate.push(await login('10.1.2.3', `198.51.100.${100 + i}`))
  t.equal(viaPrivate[10], 429, 'a private peer that is not named is not trusted: its forwarded clients count as one')
})

t.test('protected routes refuse bad tokens with 401 Unauthorized', async (t) => {
  const now = Math.floor(Date.now() / 1000)
  const claims = { sub: 'x', email: 'x@example.com', role: 'admin' }
  const signed = createSigner({ key: TEST_JWT_SECRET, algorithm: 'HS256' })
  const cases: Record<string, string | undefined> = {
    missing: undefined,
    garbage: 'not-a-token',
    expired: signed({ ...claims, iat: now - 90000, exp: now - 3600 }),
    'wrongly signed': createSigner({ key: 'another-secret-that-is-long-enough-000', algorithm: 'HS256' })(claims),
    'alg none': `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify({ ...claims, iat: now, exp: now + 3600 })).toString('base64url')}.`,
    HS512: createSigner({ key: TEST_JWT_SECRET, algorithm: 'HS512' })(claims)
  }
  for (const [name, token] of Object.entries(cases)) {
    for (const url of ['/api/automation/queues', '/api/users']) {
      const res = await request({ method: 'GET', url, token })
      t.equal(res.statusCode, 401, `${name} token on ${url}`)
      t.same(res.json(), unauthorizedBody, `${name} token body`)
    }
  }
  const valid = await request({ method: 'GET', url: '/api/users', token: adminToken })
  t.equal(valid.statusCode, 200)
})

t.test('a percent-encoded path reaches its route only with a token', async (t) => {
  for (const url of ['/%61pi/automation/queues', '/ap%69/users', '/%61pi/chat/accounts']) {
    const res = await request({ method: 'GET', url })
    t.equal(res.statusCode, 401, url)
    t.same(res.json(), unauthorizedBody, url)
  }
  const res = await request({ method: 'GET', url: '/%61pi/automation/queues', token: adminToken })
  t.equal(res.statusCode, 200, 'the same route with a token')
})

t.test('public routes stay public', async (t) => {
  t.equal((await request({ method: 'GET', url: '/health/live' })).statusCode, 200)
  const ready = await request({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 200)
  t.match(ready.json(), { status: 'ok', checks: { database: 'ok', redis: 'ok' } })
  t.equal((await request({ method: 'GET', url: '/docs/json' })).statusCode, 200)
  t.not((await request({ method: 'POST', url: '/api/auth/login', payload: {} })).statusCode, 401)
})

t.test('unknown routes answer 404 in the API\'s error shape', async (t) => {
  const res = await request({ method: 'GET', url: '/nope' })
  t.equal(res.statusCode, 404)
  t.match(res.json(), { statusCode: 404, code: 'NOT_FOUND', error: String, message: String })
})

t.test('user management is admin-only', async (t) => {
  const member = await newMember()
  for (const [method, url] of [['GET', '/api/users'], ['POST', '/api/users'], ['PATCH', `/api/users/${member.id}`], ['DELETE', `/api/users/${member.id}`]] as const) {
    const payload = method === 'POST' ? { email: 'a@example.com', password: 'password1' } : method === 'PATCH' ? { role: 'admin' } : undefined
    const res = await request({ method, url, token: member.token, payload })
    t.equal(res.statusCode, 403, `${method} ${url}`)
    t.same(res.json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: 'Forbidden' })
  }

  const created = await request({ method: 'POST', url: '/api/users', token: adminToken, payload: { email: 'New@Example.com', password: 'password1', role: 'admin', id: 'mine' } })
  t.equal(created.statusCode, 201)
  t.match(created.json(), { email: 'new@example.com', role: 'admin' })
  t.not(created.json().id, 'mine')
  t.notOk('passwordHash' in created.json())

  const duplicate = await request({ method: 'POST', url: '/api/users', token: adminToken, payload: { email: 'new@example.com', password: 'password1' } })
  t.equal(duplicate.statusCode, 409)
  t.equal(duplicate.json().message, 'Email already registered')

  const badRole = await request({ method: 'POST', url: '/api/users', token: adminToken, payload: { email: 'r@example.com', password: 'password1', role: 'root' } })
  t.equal(badRole.statusCode, 400)

  const list = await request({ method: 'GET', url: '/api/users', token: adminToken })
  t.ok(list.json().some((u: { email: string }) => u.email === 'new@example.com'))

  const deleted = await request({ method: 'DELETE', url: `/api/users/${created.json().id}`, token: adminToken })
  t.equal(deleted.statusCode, 204)
  t.equal((await request({ method: 'DELETE', url: `/api/users/${created.json().id}`, token: adminToken })).statusCode, 404)
})

t.test('the user list pages with limit and offset', async (t) => {
  for (let i = 0; i < 3; i++) await newMember()
  const all = (await request({ method: 'GET', url: '/api/users?limit=500', token: adminToken })).json()
  t.ok(all.length >= 4)
  const page = await request({ method: 'GET', url: '/api/users?limit=2&offset=1', token: adminToken })
  t.equal(page.statusCode, 200)
  t.same(page.json().map((u: { id: string }) => u.id), all.slice(1, 3).map((u: { id: string }) => u.id))
  const tooMany = await request({ method: 'GET', url: '/api/users?limit=501', token: adminToken })
  t.equal(tooMany.statusCode, 400)
  t.equal(tooMany.json().message, 'limit must be <= 500')
})

t.test('metrics are exposed for Prometheus on their own listener', async (t) => {
  await request({ method: 'GET', url: '/health/live' })
  const text = await scrape()
  t.match(text, /http_request_duration_seconds_count\{method="GET",route="\/health\/live",status_code="200"\} \d+/)
  t.match(text, /process_cpu_user_seconds_total/)
  t.equal((await request({ method: 'GET', url: '/metrics' })).statusCode, 404, 'not on the public port')
})
