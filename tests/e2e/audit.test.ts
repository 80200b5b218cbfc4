/**
 * The audit log through the front door (README, Audit log): real api and worker processes over
 * HTTP. Each security-relevant action writes exactly one row naming its actor, target, request id
 * and client address; nothing is written when the action is refused, and an action whose audit
 * row cannot be written does not happen (one transaction); admins read it with filters and pages,
 * members get 403; no password, credential value or token is in it; failed logins write no more
 * rows than the login limiter admits; the worker's retention pass deletes rows past
 * AUDIT_RETENTION_DAYS. The test is the proxy (TRUST_PROXY=loopback): each request names its
 * client in X-Forwarded-For.
 */
import { randomUUID } from 'node:crypto'
import postgres from 'postgres'
import t from 'tap'
import { fakeChatEnv, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { MAX_AUDIT_LABEL_LENGTH } from '@switchboard/core/audit'
import { LOGIN_LIMITS_PER_MINUTE } from '../../apps/api/src/routes/api/auth/index.ts'

const CLIENT = '203.0.113.7'
const RETENTION_DAYS = 30
const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, {
  env: { ...fakeChatEnv(platform, { phoneNumberId: '106540352242931' }), TRUST_PROXY: 'loopback', AUDIT_RETENTION_DAYS: String(RETENTION_DAYS) }
})
const sql = postgres(stack.env.DATABASE_URL!, { max: 2, onnotice: () => {} })
t.teardown(async () => { await sql.end() })

/** Every secret the test hands the api: none may appear in any audit row, in any form. */
const secrets = new Set<string>([TEST_ADMIN.password])

interface Answer { status: number, body: any, requestId: string }

/** A request from CLIENT with a request id of its own, which names the audit rows it writes. */
async function act (method: string, path: string, options: { token?: string, body?: unknown, client?: string } = {}): Promise<Answer> {
  const requestId = `audit-${randomUUID()}`
  const res = await stack.call(method, path, { token: options.token, body: options.body, headers: { 'x-forwarded-for': options.client ?? CLIENT, 'x-request-id': requestId } })
  return { status: res.status, body: res.body, requestId }
}

async function expectStatus (answer: Answer, status: number, what: string): Promise<Answer> {
  if (answer.status !== status) throw new Error(`${what}: expected ${status}, got ${answer.status} ${JSON.stringify(answer.body)}`)
  return answer
}

interface Entry {
  id: string
  at: string
  actor: { type: string, id: string | null, label: string | null, apiKeyId: string | null }
  action: string
  target: { type: string | null, id: string | null }
  requestId: string | null
  clientAddress: string | null
  details: Record<string, unknown> | null
}

const admin = await (async () => {
  const login = await expectStatus(await act('POST', '/api/auth/login', { body: TEST_ADMIN }), 200, 'admin login')
  return { id: login.body.user.id as string, email: TEST_ADMIN.email, token: login.body.token as string, loginRequestId: login.requestId }
})()
secrets.add(admin.token)

