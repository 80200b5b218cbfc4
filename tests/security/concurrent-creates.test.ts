import t from 'tap'
import { WORKFLOW_DEFAULTS } from '@switchboard/testing/client'
import { startStack } from '@switchboard/testing/processes'

// The quota check of a create locks the user's row after the insert, whose foreign key has
// already taken a share lock on it: two creates of one user each held the share lock and waited
// for the other's, and Postgres broke the deadlock with a 500 (8 parallel creates: 6 × 500).
const stack = await startStack(t, { workers: 0 })
const adminToken = await stack.adminToken()
const PARALLEL = 8
const workflow = (name: string) => ({ ...WORKFLOW_DEFAULTS, name, nodes: [{ id: 'n', type: 'set', config: { values: {} } }] })

t.test('parallel workflow and credential creates of one user all succeed, none answers 5xx', async (t) => {
  const member = await stack.client.newUser(adminToken)
  const workflows = await Promise.all(Array.from({ length: PARALLEL }, async (_, i) =>
    await stack.client.call('POST', '/api/automation/workflows', { token: member.token, body: workflow(`w${i}`) })))
  t.same(workflows.map((res) => res.status), Array(PARALLEL).fill(201), 'every workflow create answers 201')
  const credentials = await Promise.all(Array.from({ length: PARALLEL }, async (_, i) =>
    await stack.client.call('POST', '/api/automation/credentials', { token: member.token, body: { name: `c${i}`, type: 'bearer', data: { token: `secret-token-${i}` } } })))
  t.same(credentials.map((res) => res.status), Array(PARALLEL).fill(201), 'every credential create answers 201')
})

t.test('parallel creates past a quota: exactly the quota is created, the rest answer 400', async (t) => {
  const member = await stack.client.newUser(adminToken)
  const quota = await stack.client.call('PATCH', `/api/users/${member.id}`, { token: adminToken, body: { quotas: { workflows: 3 } } })
  t.equal(quota.status, 200)
  const answers = await Promise.all(Array.from({ length: PARALLEL }, async (_, i) =>
    await stack.client.call('POST', '/api/automation/workflows', { token: member.token, body: workflow(`q${i}`) })))
  t.equal(answers.filter((res) => res.status === 201).length, 3, 'the quota\'s three are created')
  const refused = answers.filter((res) => res.status !== 201)
  t.equal(refused.length, PARALLEL - 3)
  for (const res of refused) t.match(res, { status: 400, body: { code: 'QUOTA_EXCEEDED', message: 'Too many workflows (max 3)' } })
  const list = await stack.client.call('GET', '/api/automation/workflows', { token: member.token })
  t.equal(list.body.length, 3, 'three workflows are stored')
})
