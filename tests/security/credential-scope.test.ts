import t from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'

/**
 * Credentials usable only where they are sent or signed with, and only by their owner's own edits
 * (issue 23, item 3). An admin PATCHed a member's workflow with 64 `condition` nodes matching
 * `{{credentials.mtok.token}}` against `^.{i}[…]`, fired it once and rebuilt the member's
 * token from the nodes' `matched` outputs; an http_request to a sink of the admin's would have
 * done it in one node.
 */

/** The paths the sink was asked for: the member's node asks for /crm, the admin's attempts for /admin. */
const sink = await startDeliverySink(t, { answer: () => ({ headers: { 'content-type': 'application/json' }, body: '{}' }) })
const received = (): string[] => sink.deliveries.map((delivery) => delivery.path)

const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
const admin = await stack.adminToken()
const member = await stack.client.newUser(admin)
const database = createDatabase(stack.env.DATABASE_URL!, { max: 1 })
t.teardown(async () => { await database.close() })
const { call, client } = stack

const TOKEN = 'mtok-0123456789ab'
const created = await call('POST', '/api/automation/credentials', { token: member.token, body: { name: 'mtok', type: 'bearer', data: { token: TOKEN } } })
if (created.status !== 201) throw new Error(`credential: ${JSON.stringify(created.body)}`)

/** The member's own workflow: one node that sends the token where the member chose. */
const callNode = { id: 'call', type: 'http_request', config: { url: `${sink.url}/crm`, credential: 'mtok' } }
const memberWorkflow = await client.createWorkflow(member.token, { nodes: [callNode] })

/** 64 conditions, each telling whether one character of the token is one of a set: the attack as tried. */
const probes = Array.from({ length: 64 }, (_, i) => ({
  id: `c${i}`,
  type: 'condition',
  config: { field: '{{credentials.mtok.token}}', operator: 'matches', value: `^.{${i % 16}}[0-7]` }
}))

t.test('an admin cannot add or change what a member\'s workflow does with the member\'s credentials', async (t) => {
  const attempts: Array<[string, unknown[]]> = [
    ['64 conditions reading the token', [callNode, ...probes]],
    ['an http_request sending it to the admin\'s sink', [callNode, { id: 'leak', type: 'http_request', config: { url: `${sink.url}/admin`, credential: 'mtok' } }]],
    ['the member\'s node pointed elsewhere', [{ ...callNode, config: { ...callNode.config, url: `${sink.url}/admin` } }]],
    ['a node added before the member\'s node', [{ id: 'before', type: 'set', config: { values: { host: 'elsewhere' } } }, callNode]]
  ]
  for (const [what, nodes] of attempts) {
    const res = await call('PATCH', `/api/automation/workflows/${memberWorkflow}`, { token: admin, body: { nodes } })
    t.equal(res.status, 403, what)
    t.equal(res.body.code, 'CREDENTIAL_OWNER_ONLY', what)
  }
  const res = await call('PATCH', `/api/automation/workflows/${memberWorkflow}`, { token: admin, body: { nodes: [callNode, ...probes] } })
  t.equal(res.body.message, 'Node c0: this workflow uses its owner\'s credentials; only its owner can add or change its nodes')
  const restoredFromAdmin = await call('POST', `/api/automation/workflows/${memberWorkflow}/versions/1/restore`, { token: admin })
  t.equal(restoredFromAdmin.status, 200, 'restoring the stored definition as it is changes nothing the owner did not write')

  t.equal((await client.getRun(admin, await client.fire(admin, memberWorkflow))).workflowId, memberWorkflow, 'the admin may still fire it')
  const read = await call('GET', `/api/automation/workflows/${memberWorkflow}`, { token: admin })
  t.same(read.body.nodes, [callNode], 'and read it, unchanged')
  const deactivated = await call('PATCH', `/api/automation/workflows/${memberWorkflow}`, { token: admin, body: { isActive: false, name: 'paused by an admin' } })
  t.equal(deactivated.status, 200, 'and deactivate or rename it')
  const removed = await call('PATCH', `/api/automation/workflows/${memberWorkflow}`, { token: admin, body: { nodes: [] } })
  t.equal(removed.status, 200, 'and remove the nodes that use credentials')
  const copy = await client.createWorkflow(member.token, { nodes: [callNode] })
  t.equal((await call('DELETE', `/api/automation/workflows/${copy}`, { token: admin })).status, 204, 'and delete it')
})

