import t, { type Test } from 'tap'
import { createTestDatabase, uniqueQueuePrefix } from '@switchboard/testing/database'
import { deleteQueuePrefix } from '@switchboard/testing/redis'
import { testConfig, TEST_ADMIN } from '@switchboard/testing/config'
import { createTestClient, injectTransport, type TestUser } from '@switchboard/testing/client'
import { USER_CHANGES_CHANNEL } from '@switchboard/core/users'
import { buildServer } from '../../apps/api/src/build.ts'
import { ROLE_CACHE_TTL_MS } from '../../apps/api/src/plugins/auth.ts'

type FastifyInstance = Awaited<ReturnType<typeof buildServer>>

// Two api replicas on one database and one Redis, each with its own connections and caches.
const database = await createTestDatabase()
const config = testConfig(database.url, uniqueQueuePrefix(), {
  // The installation's default chat account, so that the chat inbox routes answer; it is never called.
  CHAT_API_URL: 'http://127.0.0.1:9/v21.0',
  CHAT_ACCESS_TOKEN: 'unused-token',
  CHAT_PHONE_NUMBER_ID: '106540352242922'
})
const replicas: FastifyInstance[] = []
for (let i = 0; i < 2; i++) {
  const replica = await buildServer({ config, logger: false })
  await replica.ready()
  replicas.push(replica)
}
t.teardown(async () => {
  for (const replica of replicas) await replica.close()
  await deleteQueuePrefix(config.queuePrefix)
  await database.drop()
})
const [one, two] = replicas

const unauthorizedBody = { statusCode: 401, code: 'UNAUTHORIZED', error: 'Unauthorized', message: 'Unauthorized' }

async function call (replica: FastifyInstance, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string, payload?: unknown) {
  return replica.inject({ method, url, payload: payload as Record<string, unknown>, headers: { authorization: `Bearer ${token}` } })
}

const client = createTestClient(injectTransport(one))
const adminA = await client.login(TEST_ADMIN)
let userCount = 0
const newUser = async (role: 'admin' | 'member'): Promise<TestUser> => client.newUser(adminA, { role })

/** One request of each kind of protected route, answered with the given token on the given replica. */
async function everyRouteKind (t: Test, replica: FastifyInstance, token: string): Promise<Record<string, number>> {
  const statuses: Record<string, number> = {}
  const routes: Array<[string, 'GET' | 'POST', string, unknown?]> = [
    ['workflows list', 'GET', '/api/automation/workflows'],
    ['runs list', 'GET', '/api/automation/runs'],
    ['chat accounts', 'GET', '/api/chat/accounts'],
    ['chat conversations', 'GET', '/api/chat/conversations'],
    ['create an admin', 'POST', '/api/users', { email: `made-${++userCount}@example.com`, password: 'user-password', role: 'admin' }]
  ]
  for (const [name, method, url, payload] of routes) {
    const res = await call(replica, method, url, token, payload)
    statuses[name] = res.statusCode
    if (res.statusCode === 401) t.same(res.json(), unauthorizedBody, `${name} answers the API's 401`)
  }
  return statuses
}

const allowed = { 'workflows list': 200, 'runs list': 200, 'chat accounts': 200, 'chat conversations': 200, 'create an admin': 201 }
const refused = { 'workflows list': 401, 'runs list': 401, 'chat accounts': 401, 'chat conversations': 401, 'create an admin': 401 }

