/**
 * The login limits through the front door (an api process, over HTTP): per address, per email
 * from addresses the account does not know, per address and email, the bound on password checks
 * in flight, and the flood that used to lock an account's owner out (issue 23, item 6). The test
 * is the proxy: TRUST_PROXY=loopback, and each attempt names its client in X-Forwarded-For.
 */
import t from 'tap'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { freePort, startStack } from '@switchboard/testing/processes'
import { LOGIN_LIMITS_PER_MINUTE, MAX_PASSWORD_CHECKS_IN_FLIGHT } from '../../apps/api/src/routes/api/auth/index.ts'

const stack = await startStack(t, { workers: 0, env: { TRUST_PROXY: 'loopback' } })
const adminToken = await stack.adminToken()

interface Attempt { status: number, ms: number, code?: string, retryAfter?: string }

/** One login attempt from `client`, a forwarded address the loopback peer vouches for. */
async function attempt (client: string, email: string, password = 'guess-123'): Promise<Attempt> {
  const started = performance.now()
  const res = await stack.call('POST', '/api/auth/login', { headers: { 'x-forwarded-for': client }, body: { email, password } })
  return { status: res.status, ms: performance.now() - started, code: res.body.code, retryAfter: res.headers.get('retry-after') ?? undefined }
}

