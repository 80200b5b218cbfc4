import t from 'tap'
import { Value } from 'typebox/value'
import { buildTestApp } from './helper.ts'

const { request, newMember } = await buildTestApp(t)

const WORKFLOWS = '/api/automation/workflows'

interface NodeTypeBody {
  type: string
  description: string
  configSchema: { type: string, properties: Record<string, unknown>, required?: string[] }
  example: Record<string, unknown>
  traits: Record<string, unknown>
}

t.test('GET /api/automation/node-types lists every node type with its JSON Schema, example and traits', async (t) => {
  const anonymous = await request({ method: 'GET', url: '/api/automation/node-types' })
  t.equal(anonymous.statusCode, 401)

  const { token } = await newMember()
  const res = await request({ method: 'GET', url: '/api/automation/node-types', token })
  t.equal(res.statusCode, 200)
  const { nodeTypes } = res.json() as { nodeTypes: NodeTypeBody[] }
  t.ok(nodeTypes.length >= 7)
  for (const type of ['send_chat', 'send_chat_template', 'http_request', 'condition', 'wait', 'set', 'verify_signature']) {
    t.ok(nodeTypes.some((nodeType) => nodeType.type === type), `${type} is listed`)
  }
  for (const nodeType of nodeTypes) {
    t.equal(nodeType.configSchema.type, 'object', `${nodeType.type}: a JSON Schema object`)
    t.ok(nodeType.description.length > 10, `${nodeType.type}: described`)
    t.ok(Value.Check(nodeType.configSchema, nodeType.example), `${nodeType.type}: its example matches its schema`)
  }
  const http = nodeTypes.find((nodeType) => nodeType.type === 'http_request')!
  t.same(http.configSchema.required, ['url'])
  t.match(http.traits, { pure: false, recordsBeforeEffect: true, credentials: { types: ['bearer', 'basic', 'header', 'hmac'] }, retries: { allowed: true, defaultTimeoutMs: 10_000 } })
  t.same(http.traits.secretFields, [
    { field: 'headers', kind: 'entries', keeps: ['accept', 'accept-language', 'cache-control', 'content-language', 'content-type', 'idempotency-key', 'traceparent', 'user-agent'] },
    { field: 'query', kind: 'entries' },
    { field: 'url', kind: 'url' }
  ])
  const condition = nodeTypes.find((nodeType) => nodeType.type === 'condition')!
  t.same(condition.traits.links, [{ field: 'then', kind: 'node' }, { field: 'else', kind: 'node' }, { field: 'cases', kind: 'map' }, { field: 'default', kind: 'node' }])
  const wait = nodeTypes.find((nodeType) => nodeType.type === 'wait')!
  t.notOk('retry' in wait.configSchema.properties, 'wait takes no retry')
  const callers = nodeTypes.filter((nodeType) => nodeType.traits.callsWorkflow !== undefined).map((nodeType) => [nodeType.type, nodeType.traits.callsWorkflow])
  t.same(callers.sort(), [['foreach', 'workflowId'], ['run_workflow', 'workflowId']], 'the field naming a called workflow, for the builder\'s picker')
})

t.test('a workflow is saved only with configs its node types accept: the field is named, templates stand in for values', async (t) => {
  const { token } = await newMember()
  const save = async (node: Record<string, unknown>) => await request({ method: 'POST', url: WORKFLOWS, token, payload: { name: 'w', triggerType: 'MANUAL', nodes: [{ id: 'n1', ...node }] } })
  const refusals: Array<[Record<string, unknown>, string]> = [
    [{ type: 'http_request', config: { method: 'FETCH', url: 'https://example.com' } }, 'Node n1: config.method must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS (or a template)'],
    [{ type: 'http_request', config: {} }, 'Node n1: config url is required'],
    [{ type: 'wait', config: { minutes: -1 } }, 'Node n1: config.minutes must be >= 0 (or a template)'],
    [{ type: 'send_chat', config: { phone: '+1555', text: 5 } }, 'Node n1: config.text must be string (or a template)'],
    [{ type: 'set', config: { values: '{{triggerData.x | shout}}' } }, 'Node n1: Unknown template filter: shout'],
    [{ type: 'condition', config: { field: 'x', operator: 'near' } }, 'Node n1: config.operator must be']
  ]
  for (const [node, message] of refusals) {
    const res = await save(node)
    t.equal(res.statusCode, 400, JSON.stringify(node))
    t.match(res.json(), { code: 'VALIDATION_ERROR', message: new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`) })
  }
  const accepted = [
    { type: 'http_request', config: { method: 'post', url: '{{triggerData.url}}', failOnStatus: '{{triggerData.strict}}' } },
    { type: 'wait', config: { minutes: '{{triggerData.delay | default: 1}}' } },
    { type: 'condition', config: { field: 'x', operator: '{{triggerData.op}}', value: [1, 2] } },
    { type: 'set', config: { values: { a: 1 }, builderPosition: { x: 1, y: 2 } } }
  ]
  for (const node of accepted) {
    const res = await save(node)
    t.equal(res.statusCode, 201, JSON.stringify(node))
  }
})