/** The audit log as the admin reads it. */
async function audit (query = ''): Promise<Entry[]> {
  const res = await stack.call('GET', `/api/audit?limit=500${query}`, { token: admin.token })
  if (res.status !== 200) throw new Error(`audit: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}
const rowsOf = async (requestId: string): Promise<Entry[]> => (await audit()).filter((entry) => entry.requestId === requestId)

/** A member with a password of their own, signed in. */
async function newMember (name: string): Promise<{ id: string, email: string, password: string, token: string }> {
  const email = `${name}-${randomUUID()}@example.com`
  const password = `${name}-password-${randomUUID()}`
  secrets.add(password)
  const created = await expectStatus(await act('POST', '/api/users', { token: admin.token, body: { email, password } }), 201, `create ${name}`)
  const login = await expectStatus(await act('POST', '/api/auth/login', { body: { email, password } }), 200, `${name} login`)
  secrets.add(login.body.token)
  return { id: created.body.id, email, password, token: login.body.token }
}

t.test('each action writes exactly one row with its actor, target, request id and client address', async (t) => {
  const byAdmin = { type: 'user', id: admin.id, label: admin.email, apiKeyId: null }
  /** The one row `answer`'s request wrote. */
  const one = async (answer: Answer, expected: { action: string, actor?: Entry['actor'], target: Entry['target'], details?: Record<string, unknown> }): Promise<void> => {
    const rows = await rowsOf(answer.requestId)
    t.equal(rows.length, 1, `${expected.action}: one row`)
    t.match(rows[0], { action: expected.action, actor: expected.actor ?? byAdmin, target: expected.target, requestId: answer.requestId, clientAddress: CLIENT, ...(expected.details !== undefined && { details: expected.details }) }, expected.action)
  }

  await one({ status: 200, body: null, requestId: admin.loginRequestId }, { action: 'auth.login', target: { type: 'user', id: admin.id } })

  // Users and passwords.
  const email = `audited-${randomUUID()}@example.com`
  const password = `first-password-${randomUUID()}`
  secrets.add(password)
  const created = await expectStatus(await act('POST', '/api/users', { token: admin.token, body: { email, password } }), 201, 'create user')
  const userId: string = created.body.id
  const asUser = { type: 'user', id: userId, label: email, apiKeyId: null }
  await one(created, { action: 'user.created', target: { type: 'user', id: userId }, details: { email, role: 'member' } })

  const login = await expectStatus(await act('POST', '/api/auth/login', { body: { email, password } }), 200, 'login')
  secrets.add(login.body.token)
  await one(login, { action: 'auth.login', actor: asUser, target: { type: 'user', id: userId } })

  const wrongPassword = `wrong-password-${randomUUID()}`
  secrets.add(wrongPassword)
  const failed = await expectStatus(await act('POST', '/api/auth/login', { body: { email: email.toUpperCase(), password: wrongPassword } }), 401, 'failed login')
  await one(failed, { action: 'auth.login_failed', actor: { type: 'anonymous', id: null, label: email.toUpperCase(), apiKeyId: null }, target: { type: null, id: null } })

  const newPassword = `second-password-${randomUUID()}`
  secrets.add(newPassword)
  const changed = await expectStatus(await act('POST', '/api/auth/password', { token: login.body.token, body: { currentPassword: password, newPassword } }), 200, 'password change')
  secrets.add(changed.body.token)
  await one(changed, { action: 'auth.password_changed', actor: asUser, target: { type: 'user', id: userId } })

  const promoted = await expectStatus(await act('PATCH', `/api/users/${userId}`, { token: admin.token, body: { role: 'admin' } }), 200, 'promote')
  await one(promoted, { action: 'user.role_changed', target: { type: 'user', id: userId }, details: { email, from: 'member', to: 'admin' } })
  const reset = `reset-password-${randomUUID()}`
  secrets.add(reset)
  const resetAnswer = await expectStatus(await act('PATCH', `/api/users/${userId}`, { token: admin.token, body: { password: reset } }), 200, 'reset')
  await one(resetAnswer, { action: 'user.password_reset', target: { type: 'user', id: userId }, details: { email } })

  // Credentials: never their data.
  const credentialToken = `credential-token-${randomUUID()}`
  const replacedToken = `credential-replaced-${randomUUID()}`
  secrets.add(credentialToken).add(replacedToken)
  const credential = await expectStatus(await act('POST', '/api/automation/credentials', { token: admin.token, body: { name: 'audited-api', type: 'bearer', data: { token: credentialToken } } }), 201, 'credential')
  const credentialTarget = { type: 'credential', id: credential.body.id }
  await one(credential, { action: 'credential.created', target: credentialTarget, details: { name: 'audited-api', type: 'bearer' } })
  const credentialChanged = await expectStatus(await act('PATCH', `/api/automation/credentials/${credential.body.id}`, { token: admin.token, body: { name: 'audited-api-2', data: { token: replacedToken } } }), 200, 'credential change')
  await one(credentialChanged, { action: 'credential.updated', target: credentialTarget, details: { name: 'audited-api', renamedTo: 'audited-api-2', dataReplaced: true } })
  await one(await expectStatus(await act('DELETE', `/api/automation/credentials/${credential.body.id}`, { token: admin.token }), 204, 'credential delete'),
    { action: 'credential.deleted', target: credentialTarget, details: { name: 'audited-api-2', type: 'bearer' } })

  // Subscriptions: never their secret, nor their URL (a token may ride in its query).
  const subscriptionSecret = `whsec_${Buffer.from(randomUUID().replaceAll('-', '')).toString('base64')}`
  const urlToken = `url-token-${randomUUID()}`
  secrets.add(subscriptionSecret).add(urlToken)
  const subscription = await expectStatus(await act('POST', '/api/automation/subscriptions', { token: admin.token, body: { url: `https://hooks.example.com/in?token=${urlToken}`, events: ['workflow.run.failed'], secret: subscriptionSecret } }), 201, 'subscription')
  const subscriptionTarget = { type: 'subscription', id: subscription.body.id }
  await one(subscription, { action: 'subscription.created', target: subscriptionTarget, details: { host: 'hooks.example.com', events: ['workflow.run.failed'] } })
  await one(await expectStatus(await act('PATCH', `/api/automation/subscriptions/${subscription.body.id}`, { token: admin.token, body: { enabled: false } }), 200, 'subscription change'),
    { action: 'subscription.updated', target: subscriptionTarget, details: { changed: ['enabled'], enabled: false } })
  await one(await expectStatus(await act('DELETE', `/api/automation/subscriptions/${subscription.body.id}`, { token: admin.token }), 204, 'subscription delete'),
    { action: 'subscription.deleted', target: subscriptionTarget, details: { events: ['workflow.run.failed'] } })

  // Workflows: a wait of an hour, so that its runs can be cancelled and retried in bulk.
  const definition = { name: 'audited flow', triggerType: 'MANUAL', isActive: false, nodes: [{ id: 'w', type: 'wait', config: { hours: 1 } }] }
  const workflow = await expectStatus(await act('POST', '/api/automation/workflows', { token: admin.token, body: definition }), 201, 'workflow')
  const workflowId: string = workflow.body.id
  const workflowTarget = { type: 'workflow', id: workflowId }
  await one(workflow, { action: 'workflow.created', target: workflowTarget, details: { name: 'audited flow', isActive: false } })
  const renamed = await expectStatus(await act('PATCH', `/api/automation/workflows/${workflowId}`, { token: admin.token, body: { name: 'audited flow 2', nodes: [{ id: 'w', type: 'wait', config: { hours: 2 } }] } }), 200, 'update')
  await one(renamed, { action: 'workflow.updated', target: workflowTarget, details: { name: 'audited flow 2', fields: ['name', 'nodes'] } })
  const unchanged = await expectStatus(await act('PATCH', `/api/automation/workflows/${workflowId}`, { token: admin.token, body: { name: 'audited flow 2' } }), 200, 'no change')
  t.same(await rowsOf(unchanged.requestId), [], 'a change that changes nothing writes no row')
  const moved = await expectStatus(await act('PATCH', `/api/automation/workflows/${workflowId}`, { token: admin.token, body: { nodes: [{ id: 'w', type: 'wait', config: { hours: 2 }, position: { x: 40, y: 80 } }] } }), 200, 'move')
  t.same(await rowsOf(moved.requestId), [], 'nor does a change of positions only')
  await one(await expectStatus(await act('PATCH', `/api/automation/workflows/${workflowId}`, { token: admin.token, body: { isActive: true } }), 200, 'activate'),
    { action: 'workflow.activated', target: workflowTarget, details: { fields: ['isActive'] } })
  await one(await expectStatus(await act('POST', `/api/automation/workflows/${workflowId}/versions/1/restore`, { token: admin.token }), 200, 'restore'),
    { action: 'workflow.restored', target: workflowTarget, details: { version: 1, newVersion: 3 } })

  const runId = await stack.client.fire(admin.token, workflowId)
  await expectStatus(await act('POST', `/api/automation/runs/${runId}/cancel`, { token: admin.token }), 200, 'cancel')
  const range = { status: 'CANCELLED', from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 3_600_000).toISOString() }
  const retried = await expectStatus(await act('POST', `/api/automation/workflows/${workflowId}/runs/retry`, { token: admin.token, body: range }), 202, 'bulk retry')
  await one(retried, { action: 'runs.bulk_retried', target: workflowTarget, details: { ...range, version: 'current', runs: 1, more: false } })

  await one(await expectStatus(await act('PATCH', `/api/automation/workflows/${workflowId}`, { token: admin.token, body: { isActive: false } }), 200, 'deactivate'),
    { action: 'workflow.deactivated', target: workflowTarget })
  const exported = await expectStatus(await act('GET', `/api/automation/workflows/${workflowId}/export`, { token: admin.token }), 200, 'export')
  t.same(await rowsOf(exported.requestId), [], 'reads write nothing')
  const imported = await expectStatus(await act('POST', '/api/automation/workflows/import', { token: admin.token, body: exported.body }), 201, 'import')
  await one(imported, { action: 'workflow.imported', target: { type: 'workflow', id: imported.body.id }, details: { name: 'audited flow 2', isActive: false } })
  await one(await expectStatus(await act('DELETE', `/api/automation/workflows/${workflowId}`, { token: admin.token }), 204, 'workflow delete'),
    { action: 'workflow.deleted', target: workflowTarget, details: { name: 'audited flow 2' } })

  // A broadcast, from the installation's default account.
  const broadcast = await expectStatus(await act('POST', '/api/chat/broadcasts', { token: admin.token, body: { templateName: 'hello_world', recipients: [{ to: '15557001001' }, { to: '15557001002' }] } }), 201, 'broadcast')
  await one(broadcast, { action: 'broadcast.created', target: { type: 'broadcast', id: broadcast.body.id }, details: { templateName: 'hello_world', recipients: 2 } })

  // Back to member, then deleted: an admin's action on another admin.
  await expectStatus(await act('PATCH', `/api/users/${userId}`, { token: admin.token, body: { role: 'member' } }), 200, 'demote')
  await one(await expectStatus(await act('DELETE', `/api/users/${userId}`, { token: admin.token }), 204, 'user delete'),
    { action: 'user.deleted', target: { type: 'user', id: userId }, details: { email } })
})

