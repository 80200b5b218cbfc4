import t from 'tap'
import { startFakeMcpServer } from '@switchboard/testing/fake-mcp-server'
import { FAKE_MODEL_API_KEY, startFakeModelProvider, type ChatMessage } from '@switchboard/testing/fake-model-provider'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import type { RunBody } from '@switchboard/testing/client'

/**
 * The ai_agent node end to end (README, AI agents): real api and worker processes and the fake
 * model provider with tool-calling scripts. Tools are AGENT workflows run as child runs; the last
 * test SIGKILLs the worker while the agent waits for its second model answer.
 */

const provider = await startFakeModelProvider()
t.teardown(async () => { await provider.close() })
const stack = await startStack(t, {
  env: {
    AI_API_URL: `${provider.url}/v1`,
    AI_API_KEY: FAKE_MODEL_API_KEY,
    AI_MODEL: 'fake-model',
    AI_TIMEOUT_MS: '30000',
    AI_MAX_RETRIES: '0',
    // The fake MCP server listens on loopback, which http_request's guard refuses otherwise.
    HTTP_REQUEST_ALLOW_PRIVATE: 'true'
  }
})
const token = await stack.adminToken()
const { client, call } = stack

/** An AGENT workflow that answers an order's status, as a tool. */
const lookupOrder = await client.createWorkflow(token, {
  name: 'Lookup order',
  triggerType: 'AGENT',
  triggerConfig: {
    description: 'Finds an order by its id.',
    inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] }
  },
  nodes: [{ id: 'found', type: 'set', config: { values: { orderId: '{{triggerData.arguments.orderId}}', status: 'shipped' } } }]
})
const failingTool = await client.createWorkflow(token, {
  name: 'Refund',
  triggerType: 'AGENT',
  triggerConfig: { description: 'Refunds an order.', inputSchema: { type: 'object' } },
  nodes: [{ id: 'refuse', type: 'code', config: { code: 'throw new Error("refunds are closed today")' } }]
})

const agentRun = async (config: Record<string, unknown>, triggerData: unknown = {}): Promise<RunBody> =>
  client.runWorkflow(token, { name: 'agent', nodes: [{ id: 'agent', type: 'ai_agent', config }] }, triggerData, { timeoutMs: 60_000 })

const childRunsOf = async (workflowId: string): Promise<Array<{ id: string, status: string }>> => await client.runsOf(token, workflowId)
const toolMessages = (messages: ChatMessage[]): ChatMessage[] => messages.filter((message) => message.role === 'tool')

t.test('a tool call is a child run of the AGENT workflow; its output is what the model reads next; the answer ends the node', async (t) => {
  provider.reset()
  provider.script({ toolCalls: [{ name: 'lookup_order', arguments: { orderId: 'A-17' } }] }, { reply: 'Order A-17 has shipped.' })
  const before = (await childRunsOf(lookupOrder)).length
  const run = await agentRun({ instructions: 'You answer about orders of {{triggerData.shop}}.', input: 'Where is my order {{triggerData.order}}?', tools: [lookupOrder] }, { shop: 'Bikes', order: 'A-17' })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  const output = run.result.agent
  t.equal(output.text, 'Order A-17 has shipped.')
  t.same(output.steps.map((step: { type: string, status?: string }) => `${step.type}${step.status === undefined ? '' : ` ${step.status}`}`), ['model', 'tool succeeded', 'model'])
  const toolStep = output.steps[1]
  t.equal(toolStep.name, 'lookup_order')
  t.match(JSON.parse(toolStep.result), { found: { orderId: 'A-17', status: 'shipped' } }, 'the child run\'s node outputs')
  const children = await childRunsOf(lookupOrder)
  t.equal(children.length, before + 1, 'one run of the tool')
  t.equal(children[0]!.id, toolStep.runId, 'the step names the tool\'s run')
  const child = await client.getRun(token, toolStep.runId)
  t.same(child.triggerData, { arguments: { orderId: 'A-17' } }, 'the arguments are the child\'s triggerData, as the assistant and /mcp give them')

  t.equal(provider.requests.length, 2)
  const [first, second] = provider.requests
  t.match(first!.body.messages[0], { role: 'system', content: /^You answer about orders of Bikes\./ })
  t.same(first!.body.messages[1], { role: 'user', content: 'Where is my order A-17?' })
  t.same(first!.body.tools, [{ type: 'function', function: { name: 'lookup_order', description: 'Finds an order by its id.', parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] } } }])
  const [toolMessage] = toolMessages(second!.body.messages)
  t.equal(toolMessage?.tool_call_id, output.steps[0].toolCalls[0].id, 'the result answers the model\'s call')
  t.match(toolMessage?.content, /"status":"shipped"/)
  t.ok(output.tokensIn > 0 && output.tokensOut > 0, 'tokens of both calls')
})