/** Passwords hashed so far (scrypt runs): attempts that reached the check, successful or not. */
async function passwordChecks (): Promise<number> {
  const metrics = await (await fetch(`${stack.metricsUrl}/metrics`)).text()
  let total = 0
  for (const outcome of ['success', 'invalid']) {
    const match = new RegExp(`^login_attempts_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(metrics)
    total += Number(match?.[1] ?? 0)
  }
  return total
}

/** A member with a password, who has not signed in yet. */
async function newAccount (name: string): Promise<{ email: string, password: string }> {
  const account = { email: `${name}@example.com`, password: `${name}-password` }
  const res = await stack.call('POST', '/api/users', { token: adminToken, body: account })
  if (res.status !== 201) throw new Error(`create ${name}: ${res.status} ${JSON.stringify(res.body)}`)
  return account
}

const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length

t.test('a flood of wrong passwords for one email from many addresses does not lock its owner out on a known address', async (t) => {
  const owner = await newAccount('flooded-owner')
  const home = '192.0.2.10'
  t.equal((await attempt(home, owner.email, owner.password)).status, 200, 'the owner signs in from home: the address is now known to the account')

  // The measured attack: 20 wrong passwords from 20 addresses, then more from others.
  const flood: number[] = []
  for (let i = 1; i <= LOGIN_LIMITS_PER_MINUTE.email + 5; i++) flood.push((await attempt(`203.0.113.${i}`, owner.email)).status)
  // The owner's first sign-in came from an address the account did not know yet: it counted too.
  t.same(flood, [...Array(LOGIN_LIMITS_PER_MINUTE.email - 1).fill(401), ...Array(6).fill(429)], 'new addresses are refused after the per-email limit')

  const fromHome = await attempt(home, owner.email, owner.password)
  t.equal(fromHome.status, 200, 'the owner still signs in from the known address (429 for 60 s before)')

  const fromNewAddress = await attempt('192.0.2.99', owner.email, owner.password)
  t.same([fromNewAddress.status, fromNewAddress.code], [429, 'TOO_MANY_REQUESTS'],
    'from an address the account does not know, the owner waits for the window like the flood (a 200 among 429s would confirm a guess)')
  t.ok(Number(fromNewAddress.retryAfter) > 0 && Number(fromNewAddress.retryAfter) <= 60, `with Retry-After ${fromNewAddress.retryAfter}`)

  // A known address is still bounded per address and email: it does not unlock guessing.
  const signIns = 2
  const guesses: number[] = []
  for (let i = 0; i <= LOGIN_LIMITS_PER_MINUTE.addressAndEmail - signIns; i++) guesses.push((await attempt(home, owner.email)).status)
  t.same(guesses, [...Array(LOGIN_LIMITS_PER_MINUTE.addressAndEmail - signIns).fill(401), 429],
    'guesses from the known address count with its sign-ins against the per-address-and-email limit')
})

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

t.test('one account guessed from many addresses it does not know is refused after the per-email limit, even with the right password', async (t) => {
  const email = 'many-addresses@example.com'
  const statuses: number[] = []
  for (let i = 0; i < LOGIN_LIMITS_PER_MINUTE.email + 5; i++) statuses.push((await attempt(`203.0.113.${i + 100}`, email)).status)
  t.same(statuses.slice(0, LOGIN_LIMITS_PER_MINUTE.email), Array(LOGIN_LIMITS_PER_MINUTE.email).fill(401))
  t.same(statuses.slice(LOGIN_LIMITS_PER_MINUTE.email), Array(5).fill(429), 'refused after the per-email limit')
  t.equal((await attempt('203.0.113.200', email)).status, 429, 'from a fresh address too')
  t.equal((await attempt('203.0.113.100', 'another-account@example.com')).status, 401, 'the addresses may still try other accounts')

  // Nobody signed in to the admin from 192.0.2.x: a right password from there waits like a guess.
  for (let i = 0; i < LOGIN_LIMITS_PER_MINUTE.email; i++) await attempt(`192.0.2.${i + 1}`, TEST_ADMIN.email)
  const right = await attempt('192.0.2.250', TEST_ADMIN.email, TEST_ADMIN.password)
  t.same([right.status, right.code], [429, 'TOO_MANY_REQUESTS'])
})

t.test('one address guessing one account is refused after the per-address-and-email limit', async (t) => {
  const statuses: number[] = []
  for (let i = 0; i < LOGIN_LIMITS_PER_MINUTE.addressAndEmail + 1; i++) statuses.push((await attempt('198.51.100.20', 'one-account@example.com')).status)
  t.same(statuses, [...Array(LOGIN_LIMITS_PER_MINUTE.addressAndEmail).fill(401), 429])
  t.equal((await attempt('198.51.100.21', 'one-account@example.com')).status, 401, 'the account\'s owner elsewhere can still sign in')
})

t.test('a flood of distinct valid-looking attempts is held to a bounded number of password checks at once', async (t) => {
  const checksBefore = await passwordChecks()
  const flood = await Promise.all(Array.from({ length: 80 }, async (_, i) => attempt(`10.20.0.${i + 1}`, `flood-${i}@example.com`)))
  const busy = flood.filter((a) => a.status === 429)
  t.ok(busy.length > 0, `some attempts were refused (${busy.length} of ${flood.length})`)
  t.ok(busy.every((a) => a.code === 'LOGIN_BUSY' && a.retryAfter === '1'), 'as busy, with Retry-After: 1')
  const checked = flood.filter((a) => a.status === 401).length
  t.equal(checked + busy.length, flood.length, 'every other attempt was answered 401')
  t.ok(checked >= MAX_PASSWORD_CHECKS_IN_FLIGHT, 'at least a full set of checks ran')
  t.equal(await passwordChecks() - checksBefore, checked, 'a busy refusal hashes no password')

  t.equal((await attempt('10.99.0.1', 'x@example.com', 'x')).status, 401, 'once the flood has passed, attempts are checked again')
})

t.test('with Redis unreachable, logins are not limited rather than refused', async (t) => {
  const noRedis = await startStack(t, { workers: 0, redisUrl: `redis://127.0.0.1:${await freePort()}` })
  const statuses: number[] = []
  for (let i = 0; i < LOGIN_LIMITS_PER_MINUTE.addressAndEmail + 2; i++) {
    statuses.push((await noRedis.call('POST', '/api/auth/login', { body: { email: TEST_ADMIN.email, password: 'wrong' } })).status)
  }
  t.same(statuses, Array(statuses.length).fill(401))
  t.equal((await noRedis.call('POST', '/api/auth/login', { body: TEST_ADMIN })).status, 200, 'and the sign-in is not held up by the known addresses')
})