t.test('a request with an API key is recorded as the key, acting as its owner', async (t) => {
  const created = await expectStatus(await act('POST', '/api/auth/api-keys', { token: admin.token, body: { name: 'audited key', scopes: ['workflows:write', 'credentials:write'] } }), 201, 'key')
  secrets.add(created.body.key)
  const byKey = { type: 'api_key', id: admin.id, label: admin.email, apiKeyId: created.body.id }
  const workflow = await expectStatus(await act('POST', '/api/automation/workflows', { token: created.body.key, body: { name: 'made by a key', triggerType: 'MANUAL' } }), 201, 'workflow by key')
  t.match(await rowsOf(workflow.requestId), [{ action: 'workflow.created', actor: byKey, target: { type: 'workflow', id: workflow.body.id }, clientAddress: CLIENT }])
  const keyMadeToken = `key-made-${randomUUID()}`
  secrets.add(keyMadeToken)
  const credential = await expectStatus(await act('POST', '/api/automation/credentials', { token: created.body.key, body: { name: 'key-made', type: 'bearer', data: { token: keyMadeToken } } }), 201, 'credential by key')
  t.match(await rowsOf(credential.requestId), [{ action: 'credential.created', actor: byKey }])
  const refused = await act('GET', '/api/audit', { token: created.body.key })
  t.equal(refused.status, 403, 'a key without audit:read cannot read the log, even an admin\'s')
  const reader = await expectStatus(await act('POST', '/api/auth/api-keys', { token: admin.token, body: { name: 'audit reader', scopes: ['audit:read'] } }), 201, 'reader key')
  secrets.add(reader.body.key)
  const read = await act('GET', `/api/audit?actorId=${admin.id}&action=workflow.created&limit=1`, { token: reader.body.key })
  t.equal(read.status, 200, 'an admin\'s key with audit:read reads it')
  t.match(read.body, [{ actor: byKey, target: { id: workflow.body.id } }])
})