t.test('refused calls and a failing tool are told to the model, which goes on; output json is checked against its schema', async (t) => {
  provider.reset()
  provider.script(
    { toolCalls: [{ name: 'delete_everything', arguments: {} }, { name: 'lookup_order', arguments: { order: 1 } }, { name: 'refund', arguments: { orderId: 'A-1' } }] },
    { reply: '{"answer": "I could not refund it."}' }
  )
  const run = await agentRun({ input: 'Refund A-1', tools: [lookupOrder, failingTool], output: 'json', jsonSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.agent.json, { answer: 'I could not refund it.' })
  const results = run.result.agent.steps.filter((step: { type: string }) => step.type === 'tool')
  t.same(results.map((step: { name: string, status: string }) => `${step.name} ${step.status}`), ['delete_everything refused', 'lookup_order refused', 'refund failed'], 'in the order the model called them')
  t.match(results[0].result, /^Refused: there is no such tool/)
  t.match(results[1].result, /^Refused: the arguments do not match the tool's schema/)
  t.match(results[2].result, /^The tool failed: .*refunds are closed today/)
  t.equal(toolMessages(provider.requests[1]!.body.messages).length, 3, 'the model reads each call\'s answer')
  t.ok(run.logs.some((line) => line.level === 'WARN' && line.message.includes('Tool call delete_everything refused')))
})

t.test('a model that keeps calling tools stops at maxSteps: its last step offers no tools, and still calling one fails the node', async (t) => {
  provider.reset()
  const looping = { toolCalls: [{ name: 'lookup_order', arguments: { orderId: 'L-1' } }] }
  provider.script(looping, looping, looping, looping)
  const before = (await childRunsOf(lookupOrder)).length
  const run = await agentRun({ input: 'Loop', tools: [lookupOrder], maxSteps: 3 })
  t.equal(run.status, 'FAILED')
  t.match(run.error, /still called tools at its last step \(maxSteps 3\)/)
  t.equal(provider.requests.length, 3, 'three model calls, no fourth')
  t.ok(provider.requests[1]!.body.tools !== undefined, 'tools offered before the last step')
  t.equal(provider.requests[2]!.body.tools, undefined, 'none at the last step')
  t.match(provider.requests[2]!.body.messages[0]!.content, /This is your last step/)
  t.equal((await childRunsOf(lookupOrder)).length, before + 2, 'the tool ran for the first two steps only')
})

t.test('memory keeps the last turns per key; without a key, per conversation, which a run without one does not have', async (t) => {
  provider.reset()
  provider.script({ reply: 'Hello Ana.' }, { reply: 'You asked about shoes.' }, { reply: 'Blue ones.' }, { reply: 'Hello Bo.' })
  const workflowId = await client.createWorkflow(token, {
    name: 'agent with memory',
    nodes: [{ id: 'agent', type: 'ai_agent', config: { input: '{{triggerData.text}}', memory: { key: 'customer-{{triggerData.customer}}', turns: 2 } } }]
  })
  const say = async (customer: string, text: string): Promise<RunBody> =>
    client.runReaching(token, await client.fire(token, workflowId, { customer, text }), undefined, { timeoutMs: 30_000 })
  for (const [customer, text] of [['ana', 'Hi, I am Ana'], ['ana', 'I want shoes'], ['ana', 'What did I ask?'], ['bo', 'Hi, I am Bo']] as const) {
    t.equal((await say(customer, text)).status, 'SUCCESS')
  }
  const conversations = provider.requests.map((request) => request.body.messages.filter((message) => message.role !== 'system').map((message) => `${message.role}: ${message.content}`))
  t.same(conversations[1], ['user: Hi, I am Ana', 'assistant: Hello Ana.', 'user: I want shoes'])
  t.same(conversations[2], ['user: Hi, I am Ana', 'assistant: Hello Ana.', 'user: I want shoes', 'assistant: You asked about shoes.', 'user: What did I ask?'], 'the last 2 turns')
  t.same(conversations[3], ['user: Hi, I am Bo'], 'another key remembers nothing of Ana')

  provider.script({ reply: 'unused' })
  const keyless = await agentRun({ input: 'hi', memory: { turns: 3 } })
  t.equal(keyless.status, 'FAILED')
  t.match(keyless.error, /memory needs a key/)
})

t.test('tools are the owner\'s AGENT workflows: another user\'s, or one of another trigger, is refused at save', async (t) => {
  const other = await client.newUser(token)
  const othersTool = await client.createWorkflow(other.token, {
    name: 'Not yours',
    triggerType: 'AGENT',
    triggerConfig: { description: 'Someone else\'s tool.', inputSchema: { type: 'object' } }
  })
  const manual = await client.createWorkflow(token, { name: 'manual one' })
  for (const [what, id] of [['another user\'s AGENT workflow', othersTool], ['a MANUAL workflow', manual], ['a missing workflow', 'no-such-workflow']] as const) {
    const res = await call('POST', '/api/automation/workflows', { token, body: { name: 'agent', triggerType: 'MANUAL', nodes: [{ id: 'a', type: 'ai_agent', config: { input: 'x', tools: [lookupOrder, id] } }] } })
    t.equal(res.status, 400, what)
    t.equal(res.body.message, `Node a: config.tools names no AGENT workflow of the owner: ${id}`, what)
  }
  const mine = await call('POST', '/api/automation/workflows', { token: other.token, body: { name: 'agent', triggerType: 'MANUAL', nodes: [{ id: 'a', type: 'ai_agent', config: { input: 'x', tools: [othersTool] } }] } })
  t.equal(mine.status, 201, 'its owner may')
  const workflowId = mine.body.id
  const patched = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token: other.token, body: { nodes: [{ id: 'a', type: 'ai_agent', config: { input: 'x', tools: [lookupOrder] } }] } })
  t.equal(patched.status, 400, 'nor through a change')
})

