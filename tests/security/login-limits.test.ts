import t from 'tap'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { freePort } from '@switchboard/testing/processes'
import { buildTestApp } from '../../apps/api/test/helper.ts'
import { LOGIN_LIMITS_PER_MINUTE, MAX_PASSWORD_CHECKS_IN_FLIGHT } from '../../apps/api/src/routes/api/auth/index.ts'

const { request } = await buildTestApp(t)

interface Attempt { status: number, ms: number, code?: string, retryAfter?: string }

/** One login attempt from `client`, a forwarded address the loopback peer vouches for (TRUST_PROXY default). */
async function attempt (client: string, email: string, password = 'guess-123'): Promise<Attempt> {
  const started = process.hrtime.bigint()
  const res = await request({ method: 'POST', url: '/api/auth/login', headers: { 'x-forwarded-for': client }, payload: { email, password } })
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  const retryAfter = res.headers['retry-after']
  return { status: res.statusCode, ms, code: res.json().code, retryAfter: retryAfter === undefined ? undefined : String(retryAfter) }
}

/** Passwords hashed so far (scrypt runs): attempts that reached the check, successful or not. */
async function passwordChecks (): Promise<number> {
  const metrics = (await request({ method: 'GET', url: '/metrics' })).body
  let total = 0
  for (const outcome of ['success', 'invalid']) {
    const match = new RegExp(`^login_attempts_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(metrics)
    total += Number(match?.[1] ?? 0)
  }
  return total
}

const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length

t.test('one address spraying a password over many accounts is refused after the per-address limit, without hashing', async (t) => {
  const checksBefore = await passwordChecks()
  const attempts: Attempt[] = []
  for (let i = 0; i < 40; i++) attempts.push(await attempt('198.51.100.7', `sprayed-${i}@example.com`))
  const allowed = attempts.slice(0, LOGIN_LIMITS_PER_MINUTE.address)
  const refused = attempts.slice(LOGIN_LIMITS_PER_MINUTE.address)
  t.same(allowed.map((a) => a.status), Array(allowed.length).fill(401))
  t.same(refused.map((a) => a.status), Array(refused.length).fill(429), 'refused after the per-address limit')
  t.ok(refused.every((a) => a.code === 'TOO_MANY_REQUESTS' && Number(a.retryAfter) > 0 && Number(a.retryAfter) <= 60), 'with Retry-After')
  t.equal(await passwordChecks() - checksBefore, allowed.length, 'refused attempts hash no password')
  // scrypt (N=16384) costs tens of milliseconds; a refusal is a few Redis round trips.
  t.ok(mean(refused.map((a) => a.ms)) < mean(allowed.map((a) => a.ms)) / 2,
    `refusals are fast (mean ${mean(refused.map((a) => a.ms)).toFixed(1)} ms against ${mean(allowed.map((a) => a.ms)).toFixed(1)} ms)`)

  t.equal((await attempt('198.51.100.8', 'sprayed-39@example.com')).status, 401, 'another address, and the accounts refused above, are not charged')
})

t.test('one account guessed from many addresses is refused after the per-email limit, even with the right password', async (t) => {
  const email = 'many-addresses@example.com'
  const statuses: number[] = []
  for (let i = 0; i < LOGIN_LIMITS_PER_MINUTE.email + 5; i++) statuses.push((await attempt(`203.0.113.${i + 1}`, email)).status)
  t.same(statuses.slice(0, LOGIN_LIMITS_PER_MINUTE.email), Array(LOGIN_LIMITS_PER_MINUTE.email).fill(401))
  t.same(statuses.slice(LOGIN_LIMITS_PER_MINUTE.email), Array(5).fill(429), 'refused after the per-email limit')
  t.equal((await attempt('203.0.113.200', email)).status, 429, 'from a fresh address too')
  t.equal((await attempt('203.0.113.1', 'another-account@example.com')).status, 401, 'the addresses may still try other accounts')

  // A right password must not get through either: a 200 among 429s would tell the guesser the password.
  for (let i = 0; i < LOGIN_LIMITS_PER_MINUTE.email; i++) await attempt(`192.0.2.${i + 1}`, TEST_ADMIN.email)
  const right = await attempt('192.0.2.250', TEST_ADMIN.email, TEST_ADMIN.password)
  t.equal(right.status, 429)
  t.equal(right.code, 'TOO_MANY_REQUESTS')
})

t.test('one address guessing one account is refused after the per-address-and-email limit', async (t) => {
  const statuses: number[] = []
  for (let i = 0; i < LOGIN_LIMITS_PER_MINUTE.addressAndEmail + 1; i++) statuses.push((await attempt('198.51.100.20', 'one-account@example.com')).status)
  t.same(statuses, [...Array(LOGIN_LIMITS_PER_MINUTE.addressAndEmail).fill(401), 429])
  t.equal((await attempt('198.51.100.21', 'one-account@example.com')).status, 401, 'the account\'s owner elsewhere can still sign in')
})

t.test('a flood of distinct valid-looking attempts is held to a bounded number of password checks at once', async (t) => {
  const checksBefore = await passwordChecks()
  const flood = await Promise.all(Array.from({ length: 80 }, async (_, i) => attempt(`10.20.${Math.floor(i / 200)}.${(i % 200) + 1}`, `flood-${i}@example.com`)))
  const busy = flood.filter((a) => a.status === 429)
  t.ok(busy.length > 0, `some attempts were refused (${busy.length} of ${flood.length})`)
  t.ok(busy.every((a) => a.code === 'LOGIN_BUSY' && a.retryAfter === '1'), 'as busy, with Retry-After: 1')
  const checked = flood.filter((a) => a.status === 401).length
  t.equal(checked + busy.length, flood.length, 'every other attempt was answered 401')
  t.ok(checked >= MAX_PASSWORD_CHECKS_IN_FLIGHT, 'at least a full set of checks ran')
  t.equal(await passwordChecks() - checksBefore, checked, 'a busy refusal hashes no password')

  const res = await request({ method: 'POST', url: '/api/auth/login', headers: { 'x-forwarded-for': '10.99.0.1' }, payload: { email: 'x@example.com', password: 'x' } })
  t.equal(res.statusCode, 401, 'once the flood has passed, attempts are checked again')
})

t.test('with Redis unreachable, logins are not limited rather than refused', async (t) => {
  const noRedis = await buildTestApp(t, { REDIS_URL: `redis://127.0.0.1:${await freePort()}` })
  const statuses: number[] = []
  for (let i = 0; i < LOGIN_LIMITS_PER_MINUTE.addressAndEmail + 2; i++) {
    statuses.push((await noRedis.request({ method: 'POST', url: '/api/auth/login', payload: { email: TEST_ADMIN.email, password: 'wrong' } })).statusCode)
  }
  t.same(statuses, Array(statuses.length).fill(401))
  const right = await noRedis.request({ method: 'POST', url: '/api/auth/login', payload: TEST_ADMIN })
  t.equal(right.statusCode, 200)
})