t.test('a refused action writes nothing, and an action whose row cannot be written does not happen', async (t) => {
  const member = await newMember('refused')
  const refusals: Array<Promise<Answer>> = [
    act('POST', '/api/users', { token: admin.token, body: { email: member.email, password: 'password-123' } }), // 409 taken
    act('DELETE', `/api/users/${admin.id}`, { token: admin.token }), // 409 the last admin
    act('PATCH', `/api/users/${'z'.repeat(24)}`, { token: admin.token, body: { role: 'admin' } }), // 404
    act('POST', '/api/automation/workflows', { token: member.token, body: { name: 'bad', triggerType: 'MANUAL', nodes: [{ id: 'n1', type: 'nope' }] } }), // 400
    act('DELETE', `/api/automation/workflows/${'z'.repeat(24)}`, { token: member.token }), // 404
    act('POST', '/api/automation/credentials', { token: member.token, body: { name: 'x', type: 'bearer', data: {} } }), // 400
    act('POST', '/api/auth/password', { token: member.token, body: { currentPassword: 'not-the-password', newPassword: 'whatever-123' } }), // 400
    act('POST', '/api/auth/login', { body: { email: member.email } }) // 400: not an attempt
  ]
  for (const refused of await Promise.all(refusals)) {
    t.ok(refused.status >= 400 && refused.status < 500, `refused: ${refused.status} ${JSON.stringify(refused.body)}`)
    t.same(await rowsOf(refused.requestId), [], `no row for the ${refused.status}`)
  }

  // The row is written by the action's transaction: when it cannot be, the action is undone.
  await sql`create function refuse_audit() returns trigger language plpgsql as $$ begin raise exception 'audit refused'; end $$`
  await sql`create trigger refuse_audit before insert on audit_log for each row when (new.actor_label like 'refused-%') execute function refuse_audit()`
  t.teardown(async () => { await sql`drop trigger if exists refuse_audit on audit_log` })
  const workflow = await act('POST', '/api/automation/workflows', { token: member.token, body: { name: 'never saved', triggerType: 'MANUAL', nodes: [] } })
  t.equal(workflow.status, 500, 'the statement failed')
  const credential = await act('POST', '/api/automation/credentials', { token: member.token, body: { name: 'never-saved', type: 'bearer', data: { token: 'never-saved-token' } } })
  t.equal(credential.status, 500)
  const changed = await act('POST', '/api/auth/password', { token: member.token, body: { currentPassword: member.password, newPassword: 'never-saved-password' } })
  t.equal(changed.status, 500)
  await sql`drop trigger refuse_audit on audit_log`
  t.same((await stack.call('GET', '/api/automation/workflows', { token: member.token })).body, [], 'no workflow was saved')
  t.same((await stack.call('GET', '/api/automation/credentials', { token: member.token })).body, [], 'no credential was saved')
  t.equal((await stack.call('POST', '/api/auth/login', { body: { email: member.email, password: member.password } })).status, 200, 'the password is unchanged')
})

