import t from 'tap'
import { startStack } from '@switchboard/testing/processes'

/**
 * Export keeps no value written into a node where secrets go (issue 23, item 8): a URL's
 * `?access_token=`, `X-Goog-Api-Key` and `Private-Token` headers and a `query.api_key` all
 * appeared in an export reported as `redacted: []`. Now every literal header value but a few
 * harmless ones, every literal query parameter and URL user info are removed and listed, and an
 * import answers which of them it still lacks.
 */

const stack = await startStack(t, { workers: 0 })
const member = await stack.client.newUser(await stack.adminToken())
const { call } = stack

const SECRETS = {
  accessToken: 'access-token-secret-1a',
  goog: 'goog-api-key-secret-2b',
  gitlab: 'gitlab-private-token-3c',
  tenant: 'tenant-header-literal-4d',
  apiKey: 'query-api-key-secret-5e',
  password: 'url-password-secret-6f'
}

const created = await call('POST', '/api/automation/credentials', { token: member.token, body: { name: 'vendor', type: 'generic', data: { apiKey: 'vendor-api-key-7a' } } })
if (created.status !== 201) throw new Error(JSON.stringify(created.body))
const workflowId = await stack.client.createWorkflow(member.token, {
  nodes: [{
    id: 'call',
    type: 'http_request',
    config: {
      url: `https://svc:${SECRETS.password}@api.example.com/v1/items?access_token=${SECRETS.accessToken}&page=2&q={{triggerData.q}}#top`,
      headers: {
        'X-Goog-Api-Key': SECRETS.goog,
        'Private-Token': SECRETS.gitlab,
        'X-Tenant': SECRETS.tenant,
        'Content-Type': 'application/json',
        'User-Agent': 'switchboard',
        'X-Key': '{{credentials.vendor.apiKey}}'
      },
      query: { api_key: SECRETS.apiKey, limit: 10, search: '{{triggerData.q}}' }
    }
  }]
})

const PLACES = [
  'nodes[0].config.headers.X-Goog-Api-Key',
  'nodes[0].config.headers.Private-Token',
  'nodes[0].config.headers.X-Tenant',
  'nodes[0].config.query.api_key',
  'nodes[0].config.query.limit',
  'nodes[0].config.url',
  'nodes[0].config.url?access_token',
  'nodes[0].config.url?page'
]

t.test('an export keeps only harmless header values, templates and the address; it lists every value removed', async (t) => {
  const res = await call('GET', `/api/automation/workflows/${workflowId}/export`, { token: member.token })
  t.equal(res.status, 200)
  const text = JSON.stringify(res.body)
  for (const [name, secret] of Object.entries(SECRETS)) t.notOk(text.includes(secret), `no ${name}`)
  t.same(res.body.workflow.nodes[0].config, {
    url: 'https://api.example.com/v1/items?q={{triggerData.q}}#top',
    headers: { 'Content-Type': 'application/json', 'User-Agent': 'switchboard', 'X-Key': '{{credentials.vendor.apiKey}}' },
    query: { search: '{{triggerData.q}}' }
  })
  t.same([...res.body.redacted].sort(), [...PLACES].sort())
})

t.test('an import answers which removed values its nodes still lack', async (t) => {
  const exported = (await call('GET', `/api/automation/workflows/${workflowId}/export`, { token: member.token })).body
  const imported = await call('POST', '/api/automation/workflows/import', { token: member.token, body: exported })
  t.equal(imported.status, 201)
  t.same([...imported.body.toFill].sort(), [...PLACES].sort(), 'everything removed must be filled in')

  // The importer fills some in (a credential for the Google key, a value for the page) before importing.
  const node = exported.workflow.nodes[0]
  node.config.headers['x-goog-api-key'] = '{{credentials.vendor.apiKey}}'
  node.config.url = node.config.url.replace('?', '?page=2&')
  node.config.query.limit = 10
  const filled = await call('POST', '/api/automation/workflows/import', { token: member.token, body: exported })
  t.equal(filled.status, 201)
  t.same([...filled.body.toFill].sort(), [
    'nodes[0].config.headers.Private-Token',
    'nodes[0].config.headers.X-Tenant',
    'nodes[0].config.query.api_key',
    'nodes[0].config.url',
    'nodes[0].config.url?access_token'
  ])
  const bare = await call('POST', '/api/automation/workflows/import', { token: member.token, body: { ...exported, redacted: undefined } })
  t.same(bare.body.toFill, [], 'an export without its list has nothing to check')
})
