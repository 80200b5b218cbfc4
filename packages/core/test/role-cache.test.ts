import t from 'tap'
import { createRoleCache, type CurrentRole } from '../src/users/role-cache.ts'

/** A loader whose answers the test releases by hand, counting the queries it was asked. */
function manualLoader () {
  const roles = new Map<string, CurrentRole>()
  const waiting: Array<() => void> = []
  const loader = {
    roles,
    queries: 0,
    load: async (userId: string): Promise<CurrentRole> => {
      loader.queries++
      // Like a query, it reads the state of the moment it runs.
      const role = roles.get(userId) ?? null
      await new Promise<void>((resolve) => waiting.push(resolve))
      return role
    },
    release: () => { for (const resolve of waiting.splice(0)) resolve() }
  }
  return loader
}

t.test('concurrent misses for one user share one query; answers are cached, deleted users included', async (t) => {
  const loader = manualLoader()
  loader.roles.set('a', 'admin')
  const cache = createRoleCache({ load: loader.load, ttlMs: 60_000, maxEntries: 10 })
  const answers = Array.from({ length: 20 }, () => cache.roleOf('a'))
  const gone = [cache.roleOf('gone'), cache.roleOf('gone')]
  await new Promise((resolve) => setImmediate(resolve))
  loader.release()
  t.same(await Promise.all(answers), Array(20).fill('admin'))
  t.same(await Promise.all(gone), [null, null])
  t.equal(loader.queries, 2, 'one query per user')
  t.equal(await cache.roleOf('a'), 'admin')
  t.equal(await cache.roleOf('gone'), null)
  t.equal(loader.queries, 2, 'later requests are answered from the cache')
})

t.test('answers expire after the TTL', async (t) => {
  let queries = 0
  const cache = createRoleCache({ load: async () => { queries++; return 'member' }, ttlMs: 30, maxEntries: 10 })
  await cache.roleOf('a')
  await cache.roleOf('a')
  t.equal(queries, 1)
  await new Promise((resolve) => setTimeout(resolve, 60))
  await cache.roleOf('a')
  t.equal(queries, 2)
})

t.test('the cache holds at most maxEntries users, forgetting the least recently used', async (t) => {
  const queried: string[] = []
  const cache = createRoleCache({ load: async (id) => { queried.push(id); return 'member' }, ttlMs: 60_000, maxEntries: 2 })
  await cache.roleOf('a')
  await cache.roleOf('b')
  await cache.roleOf('a')
  await cache.roleOf('c')
  await cache.roleOf('a')
  await cache.roleOf('b')
  t.same(queried, ['a', 'b', 'c', 'b'], 'b, least recently used, made room for c')
})

t.test('a user forgotten while their role is being read is read again; waiting requests get the answer in flight', async (t) => {
  const loader = manualLoader()
  loader.roles.set('a', 'admin')
  const cache = createRoleCache({ load: loader.load, ttlMs: 60_000, maxEntries: 10 })
  const before = cache.roleOf('a')
  await new Promise((resolve) => setImmediate(resolve))
  loader.roles.set('a', 'member')
  cache.forget('a')
  loader.release()
  t.equal(await before, 'admin', 'a request that arrived before the change')
  const after = cache.roleOf('a')
  await new Promise((resolve) => setImmediate(resolve))
  loader.release()
  t.equal(await after, 'member', 'the stale answer was not cached')
  t.equal(loader.queries, 2)
})

t.test('forget and clear make the next request read the database', async (t) => {
  let role: CurrentRole = 'admin'
  const cache = createRoleCache({ load: async () => role, ttlMs: 60_000, maxEntries: 10 })
  t.equal(await cache.roleOf('a'), 'admin')
  t.equal(await cache.roleOf('b'), 'admin')
  role = null
  t.equal(await cache.roleOf('a'), 'admin', 'cached until told')
  cache.forget('a')
  t.equal(await cache.roleOf('a'), null)
  t.equal(await cache.roleOf('b'), 'admin')
  cache.clear()
  t.equal(await cache.roleOf('b'), null)
})

t.test('a failed read is not cached', async (t) => {
  let fail = true
  const cache = createRoleCache({ load: async () => { if (fail) throw new Error('database down'); return 'member' }, ttlMs: 60_000, maxEntries: 10 })
  await t.rejects(cache.roleOf('a'), /database down/)
  fail = false
  t.equal(await cache.roleOf('a'), 'member')
})