t.test('admins filter and page the log, newest first; bad filters are 400s; members get 403', async (t) => {
  const a = await newMember('filter-a')
  const b = await newMember('filter-b')
  const started = new Date().toISOString()
  for (const [member, count] of [[a, 3], [b, 2]] as const) {
    for (let i = 0; i < count; i++) await expectStatus(await act('POST', '/api/automation/workflows', { token: member.token, body: { name: `${member.email} ${i}`, triggerType: 'MANUAL' } }), 201, 'workflow')
  }
  const ofA = await audit(`&actorId=${a.id}&action=workflow.created`)
  t.equal(ofA.length, 3)
  t.ok(ofA.every((entry) => entry.actor.id === a.id && entry.action === 'workflow.created'))
  t.same(ofA.map((entry) => entry.details?.name), [2, 1, 0].map((i) => `${a.email} ${i}`), 'newest first')
  const ats = ofA.map((entry) => Date.parse(entry.at))
  t.same(ats, [...ats].sort((x, y) => y - x))

  const target = ofA[1]!.target.id!
  t.same((await audit(`&targetId=${target}`)).map((entry) => entry.id), [ofA[1]!.id], 'by target')
  t.same((await audit(`&targetType=workflow&targetId=${target}`)).map((entry) => entry.id), [ofA[1]!.id])
  t.same(await audit(`&targetType=user&targetId=${target}`), [], 'by target type')
  const since = await audit(`&from=${encodeURIComponent(started)}&action=workflow.created`)
  t.equal(since.length, 5, 'from: both members\' workflows')
  t.same(await audit(`&to=${encodeURIComponent(started)}&actorId=${b.id}&action=workflow.created`), [], 'to: none before')

  const pages = []
  for (let offset = 0; offset < 5; offset += 2) pages.push(...(await (await stack.call('GET', `/api/audit?action=workflow.created&from=${encodeURIComponent(started)}&limit=2&offset=${offset}`, { token: admin.token })).body))
  t.same(pages.map((entry: Entry) => entry.id), since.map((entry) => entry.id), 'pages of 2 give the same rows in the same order')

  const bad: Array<[string, string]> = [
    ['action=workflow.exploded', 'action must be one of'],
    ['targetType=planet', 'targetType must be one of'],
    ['from=yesterday', 'from must be an ISO 8601 date-time'],
    ['to=2026-13-01T00:00:00Z', 'to must be an ISO 8601 date-time'],
    ['from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', 'to must be after from'],
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['offset=-1', 'offset'],
    [`actorId=${'x'.repeat(65)}`, 'actorId']
  ]
  for (const [query, message] of bad) {
    const res = await stack.call('GET', `/api/audit?${query}`, { token: admin.token })
    t.equal(res.status, 400, query)
    t.match(res.body, { statusCode: 400, message: new RegExp(message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) }, query)
  }

  const forbidden = { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: 'Forbidden' }
  for (const query of ['', `?actorId=${a.id}`, '?action=workflow.exploded']) {
    const res = await stack.call('GET', `/api/audit${query}`, { token: a.token })
    t.equal(res.status, 403, `a member's audit query${query}`)
    t.same(res.body, forbidden)
  }
  t.equal((await stack.call('GET', '/api/audit')).status, 401, 'no token')
})

