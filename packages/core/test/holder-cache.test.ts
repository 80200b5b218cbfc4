import t from 'tap'
import { createHolderCache, type TokenHolder } from '../src/users/holder-cache.ts'

const admin: TokenHolder = { role: 'admin', tokenVersion: 0, email: 'admin@example.com' }
const member: TokenHolder = { role: 'member', tokenVersion: 0, email: 'member@example.com' }

/** A loader whose answers the test releases by hand, counting the queries it was asked. */
function manualLoader () {
  const roles = new Map<string, TokenHolder>()
  const waiting: Array<() => void> = []
  const loader = {
    roles,
    queries: 0,
    load: async (userId: string): Promise<TokenHolder> => {
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
  loader.roles.set('a', admin)
  const cache = createHolderCache({ load: loader.load, ttlMs: 60_000, maxEntries: 10 })
  const answers = Array.from({ length: 20 }, () => cache.holderOf('a'))
  const gone = [cache.holderOf('gone'), cache.holderOf('gone')]
  await new Promise((resolve) => setImmediate(resolve))
  loader.release()
  t.same(await Promise.all(answers), Array(20).fill(admin))
  t.same(await Promise.all(gone), [null, null])
  t.equal(loader.queries, 2, 'one query per user')
  t.equal(await cache.holderOf('a'), admin)
  t.equal(await cache.holderOf('gone'), null)
  t.equal(loader.queries, 2, 'later requests are answered from the cache')
})

t.test('answers expire after the TTL', async (t) => {
  let queries = 0
  const cache = createHolderCache({ load: async () => { queries++; return member }, ttlMs: 30, maxEntries: 10 })
  await cache.holderOf('a')
  await cache.holderOf('a')
  t.equal(queries, 1)
  await new Promise((resolve) => setTimeout(resolve, 60))
  await cache.holderOf('a')
  t.equal(queries, 2)
})

t.test('the cache holds at most maxEntries users, forgetting the least recently used', async (t) => {
  const queried: string[] = []
  const cache = createHolderCache({ load: async (id) => { queried.push(id); return member }, ttlMs: 60_000, maxEntries: 2 })
  await cache.holderOf('a')
  await cache.holderOf('b')
  await cache.holderOf('a')
  await cache.holderOf('c')
  await cache.holderOf('a')
  await cache.holderOf('b')
  t.same(queried, ['a', 'b', 'c', 'b'], 'b, least recently used, made room for c')
})

t.test('a user forgotten while their role is being read is read again; waiting requests get the answer in flight', async (t) => {
  const loader = manualLoader()
  loader.roles.set('a', admin)
  const cache = createHolderCache({ load: loader.load, ttlMs: 60_000, maxEntries: 10 })
  const before = cache.holderOf('a')
  await new Promise((resolve) => setImmediate(resolve))
  loader.roles.set('a', member)
  cache.forget('a')
  loader.release()
  t.equal(await before, admin, 'a request that arrived before the change')
  const after = cache.holderOf('a')
  await new Promise((resolve) => setImmediate(resolve))
  loader.release()
  t.equal(await after, member, 'the stale answer was not cached')
  t.equal(loader.queries, 2)
})

t.test('forget and clear make the next request read the database', async (t) => {
  let role: TokenHolder = admin
  const cache = createHolderCache({ load: async () => role, ttlMs: 60_000, maxEntries: 10 })
  t.equal(await cache.holderOf('a'), admin)
  t.equal(await cache.holderOf('b'), admin)
  role = null
  t.equal(await cache.holderOf('a'), admin, 'cached until told')
  cache.forget('a')
  t.equal(await cache.holderOf('a'), null)
  t.equal(await cache.holderOf('b'), admin)
  cache.clear()
  t.equal(await cache.holderOf('b'), null)
})

t.test('a failed read is not cached', async (t) => {
  let fail = true
  const cache = createHolderCache({ load: async () => { if (fail) throw new Error('database down'); return member }, ttlMs: 60_000, maxEntries: 10 })
  await t.rejects(cache.holderOf('a'), /database down/)
  fail = false
  t.equal(await cache.holderOf('a'), member)
})

t.test('forgetWhere forgets the answers it picks (the API keys of a user who changed), and no others', async (t) => {
  const owners = new Map([['key-1', 'alice'], ['key-2', 'bob'], ['key-3', 'alice']])
  let queries = 0
  const cache = createHolderCache({ load: async (key) => { queries++; return { owner: owners.get(key)! } }, ttlMs: 60_000, maxEntries: 10 })
  for (const key of owners.keys()) await cache.holderOf(key)
  t.equal(queries, 3)
  cache.forgetWhere((holder) => holder.owner === 'alice')
  for (const key of owners.keys()) await cache.holderOf(key)
  t.equal(queries, 5, 'alice\'s two keys were read again, bob\'s was not')
})
