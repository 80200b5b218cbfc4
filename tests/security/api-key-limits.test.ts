import t from 'tap'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/**
 * What an API key cannot reach (README, API keys): past its `workflowIds` (a definition calling
 * another workflow, a create, an event's listeners), past its scopes (a users:admin key making an
 * admin or taking over its owner), and the inbox's event stream of a key, which lasts as long as
 * the key does. No run executes here: no worker.
 */
const stack = await startStack(t, {
  workers: 0,
  env: {
    // The installation's default chat account, so that the event stream answers; it is never called.
    CHAT_API_URL: 'http://127.0.0.1:9/v21.0',
    CHAT_ACCESS_TOKEN: 'unused-token',
    CHAT_PHONE_NUMBER_ID: '106540352242923'
  }
})
const admin = await stack.adminToken()
const { client, call } = stack

const FORBIDDEN = { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: 'Forbidden' }

interface CreatedKey { id: string, key: string }

/** A step the test stands on, not what it asserts: the request must answer `status`. */
async function must (status: number, what: string, sent: ReturnType<typeof call>): Promise<Awaited<ReturnType<typeof call>>> {
  const res = await sent
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`)
  return res
}

async function createKey (token: string, body: Record<string, unknown>): Promise<CreatedKey> {
  return (await must(201, 'create a key', call('POST', '/api/auth/api-keys', { token, body: { name: 'limited', ...body } }))).body as CreatedKey
}

const calls = (workflowId: string, type = 'run_workflow') => [{ id: 'call', type, config: { workflowId, ...(type === 'foreach' ? { items: [1] } : { input: {} }) } }]

t.test('a key limited to workflows reaches no other through a definition, a create or an event', async (t) => {
  const member = await client.newUser(admin)
  const w1 = await client.createWorkflow(member.token, { name: 'W1' })
  const w2 = await client.createWorkflow(member.token, { name: 'W2' })
  const w3 = await client.createWorkflow(member.token, { name: 'W3' })
  // The owner's call of W2, at a node no link reaches: the run ends after n1.
  const dormant = [{ id: 'n1', type: 'set', config: { values: {} } }, { id: 'n2', type: 'set', config: { values: {} }, next: 'call' }, ...calls(w2)]
  const w5 = await client.createWorkflow(member.token, { name: 'W5', nodes: dormant })
  const key = await createKey(member.token, { scopes: ['workflows:read', 'workflows:write', 'runs:read', 'runs:write'], workflowIds: [w1, w3, w5] })
  const patchNodes = async (nodes: unknown) => call('PATCH', `/api/automation/workflows/${w1}`, { token: key.key, body: { nodes } })

  t.test('a definition it saves calls only workflows of its list, literally', async (t) => {
    const refused = {
      'run_workflow of W2': await patchNodes(calls(w2)),
      'foreach of W2': await patchNodes(calls(w2, 'foreach')),
      'run_workflow of a template': await patchNodes(calls('{{triggerData.target}}')),
      'run_workflow of a missing workflow': await patchNodes(calls('z'.repeat(24))),
      'edges that reach the owner\'s call of W2': await call('PATCH', `/api/automation/workflows/${w5}`, { token: key.key, body: { edges: [{ source: 'n1', target: 'n2' }] } })
    }
    const statuses = Object.fromEntries(Object.entries(refused).map(([what, res]) => [what, res.status]))
    const allowed = await patchNodes(calls(w3))
    t.same({ ...statuses, 'run_workflow of W3': allowed.status }, {
      'run_workflow of W2': 404,
      'foreach of W2': 404,
      'run_workflow of a template': 404,
      'run_workflow of a missing workflow': 404,
      'edges that reach the owner\'s call of W2': 404,
      'run_workflow of W3': 200
    }, 'each reference outside its list answers as a missing workflow; one inside is saved')
    t.same(refused['run_workflow of W2']!.body, {
      statusCode: 404, code: 'WORKFLOW_NOT_FOUND', error: 'Workflow not found', message: 'Workflow not found', details: { nodeId: 'call', field: 'workflowId' }
    }, 'the answer names the node and the field, and nothing of W2')
    t.same(refused['run_workflow of W2']!.body, { ...refused['run_workflow of a missing workflow']!.body }, 'W2 answers exactly like a workflow that does not exist')
  })

  t.test('restoring a version that calls another workflow is refused like saving it', async (t) => {
    const w4 = await client.createWorkflow(member.token, { name: 'W4', nodes: calls(w2) })
    await must(200, 'the owner changes W4', call('PATCH', `/api/automation/workflows/${w4}`, { token: member.token, body: { nodes: [{ id: 'n1', type: 'set', config: { values: {} } }] } }))
    const restorer = await createKey(member.token, { scopes: ['workflows:read', 'workflows:write'], workflowIds: [w4] })
    const restored = await call('POST', `/api/automation/workflows/${w4}/versions/1/restore`, { token: restorer.key })
    const current = await call('GET', `/api/automation/workflows/${w4}`, { token: member.token })
    t.same({ restore: restored.status, version: current.body.version, type: current.body.nodes[0].type }, { restore: 404, version: 2, type: 'set' },
      'the owner\'s version calling W2 is not made current by the key')
  })

  t.test('a create or an import is refused before anything is written', async (t) => {
    const exported = await must(200, 'export W1', call('GET', `/api/automation/workflows/${w1}/export`, { token: key.key }))
    const created = await call('POST', '/api/automation/workflows', {
      token: key.key,
      body: { name: 'made by a limited key', triggerType: 'CRON', triggerConfig: { cronExpression: '0 * * * *' }, isActive: true, nodes: calls(w2) }
    })
    const imported = await call('POST', '/api/automation/workflows/import', { token: key.key, body: { ...exported.body, workflow: { ...exported.body.workflow, name: 'imported by a limited key' } } })
    t.same([created.body, imported.body], [FORBIDDEN, FORBIDDEN], 'a create and an import are 403 Forbidden')
    const names = (await call('GET', '/api/automation/workflows?limit=500', { token: member.token })).body.map((w: { name: string }) => w.name)
    t.notOk(names.includes('made by a limited key') || names.includes('imported by a limited key'), 'neither was stored')
  })

  t.test('an event starts only the listeners of its list', async (t) => {
    const listener = (name: string) => client.createWorkflow(member.token, { name, triggerType: 'EVENT', triggerConfig: { eventName: 'order.created' } })
    const e1 = await listener('E1')
    await listener('E2')
    const emitter = await createKey(member.token, { scopes: ['events:write'], workflowIds: [e1] })
    const emitted = await must(202, 'emit the event', call('POST', '/api/automation/events', { token: emitter.key, body: { name: 'order.created', payload: {} } }))
    const started = await Promise.all((emitted.body.runIds as string[]).map(async (runId) => (await client.getRun(member.token, runId)).workflowId))
    t.same(started, [e1], 'one run, of the listener it is limited to')
  })
})

t.test('a users:admin key manages members only: it cannot make an admin nor touch one, its owner included', async (t) => {
  const owner = await client.newUser(admin, { role: 'admin' })
  const otherAdmin = await client.newUser(admin, { role: 'admin' })
  const member = await client.newUser(admin)
  const key = await createKey(owner.token, { scopes: ['users:admin'] })
  const as = async (method: string, path: string, body?: unknown) => call(method, path, { token: key.key, body })

  const refused = {
    'create an admin': await as('POST', '/api/users', { email: `by-key-${Date.now()}@example.com`, password: 'admin-password', role: 'admin' }),
    'promote a member': await as('PATCH', `/api/users/${member.id}`, { role: 'admin' }),
    'reset its owner\'s password': await as('PATCH', `/api/users/${owner.id}`, { password: 'taken-over-password' }),
    'demote its owner': await as('PATCH', `/api/users/${owner.id}`, { role: 'member' }),
    'reset another admin\'s password': await as('PATCH', `/api/users/${otherAdmin.id}`, { password: 'taken-over-password' }),
    'set an admin\'s quotas': await as('PATCH', `/api/users/${otherAdmin.id}`, { quotas: { workflows: 1 } }),
    'delete another admin': await as('DELETE', `/api/users/${otherAdmin.id}`),
    'delete its owner': await as('DELETE', `/api/users/${owner.id}`)
  }
  t.same(Object.fromEntries(Object.entries(refused).map(([what, res]) => [what, res.body])), Object.fromEntries(Object.keys(refused).map((what) => [what, FORBIDDEN])),
    'each is 403 Forbidden')
  const afterwards = {
    'its owner signs in with their password': (await call('POST', '/api/auth/login', { body: { email: owner.email, password: 'member-password' } })).status,
    'the other admin is still an admin': (await call('GET', '/api/users', { token: otherAdmin.token })).status,
    'the member is still a member': (await call('GET', '/api/users', { token: member.token })).status
  }
  const allowed = {
    'create a member': (await as('POST', '/api/users', { email: `member-by-key-${Date.now()}@example.com`, password: 'member-password' })).status,
    'reset a member\'s password': (await as('PATCH', `/api/users/${member.id}`, { password: 'another-password', quotas: { workflows: 5 } })).status,
    'delete a member': (await as('DELETE', `/api/users/${member.id}`)).status
  }
  t.same({ ...afterwards, ...allowed }, {
    'its owner signs in with their password': 200,
    'the other admin is still an admin': 200,
    'the member is still a member': 403,
    'create a member': 201,
    'reset a member\'s password': 200,
    'delete a member': 204
  }, 'nothing was changed by the refusals; members are still the key\'s to manage')
})

/** GET /api/chat/events read with fetch, as the console reads it: when it ended, if it did. */
async function openStream (token: string) {
  const controller = new AbortController()
  t.teardown(() => { controller.abort() })
  const res = await fetch(`${stack.baseUrl}/api/chat/events`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal })
  let endedAt: number | undefined
  const reading = (async () => {
    const reader = res.body!.getReader()
    while (!(await reader.read()).done);
  })().catch(() => {}).finally(() => { endedAt = Date.now() })
  return { status: res.status, endedAt: () => endedAt, ended: async () => { await reading; return endedAt! } }
}

t.test('the inbox\'s event stream of a key lasts until the key expires, or is revoked', async (t) => {
  const member = await client.newUser(admin)
  const expiresAt = Date.now() + 2000
  const expiring = await createKey(member.token, { scopes: ['chat:read'], expiresAt: new Date(expiresAt).toISOString() })
  const lasting = await createKey(member.token, { scopes: ['chat:read'] })
  const [untilExpiry, untilRevoked] = [await openStream(expiring.key), await openStream(lasting.key)]
  if (untilExpiry.status !== 200 || untilRevoked.status !== 200) throw new Error(`the streams answered ${untilExpiry.status}, ${untilRevoked.status}`)

  const expiredAt = await untilExpiry.ended()
  t.ok(expiredAt >= expiresAt - 50 && expiredAt < expiresAt + 1000, `the expiring key's stream ended ${expiredAt - expiresAt} ms from the key's expiry`)
  t.ok(Date.now() >= expiresAt && untilRevoked.endedAt() === undefined, 'the stream of a key without expiry is still open past the other key\'s expiry')
  const revokedAt = Date.now()
  await must(204, 'revoke the key', call('DELETE', `/api/auth/api-keys/${lasting.id}`, { token: member.token }))
  const revokedEnd = await waitFor(async () => untilRevoked.endedAt(), { what: 'the revoked key\'s stream to end', timeoutMs: 2000, intervalMs: 20 })
  t.ok(revokedAt >= expiresAt && revokedEnd >= revokedAt, 'it lasted until the key was revoked, and ended then')
})