t.test('failed logins write no more rows than the login limiter admits, each label bounded', async (t) => {
  const client = '198.51.100.23'
  const email = `guessed-${randomUUID()}@example.com`
  const attempts = LOGIN_LIMITS_PER_MINUTE.addressAndEmail + 15
  let refused = 0
  let limited = 0
  for (let i = 0; i < attempts; i++) {
    const res = await act('POST', '/api/auth/login', { client, body: { email, password: `guess-${i}` } })
    if (res.status === 401) refused++
    else if (res.status === 429) limited++
    else t.fail(`unexpected ${res.status}`)
  }
  t.equal(refused, LOGIN_LIMITS_PER_MINUTE.addressAndEmail, 'the limiter admitted this many')
  t.equal(limited, attempts - refused)
  const [{ n }] = await sql<Array<{ n: number }>>`select count(*)::int as n from audit_log where action = 'auth.login_failed' and client_address = ${client}`
  t.equal(n, refused, 'one row per admitted attempt, none for a refused one')

  const long = `${'x'.repeat(300)}@example.com`
  const res = await act('POST', '/api/auth/login', { client: '198.51.100.24', body: { email: long, password: 'guess' } })
  t.equal(res.status, 401)
  const [row] = await rowsOf(res.requestId)
  t.equal(row?.actor.label, long.slice(0, MAX_AUDIT_LABEL_LENGTH), 'the attempted email, bounded')
})

t.test('no password, credential value or token is anywhere in the audit log', async (t) => {
  const everything = JSON.stringify(await audit()) + JSON.stringify(await sql`select * from audit_log`)
  t.ok(secrets.size > 10, `${secrets.size} secrets`)
  for (const secret of secrets) {
    for (const form of [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]) {
      t.notOk(everything.includes(form), `not in the log: ${form.slice(0, 12)}…`)
    }
  }
})

t.test('the worker\'s retention pass deletes the rows past AUDIT_RETENTION_DAYS, and only those', async (t) => {
  await sql`insert into audit_log (id, created_at, actor_type, action)
    select 'old-' || n, now() - make_interval(days => ${RETENTION_DAYS} + n), 'anonymous', 'auth.login_failed' from generate_series(1, 7) as n`
  await sql`insert into audit_log (id, created_at, actor_type, action)
    select 'kept-' || n, now() - make_interval(days => ${RETENTION_DAYS}) + interval '1 hour', 'anonymous', 'auth.login_failed' from generate_series(1, 3) as n`
  // By id: rows written meanwhile (an API key's first use, recorded up to 10 s after it) are not the pass's.
  const kept = (await sql<Array<{ id: string }>>`select id from audit_log where id not like 'old-%'`).map(({ id }) => id)
  // A worker's first pass comes a few seconds after it starts; the first worker's next one may come first.
  await stack.startWorker()
  const reported = (): number => stack.workers.flatMap((worker) => worker.output().split('\n').filter((line) => line.includes('"retention pass"')))
    .reduce((sum, line) => sum + (JSON.parse(line) as { expiredAudit: number }).expiredAudit, 0)
  // The line comes after the delete's commit: wait for it, not for the rows to go.
  await waitFor(async () => reported() >= 7 ? true : undefined, { what: 'a retention pass to report the old rows', timeoutMs: 30_000 })
  t.equal(reported(), 7, 'the passes deleted them, each row once')
  t.same(await sql`select id from audit_log where id like 'old-%'`, [], 'the rows past the retention are gone')
  const [{ after }] = await sql<Array<{ after: number }>>`select count(*)::int as after from audit_log where id = any(${kept})`
  t.equal(after, kept.length, 'the rows within the retention kept')
})
