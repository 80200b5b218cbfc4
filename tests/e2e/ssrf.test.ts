import t from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import type { RunBody } from '@switchboard/testing/client'

const sink = await startDeliverySink(t)
const port = new URL(sink.url).port

// HTTP_REQUEST_ALLOW_PRIVATE is left at its default, false.
const stack = await startStack(t)
const token = await stack.adminToken()

const runOf = async (url: string): Promise<RunBody> =>
  stack.client.runWorkflow(token, { name: 'ssrf', nodes: [{ id: 'call', type: 'http_request', config: { url } }] }, {}, { statuses: ['SUCCESS', 'FAILED'] })

t.test('http_request to loopback, by address or by name, is refused before connecting', async (t) => {
  const byAddress = await runOf(`http://127.0.0.1:${port}/hook`)
  t.equal(byAddress.status, 'FAILED')
  const hint = '(HTTP_REQUEST_ALLOW_PRIVATE=true on the worker allows private and loopback addresses)'
  t.equal(byAddress.error, `Blocked request to private address 127.0.0.1 ${hint}`, 'names the setting that allows it')
  const byName = await runOf(`http://localhost:${port}/hook`)
  t.equal(byName.status, 'FAILED')
  t.equal(byName.error, `Blocked request to private address ${hint}`, 'without what the name resolved to')
  t.equal(sink.deliveries.length, 0)
})

t.test('cloud metadata addresses are refused', async (t) => {
  const run = await runOf('http://169.254.169.254/latest/meta-data/')
  t.equal(run.status, 'FAILED')
  t.equal(run.error, 'Blocked request to cloud metadata address 169.254.169.254', 'no setting allows it: no hint')
})

t.test('mcp_call goes through the same guard: an MCP server on loopback or at a metadata address is refused before connecting', async (t) => {
  const mcpRunOf = async (name: string, url: string): Promise<RunBody> => {
    const created = await stack.call('POST', '/api/automation/credentials', { token, body: { name, type: 'mcp', data: { url } } })
    t.equal(created.status, 201)
    return stack.client.runWorkflow(token, { name: 'ssrf mcp', nodes: [{ id: 'call', type: 'mcp_call', config: { credential: name, tool: 'lookup_order' } }] }, {}, { statuses: ['SUCCESS', 'FAILED'] })
  }
  const loopback = await mcpRunOf('loopback-mcp', `http://127.0.0.1:${port}/mcp`)
  t.equal(loopback.status, 'FAILED')
  t.equal(loopback.error, 'Blocked request to private address 127.0.0.1 (HTTP_REQUEST_ALLOW_PRIVATE=true on the worker allows private and loopback addresses)')
  const metadata = await mcpRunOf('metadata-mcp', 'http://169.254.169.254/mcp')
  t.equal(metadata.error, 'Blocked request to cloud metadata address 169.254.169.254')
  t.equal(sink.deliveries.length, 0)
})