t.test('a worker SIGKILLed while the agent asks its second question: the run resumes at that step, the ended tool call is not made again', async (t) => {
  provider.reset()
  provider.script({ toolCalls: [{ name: 'lookup_order', arguments: { orderId: 'K-9' } }] }, { hang: true }, { reply: 'K-9 has shipped.' })
  const before = (await childRunsOf(lookupOrder)).length
  const workflowId = await client.createWorkflow(token, { name: 'agent killed', nodes: [{ id: 'agent', type: 'ai_agent', config: { input: 'Where is K-9?', tools: [lookupOrder] } }] })
  const runId = await client.fire(token, workflowId)
  await waitFor(async () => provider.requests.length >= 2 ? true : undefined, { timeoutMs: 30_000, what: 'the second model call' })
  await stack.workers[0]!.stop('SIGKILL')
  await stack.startWorker()
  const run = await client.runReaching(token, runId, undefined, { timeoutMs: 90_000, intervalMs: 250 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.equal(run.result.agent.text, 'K-9 has shipped.')
  t.ok(run.logs.some((line) => line.message.startsWith('Run taken over')), 'taken over after the kill')
  t.equal((await childRunsOf(lookupOrder)).length, before + 1, 'the tool ran once')
  t.equal(provider.requests.length, 3, 'the first question was not asked again')
  t.equal(toolMessages(provider.requests[2]!.body.messages).length, 1, 'the resumed step read the tool\'s result')
  t.same(run.result.agent.steps.map((step: { type: string }) => step.type), ['model', 'tool', 'model'])
})

t.test('an MCP server\'s tools are the agent\'s too: listed, called through the guard with the credential\'s headers, each call made once', async (t) => {
  const mcp = await startFakeMcpServer()
  t.teardown(async () => { await mcp.close() })
  const owner = await client.newUser(token)
  const created = await call('POST', '/api/automation/credentials', { token: owner.token, body: { name: 'orders', type: 'mcp', data: { url: mcp.url, headers: JSON.stringify({ 'X-Api-Key': 'key-of-the-orders-server' }) } } })
  t.equal(created.status, 201)
  provider.reset()
  provider.script(
    { toolCalls: [{ name: 'lookup_order', arguments: { orderId: 'M-3' } }, { name: 'fail', arguments: { reason: 'closed' } }, { name: 'echo', arguments: {} }] },
    { reply: 'M-3 has shipped.' }
  )
  const run = await client.runWorkflow(owner.token, {
    name: 'agent with an MCP server',
    nodes: [{ id: 'agent', type: 'ai_agent', config: { input: 'Where is M-3?', credential: 'orders', mcpTools: ['lookup_order', 'fail'] } }]
  }, {}, { timeoutMs: 60_000 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.equal(run.result.agent.text, 'M-3 has shipped.')
  t.same(provider.requests[0]!.body.tools!.map((tool) => tool.function.name), ['lookup_order', 'fail'], 'only the tools mcpTools names')
  const results = run.result.agent.steps.filter((step: { type: string }) => step.type === 'tool')
  t.same(results.map((step: { name: string, status: string }) => `${step.name} ${step.status}`), ['lookup_order succeeded', 'fail failed', 'echo refused'])
  t.match(results[0].result, /Order M-3: shipped/)
  t.match(results[1].result, /^The tool failed: /)
  t.same(mcp.calls.map((made) => made.tool), ['lookup_order', 'fail'], 'each call made once')
  t.ok(mcp.requests.every((request) => request.headers['x-api-key'] === 'key-of-the-orders-server'), 'with the credential\'s headers')
  t.notOk(JSON.stringify(run).includes('key-of-the-orders-server'), 'which the run never shows')

  const save = await call('POST', '/api/automation/workflows', { token: owner.token, body: { name: 'agent', triggerType: 'MANUAL', nodes: [{ id: 'a', type: 'ai_agent', config: { input: 'x', mcpTools: ['lookup_order'] } }] } })
  t.equal(save.status, 400)
  t.match(save.body.message, /mcpTools needs a credential/)
})

t.test('a call routed to a tool goes on with its run when the tool is renamed or its schema changed while the agent waits', async (t) => {
  const release = `agent.release.${Date.now()}`
  const slowTool = await client.createWorkflow(token, {
    name: 'Order status',
    triggerType: 'AGENT',
    triggerConfig: { description: 'An order\'s status.', inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] } },
    nodes: [
      { id: 'released', type: 'wait_for_event', config: { event: release, match: {}, timeoutMinutes: 5 }, next: 'status' },
      { id: 'status', type: 'set', config: { values: { status: 'delivered' } } }
    ]
  })
  provider.reset()
  provider.script({ toolCalls: [{ name: 'order_status', arguments: { orderId: 'R-1' } }] }, { reply: 'R-1 was delivered.' })
  const workflowId = await client.createWorkflow(token, { name: 'agent waiting', nodes: [{ id: 'agent', type: 'ai_agent', config: { input: 'R-1?', tools: [slowTool] } }] })
  const runId = await client.fire(token, workflowId)
  const waiting = await client.runReaching(token, runId, ['WAITING'], { timeoutMs: 30_000 })
  t.match(waiting.result.agent.waitingFor, [{ name: 'order_status' }])
  const renamed = await call('PATCH', `/api/automation/workflows/${slowTool}`, { token, body: { name: 'Order lookup', triggerConfig: { description: 'An order.', inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } } } })
  t.equal(renamed.status, 200)
  t.equal((await call('POST', '/api/automation/events', { token, body: { name: release, payload: {} } })).status, 202)
  const run = await client.runReaching(token, runId, undefined, { timeoutMs: 60_000 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  const [step] = run.result.agent.steps.filter((candidate: { type: string }) => candidate.type === 'tool')
  t.match(step, { name: 'order_status', status: 'succeeded', result: /"status":"delivered"/ }, 'the routed call\'s run, not a refusal')
})
