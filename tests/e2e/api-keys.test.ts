import t from 'tap'
import { createTestClient, httpTransport } from '@switchboard/testing/client'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

// Two api replicas: a revocation made on one must reach the other's cache.
const stack = await startStack(t, { apis: 2 })
const admin = await stack.adminToken()
const { client, call } = stack
const second = createTestClient(httpTransport(stack.apis[1]!.baseUrl))

interface CreatedKey { id: string, key: string, hint: string, scopes: string[], workflowIds: string[] | null, lastUsedAt: string | null }

async function createKey (token: string, body: Record<string, unknown>): Promise<CreatedKey> {
  const res = await call('POST', '/api/auth/api-keys', { token, body: { name: 'test key', ...body } })
  if (res.status !== 201) throw new Error(`create key: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as CreatedKey
}

t.test('a key is shown once, stored as a hash, listed without its secret', async (t) => {
  const created = await createKey(admin, { scopes: ['workflows:read'] })
  t.match(created.key, /^sbk_[A-Za-z0-9_-]{43}$/)
  t.equal(created.hint, created.key.slice(0, 10))
  const list = await call('GET', '/api/auth/api-keys', { token: admin })
  t.equal(list.status, 200)
  const listed = list.body.find((key: { id: string }) => key.id === created.id)
  t.ok(listed)
  t.notOk(JSON.stringify(list.body).includes(created.key), 'no secret in the list')
  t.notOk('key' in listed)
  t.notOk('secretHash' in listed)
  const read = await call('GET', '/api/automation/workflows', { token: created.key })
  t.equal(read.status, 200, 'the key authenticates')
})

t.test('a key acts as its owner within its scopes and its workflows', async (t) => {
  const member = await client.newUser(admin)
  const a = await client.createWorkflow(member.token, { name: 'A', triggerType: 'MANUAL' })
  const b = await client.createWorkflow(member.token, { name: 'B', triggerType: 'MANUAL' })
  const others = await client.createWorkflow(admin, { name: 'not the member\'s', triggerType: 'MANUAL' })
  const key = await createKey(member.token, { scopes: ['runs:write', 'runs:read', 'workflows:read'], workflowIds: [a] })

  const fired = await call('POST', `/api/automation/workflows/${a}/fire`, { token: key.key, body: { n: 1 } })
  t.equal(fired.status, 202, 'fires the workflow it is limited to')
  const firedB = await call('POST', `/api/automation/workflows/${b}/fire`, { token: key.key, body: {} })
  t.equal(firedB.status, 404, 'another workflow of its owner is not found')
  t.equal((await call('POST', `/api/automation/workflows/${others}/fire`, { token: key.key, body: {} })).status, 404, 'another user\'s workflow is not found')
  const runOfB = await client.fire(member.token, b)
  t.equal((await call('GET', `/api/automation/runs/${runOfB}`, { token: key.key })).status, 404, 'a run of another workflow is not found')
  t.equal((await call('GET', `/api/automation/runs/${fired.body.runId}`, { token: key.key })).status, 200)

  const workflows = await call('GET', '/api/automation/workflows', { token: key.key })
  t.same(workflows.body.map((w: { id: string }) => w.id), [a], 'lists only its workflows')
  const runs = await call('GET', '/api/automation/runs', { token: key.key })
  t.ok(runs.body.length > 0)
  t.ok(runs.body.every((run: { workflowId: string }) => run.workflowId === a), 'lists only its workflows\' runs')

  const users = await call('GET', '/api/users', { token: key.key })
  t.equal(users.status, 403)
  t.same(users.body, { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: 'Forbidden' }, 'names nothing')
  t.equal((await call('PATCH', `/api/automation/workflows/${a}`, { token: key.key, body: { name: 'renamed' } })).status, 403, 'workflows:write is missing')
  t.equal((await call('GET', '/api/automation/credentials', { token: key.key })).status, 403)
  t.equal((await call('GET', '/api/chat/conversations', { token: key.key })).status, 403)
  t.equal((await call('GET', '/api/automation/queues', { token: key.key })).status, 403)
})

t.test('keys never manage keys or passwords; admin scopes need an admin', async (t) => {
  const member = await client.newUser(admin)
  const everything = await createKey(member.token, { scopes: ['workflows:read', 'workflows:write', 'runs:read', 'runs:write', 'events:write', 'queues:read', 'credentials:read', 'credentials:write', 'chat:read', 'chat:write', 'subscriptions:write'] })
  t.equal((await call('POST', '/api/auth/api-keys', { token: everything.key, body: { name: 'more', scopes: ['runs:read'] } })).status, 403, 'no key makes another')
  t.equal((await call('GET', '/api/auth/api-keys', { token: everything.key })).status, 403)
  t.equal((await call('POST', '/api/auth/password', { token: everything.key, body: { currentPassword: 'x', newPassword: 'long enough password' } })).status, 403)

  const refused = await call('POST', '/api/auth/api-keys', { token: member.token, body: { name: 'admin', scopes: ['users:admin'] } })
  t.equal(refused.status, 403, 'a member cannot hold admin scopes')
  const adminKey = await createKey(admin, { scopes: ['users:admin', 'audit:read'] })
  t.equal((await call('GET', '/api/users', { token: adminKey.key })).status, 200, 'an admin\'s key may')

  const unknown = await call('POST', '/api/auth/api-keys', { token: member.token, body: { name: 'x', scopes: ['runs:fire'] } })
  t.equal(unknown.status, 400)
  t.match(unknown.body.message, /must be one of workflows:read/)
  const notTheirs = await call('POST', '/api/auth/api-keys', { token: member.token, body: { name: 'x', scopes: ['runs:write'], workflowIds: [await client.createWorkflow(admin, { triggerType: 'MANUAL' })] } })
  t.equal(notTheirs.status, 400, 'a key cannot be limited to another user\'s workflow')
  const past = await call('POST', '/api/auth/api-keys', { token: member.token, body: { name: 'x', scopes: ['runs:read'], expiresAt: new Date(Date.now() - 1000).toISOString() } })
  t.equal(past.status, 400)
  t.equal(past.body.message, 'expiresAt must be in the future')
})

t.test('revocation reaches every replica within the bound; so do expiry and the owner\'s deletion', async (t) => {
  const member = await client.newUser(admin)
  const key = await createKey(member.token, { scopes: ['workflows:read'] })
  // Both replicas have the key cached.
  t.equal((await call('GET', '/api/automation/workflows', { token: key.key })).status, 200)
  t.equal((await second.call('GET', '/api/automation/workflows', { token: key.key })).status, 200)

  const revokedAt = Date.now()
  t.equal((await call('DELETE', `/api/auth/api-keys/${key.id}`, { token: member.token })).status, 204)
  t.equal((await call('GET', '/api/automation/workflows', { token: key.key })).status, 401, 'refused at once where it was revoked')
  await waitFor(async () => (await second.call('GET', '/api/automation/workflows', { token: key.key })).status === 401 ? true : undefined,
    { what: 'the other replica to refuse the key', timeoutMs: 2000, intervalMs: 20 })
  t.ok(Date.now() - revokedAt < 2000, `the other replica refused it after ${Date.now() - revokedAt} ms`)
  t.equal((await call('DELETE', `/api/auth/api-keys/${key.id}`, { token: member.token })).status, 404, 'revoked once')
  const listed = (await call('GET', '/api/auth/api-keys', { token: member.token })).body.find((k: { id: string }) => k.id === key.id)
  t.ok(listed.revokedAt, 'listed as revoked')

  const expiring = await createKey(member.token, { scopes: ['workflows:read'], expiresAt: new Date(Date.now() + 1500).toISOString() })
  t.equal((await second.call('GET', '/api/automation/workflows', { token: expiring.key })).status, 200)
  await waitFor(async () => (await second.call('GET', '/api/automation/workflows', { token: expiring.key })).status === 401 ? true : undefined,
    { what: 'the expired key to be refused', timeoutMs: 4000, intervalMs: 50 })

  const doomed = await client.newUser(admin)
  const orphan = await createKey(doomed.token, { scopes: ['workflows:read'] })
  t.equal((await second.call('GET', '/api/automation/workflows', { token: orphan.key })).status, 200)
  t.equal((await call('DELETE', `/api/users/${doomed.id}`, { token: admin })).status, 204)
  await waitFor(async () => (await second.call('GET', '/api/automation/workflows', { token: orphan.key })).status === 401 ? true : undefined,
    { what: 'the deleted owner\'s key to be refused', timeoutMs: 2000, intervalMs: 20 })

  const other = await client.newUser(admin)
  const othersKey = await createKey(other.token, { scopes: ['workflows:read'] })
  t.equal((await call('DELETE', `/api/auth/api-keys/${othersKey.id}`, { token: member.token })).status, 404, 'another user\'s key is not found')
  t.equal((await call('DELETE', `/api/auth/api-keys/${othersKey.id}`, { token: admin })).status, 204, 'an admin revokes anyone\'s')
})

t.test('lastUsedAt is kept without a write per request', async (t) => {
  const member = await client.newUser(admin)
  const key = await createKey(member.token, { scopes: ['workflows:read'] })
  t.equal(key.lastUsedAt, null)
  const before = Date.now()
  for (let i = 0; i < 5; i++) t.equal((await call('GET', '/api/automation/workflows', { token: key.key })).status, 200)
  const listed = await waitFor(async () => {
    const found = (await call('GET', '/api/auth/api-keys', { token: member.token })).body.find((k: { id: string }) => k.id === key.id)
    return found.lastUsedAt === null ? undefined : found
  }, { what: 'lastUsedAt to be written', timeoutMs: 15_000, intervalMs: 500 })
  t.ok(Date.parse(listed.lastUsedAt) >= before - 1000)

  // The audit log: made and first used, once each, by whom and with which request; no secret.
  const audit = async (action: string) => (await call('GET', `/api/audit?action=${action}&targetId=${key.id}`, { token: admin })).body
  const [created] = await audit('api_key.created')
  t.match(created, { actor: { type: 'user', id: member.id }, target: { type: 'api_key', id: key.id }, details: { name: 'test key', scopes: ['workflows:read'] } })
  const firstUses = await audit('api_key.first_used')
  t.equal(firstUses.length, 1, 'the first use, once')
  t.match(firstUses[0], { actor: { type: 'api_key', id: member.id, apiKeyId: key.id }, clientAddress: '127.0.0.1' })
  t.equal((await call('GET', '/api/automation/workflows', { token: key.key })).status, 200)
  t.equal((await call('DELETE', `/api/auth/api-keys/${key.id}`, { token: member.token })).status, 204)
  const [revoked] = await audit('api_key.revoked')
  t.match(revoked, { actor: { type: 'user', id: member.id }, target: { id: key.id } })
  const everything = JSON.stringify((await call('GET', '/api/audit?limit=500', { token: admin })).body)
  t.notOk(everything.includes(key.key), 'no key in the audit log')
})

t.test('forged and malformed keys are 401; lookups of unknown keys are rate limited per address', async (t) => {
  const forged = `sbk_${'A'.repeat(43)}`
  const res = await call('GET', '/api/automation/workflows', { token: forged })
  t.equal(res.status, 401)
  t.same(res.body.message, 'Unauthorized')
  t.equal((await call('GET', '/api/automation/workflows', { token: 'sbk_short' })).status, 401, 'malformed: no lookup')
  t.equal((await call('GET', '/api/automation/workflows', { token: `sbk_${'!'.repeat(43)}` })).status, 401)

  let limited: { status: number, headers: Headers | Record<string, string>, body: { message: string } } | undefined
  for (let i = 0; i < 80 && limited === undefined; i++) {
    const attempt = await second.call('GET', '/api/automation/workflows', { token: `sbk_${String(i).padStart(43, 'x')}` })
    if (attempt.status === 429) limited = attempt
    else t.equal(attempt.status, 401)
  }
  t.ok(limited, 'refused before 80 guesses')
  t.match(limited?.body.message, /^Too many API key attempts, retry in \d+ seconds$/)
  // A person's token is not limited by it.
  t.equal((await second.call('GET', '/api/automation/workflows', { token: admin })).status, 200)
})