t.test('the owner uses credentials only in the fields that send or sign with them', async (t) => {
  const refused: Array<[unknown, string]> = [
    [probes[0], 'Node c0: credentials cannot be used in field: condition nodes use none'],
    [{ id: 'copy', type: 'set', config: { values: { token: '{{credentials.mtok.token}}' } } }, 'Node copy: credentials cannot be used in values: set nodes use none'],
    [{ id: 'send', type: 'send_chat', config: { phone: '15550001111', text: 'key {{credentials.mtok.token}}' } }, 'Node send: credentials cannot be used in text: send_chat nodes use none'],
    [{ id: 'call', type: 'http_request', config: { url: sink.url, failOnStatus: '{{credentials.mtok.token}}' } }, 'Node call: credentials cannot be used in failOnStatus: http_request nodes use them only in credential, url, headers, query, body']
  ]
  for (const [node, message] of refused) {
    const res = await call('POST', '/api/automation/workflows', { token: member.token, body: { name: 'refused', triggerType: 'MANUAL', nodes: [node] } })
    t.equal(res.status, 400, message)
    t.same(res.body, { statusCode: 400, code: 'INVALID_CREDENTIAL_REFERENCE', error: message, message })
  }
  const allowed = [
    { id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/x?t={{credentials.mtok.token}}`, headers: { authorization: 'Bearer {{credentials.mtok.token}}' }, query: { t: '{{credentials.mtok.token}}' }, body: { t: '{{credentials.mtok.token}}' } } },
    { id: 'verify', type: 'verify_signature', config: { header: 'x-signature', secret: '{{credentials.mtok.token}}' } }
  ]
  for (const node of allowed) {
    const res = await call('POST', '/api/automation/workflows', { token: member.token, body: { name: 'allowed', triggerType: 'MANUAL', nodes: [node] } })
    t.equal(res.status, 201, `${node.type}: ${res.status === 201 ? 'saved' : JSON.stringify(res.body)}`)
  }
})

t.test('a workflow stored with a reference no longer allowed keeps running until its next save, which names the node and field', async (t) => {
  const workflowId = await client.createWorkflow(member.token, { nodes: [callNode] })
  // As a release before the rule stored it: a set node copying the token, the condition of the attack.
  const legacy = [
    { id: 'copy', type: 'set', config: { values: { token: '{{credentials.mtok.token}}' } }, next: 'check' },
    { id: 'check', type: 'condition', config: { field: '{{credentials.mtok.token}}', operator: 'startsWith', value: 'mtok-' } }
  ]
  await database.sql`update workflows set nodes = ${JSON.stringify(legacy)}::jsonb where id = ${workflowId}`
  await database.sql`update workflow_versions set nodes = ${JSON.stringify(legacy)}::jsonb where workflow_id = ${workflowId}`

  const run = await client.runReaching(member.token, await client.fire(member.token, workflowId))
  t.equal(run.status, 'SUCCESS', 'it runs')
  t.same(run.result.copy, { token: '[credential]' }, 'with the value masked, as before')

  const resaved = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token: member.token, body: { nodes: legacy } })
  t.equal(resaved.status, 400)
  t.equal(resaved.body.message, 'Node copy: credentials cannot be used in values: set nodes use none')
  const restored = await call('POST', `/api/automation/workflows/${workflowId}/versions/1/restore`, { token: member.token })
  t.equal(restored.status, 400, 'a restore of that version too')
  const renamed = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token: member.token, body: { name: 'still runs' } })
  t.equal(renamed.status, 200, 'a change that leaves the nodes alone is not a save of them')
  const moved = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token: member.token, body: { nodes: [callNode] } })
  t.equal(moved.status, 200, 'moving the reference into an http_request (README, Credentials) saves')
})

t.test('nothing the admin wrote ever ran', async (t) => {
  t.ok(received().includes('/crm'), 'the member\'s node called the member\'s service')
  t.notOk(received().some((path) => path.startsWith('/admin')), 'no request reached the admin\'s sink')
  const [{ n }] = await database.sql`select count(*)::int as n from runs where workflow_id = ${memberWorkflow} and result::text like ${`%${TOKEN.slice(5)}%`}`
  t.equal(n, 0, 'no stored result holds any of the token')
})