/** Polls until the replica refuses the token, then returns when that happened. */
async function refusedAt (replica: FastifyInstance, token: string, deadline: number): Promise<number> {
  for (;;) {
    if ((await call(replica, 'GET', '/api/automation/workflows', token)).statusCode === 401) return Date.now()
    if (Date.now() > deadline) throw new Error('the token was still accepted at the deadline')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

t.test('a deleted admin\'s token stops working on every replica and every route at once', async (t) => {
  const b = await newUser('admin')
  t.same(await everyRouteKind(t, one, b.token), allowed, 'B\'s token works on replica one')
  // B's role is first read on replica two here: without the announcement of the deletion,
  // replica two would keep honouring the token until this answer expired.
  const firstReadOnTwo = Date.now()
  t.same(await everyRouteKind(t, two, b.token), allowed, 'B\'s token works on replica two')

  t.equal((await call(one, 'DELETE', `/api/users/${b.id}`, adminA)).statusCode, 204, 'A deletes B through replica one')
  const refused2 = await refusedAt(two, b.token, firstReadOnTwo + ROLE_CACHE_TTL_MS * 2)
  t.ok(refused2 < firstReadOnTwo + ROLE_CACHE_TTL_MS, 'replica two heard of the deletion before its cached answer expired')

  t.same(await everyRouteKind(t, two, b.token), refused, 'every route refuses B on replica two')
  t.same(await everyRouteKind(t, one, b.token), refused, 'every route refuses B on replica one, which deleted B')
  const list = await call(two, 'GET', '/api/users?limit=500', adminA)
  t.notOk(list.json().some((user: { id: string }) => user.id === b.id), 'B is gone')
})

t.test('a role changed by hand in SQL applies on every replica: at once when announced, else when the cached role expires', async (t) => {
  const announced = await newUser('admin')
  const unannounced = await newUser('admin')
  for (const replica of replicas) {
    for (const user of [announced, unannounced]) {
      t.equal((await call(replica, 'GET', '/api/users', user.token)).statusCode, 200, 'an admin lists users')
    }
  }
  const firstReadOnTwo = Date.now()
  await one.database.sql`update users set role = 'member' where id = ${announced.id}`
  await one.database.sql`select pg_notify(${USER_CHANGES_CHANNEL}, ${announced.id})`
  await one.database.sql`update users set role = 'member' where id = ${unannounced.id}`

  const demotedAt = async (replica: FastifyInstance, token: string, deadline: number): Promise<number> => {
    for (;;) {
      if ((await call(replica, 'GET', '/api/users', token)).statusCode === 403) return Date.now()
      if (Date.now() > deadline) throw new Error('the token kept admin powers at the deadline')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  t.ok(await demotedAt(two, announced.token, firstReadOnTwo + ROLE_CACHE_TTL_MS * 2) < firstReadOnTwo + ROLE_CACHE_TTL_MS,
    'an announced demotion applies before the cached role expires')
  await demotedAt(two, unannounced.token, Date.now() + ROLE_CACHE_TTL_MS + 3000)
  t.pass('an unannounced demotion applies once the cached role expires')

  for (const replica of replicas) {
    for (const user of [announced, unannounced]) {
      const create = await call(replica, 'POST', '/api/users', user.token, { email: `by-demoted-${++userCount}@example.com`, password: 'user-password', role: 'admin' })
      t.equal(create.statusCode, 403, 'a demoted admin cannot create users')
      t.equal((await call(replica, 'GET', '/api/automation/workflows', user.token)).statusCode, 200, 'the token still works as a member\'s')
    }
  }
})

t.test('the role in a token is not what authorizes: a member\'s token claiming admin gets 403', async (t) => {
  const member = await newUser('member')
  const claimsAdmin = one.jwt.sign({ sub: member.id, email: 'member@example.com', role: 'admin', ver: 0 })
  for (const replica of replicas) {
    t.equal((await call(replica, 'GET', '/api/users', claimsAdmin)).statusCode, 403)
    t.equal((await call(replica, 'GET', '/api/automation/workflows', claimsAdmin)).statusCode, 200)
  }
})

/** Polls until the replica answers `status` to the token on `url`, then returns when that happened. */
async function answeredAt (replica: FastifyInstance, url: string, token: string, status: number, deadline: number): Promise<number> {
  for (;;) {
    if ((await call(replica, 'GET', url, token)).statusCode === status) return Date.now()
    if (Date.now() > deadline) throw new Error(`${url} did not answer ${status} by the deadline`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

t.test('a password change ends every token issued before it, on every replica, before the cached answer expires', async (t) => {
  const user = await newUser('member')
  const otherSession = await client.login({ email: user.email, password: 'member-password' })
  t.same(await everyRouteKind(t, one, user.token), { ...allowed, 'create an admin': 403 }, 'the token works on replica one')
  const firstReadOnTwo = Date.now()
  for (const token of [user.token, otherSession]) t.equal((await call(two, 'GET', '/api/automation/workflows', token)).statusCode, 200, 'and on replica two')

  const changed = await call(one, 'POST', '/api/auth/password', user.token, { currentPassword: 'member-password', newPassword: 'changed-password' })
  t.equal(changed.statusCode, 200, 'the user changes their password through replica one')
  const refusedOnTwo = await refusedAt(two, otherSession, firstReadOnTwo + ROLE_CACHE_TTL_MS * 2)
  t.ok(refusedOnTwo < firstReadOnTwo + ROLE_CACHE_TTL_MS, 'replica two heard of the change before its cached answer expired')
  for (const replica of replicas) {
    for (const token of [user.token, otherSession]) t.same(await everyRouteKind(t, replica, token), refused, 'every route refuses a token issued before the change')
    t.equal((await call(replica, 'GET', '/api/automation/workflows', changed.json().token)).statusCode, 200, 'the token the change returned works')
  }
})

t.test('an admin\'s reset through one replica ends the user\'s tokens on the other before the cached answer expires', async (t) => {
  const user = await newUser('admin')
  t.equal((await call(two, 'GET', '/api/users', user.token)).statusCode, 200)
  const firstReadOnOne = Date.now()
  t.equal((await call(one, 'GET', '/api/users', user.token)).statusCode, 200)
  t.equal((await call(two, 'PATCH', `/api/users/${user.id}`, adminA, { password: 'reset-by-admin' })).statusCode, 200)
  t.ok(await refusedAt(one, user.token, firstReadOnOne + ROLE_CACHE_TTL_MS * 2) < firstReadOnOne + ROLE_CACHE_TTL_MS)
  const fresh = await client.login({ email: user.email, password: 'reset-by-admin' })
  for (const replica of replicas) t.equal((await call(replica, 'GET', '/api/users', fresh)).statusCode, 200, 'a login with the new password works everywhere')
})

t.test('a role changed through PATCH applies on every replica before the cached role expires', async (t) => {
  const user = await newUser('admin')
  t.equal((await call(one, 'GET', '/api/users', user.token)).statusCode, 200)
  const firstReadOnTwo = Date.now()
  t.equal((await call(two, 'GET', '/api/users', user.token)).statusCode, 200)
  t.equal((await call(one, 'PATCH', `/api/users/${user.id}`, adminA, { role: 'member' })).statusCode, 200)
  t.ok(await answeredAt(two, '/api/users', user.token, 403, firstReadOnTwo + ROLE_CACHE_TTL_MS * 2) < firstReadOnTwo + ROLE_CACHE_TTL_MS,
    'the demotion applies on replica two before its cached role expires')
  t.equal((await call(two, 'GET', '/api/automation/workflows', user.token)).statusCode, 200, 'the token still works as a member\'s')
  t.equal((await call(two, 'PATCH', `/api/users/${user.id}`, adminA, { role: 'admin' })).statusCode, 200)
  t.ok(await answeredAt(one, '/api/users', user.token, 200, Date.now() + ROLE_CACHE_TTL_MS) > 0, 'the promotion applies on replica one')
})

t.test('a password change no replica heard of: earlier tokens end when the cached answer expires, later ones work at once', async (t) => {
  const user = await newUser('member')
  for (const replica of replicas) t.equal((await call(replica, 'GET', '/api/automation/workflows', user.token)).statusCode, 200)
  // What a missed notification leaves: the version raised in the database, every replica's cache unaware.
  const [{ token_version: version }] = await one.database.sql<Array<{ token_version: number }>>`
    update users set token_version = token_version + 1 where id = ${user.id} returning token_version`
  const changedAt = Date.now()
  const later = one.jwt.sign({ sub: user.id, email: user.email, role: 'member', ver: version })
  t.equal((await call(one, 'GET', '/api/automation/workflows', later)).statusCode, 200, 'a token newer than the cached answer makes replica one read the user again')
  t.same(await everyRouteKind(t, one, user.token), refused, 'which then refuses the earlier token')
  await refusedAt(two, user.token, changedAt + ROLE_CACHE_TTL_MS + 3000)
  t.pass('replica two refuses the earlier token once its cached answer expires')
})
