import t from 'tap'
import { agentProgress, agentViewOf, shortened } from '../../apps/console/src/agent-steps.ts'
import { firstLine } from '../../apps/console/src/format.ts'
import { inChildRunsOf, inChildRunsText, nodeErrorsOf } from '../../apps/console/src/graph.ts'
import { describeNodeTypes } from '@switchboard/core/engine'
import { fieldsOf, startingConfig } from '../../apps/console/src/nodes.ts'
import { placeholderCount, templatePreview } from '../../apps/console/src/template-preview.ts'
import { attributesOf, attributesText, labelsOf } from '../../apps/console/src/contact-form.ts'
import { groupRuns, runKind } from '../../apps/console/src/run-list.ts'
import type { NodeTypeInfo, RunLog } from '../../apps/console/src/types.ts'
import { describeChange, diffVersions, isEmptyDiff } from '../../apps/console/src/version-diff.ts'

/** The console's pure readings of runs and versions: the runs list's kinds and groups, branch nodes seen from child runs, an agent's steps, the version diff. */

const started = { parentRunId: null, retriedFrom: null, test: false }

t.test('a run\'s kind: marked (child, retry, test), else read from the trigger type and the triggerData the trigger wrote', async (t) => {
  t.equal(runKind({ ...started, parentRunId: 'p', test: true, triggerData: {} }, 'MANUAL'), 'child')
  t.equal(runKind({ ...started, retriedFrom: 'r', triggerData: {} }, 'WEBHOOK'), 'retry')
  t.equal(runKind({ ...started, test: true, triggerData: {} }, 'WEBHOOK'), 'test')
  t.equal(runKind({ ...started, triggerData: { body: {}, headers: {}, query: {} } }, 'WEBHOOK'), 'webhook')
  t.equal(runKind({ ...started, triggerData: { amount: 5 } }, 'WEBHOOK'), 'fire', 'a fire of a webhook workflow')
  t.equal(runKind({ ...started, triggerData: { scheduledAt: '2026-11-30T09:00:00.000Z', cronExpression: '0 9 * * *' } }, 'CRON'), 'cron')
  t.equal(runKind({ ...started, triggerData: {} }, 'CRON'), 'fire')
  t.equal(runKind({ ...started, triggerData: { wamid: 'wamid.1', keyword: 'hi' } }, 'KEYWORD'), 'chat')
  t.equal(runKind({ ...started, triggerData: { wamid: 'wamid.1' } }, 'EVENT'), 'chat', 'chat.message.received')
  t.equal(runKind({ ...started, triggerData: { orderId: 1 } }, 'EVENT'), 'event')
  t.equal(runKind({ ...started, triggerData: null }, 'AGENT'), 'assistant')
  t.equal(runKind({ ...started, triggerData: null }, 'MANUAL'), 'fire')
  t.equal(runKind({ ...started, triggerData: null }, undefined), 'unknown', 'a workflow the list does not hold')
})

t.test('child runs are grouped under the topmost ancestor listed; a parent not listed still groups its children', async (t) => {
  const run = (id: string, parentRunId: string | null = null) => ({ id, parentRunId })
  // Newest first, as the list comes: children before their parent.
  const runs = [run('c1', 'p'), run('x'), run('g1', 'c1'), run('c2', 'p'), run('p'), run('o1', 'gone'), run('y'), run('o2', 'gone')]
  t.same(groupRuns(runs).map((group) => ({ id: group.id, head: group.run?.id, children: group.children.map((child) => child.id) })), [
    { id: 'x', head: 'x', children: [] },
    { id: 'p', head: 'p', children: ['c1', 'g1', 'c2'] },
    { id: 'gone', head: undefined, children: ['o1', 'o2'] },
    { id: 'y', head: 'y', children: [] }
  ], 'a group stands where its parent does, or its first child when the parent is not listed')
})

t.test('an error in little room: its first line, cut', async (t) => {
  t.equal(firstLine('Blocked request'), 'Blocked request')
  t.equal(firstLine('Total missing\n  at line 2'), 'Total missing …')
  t.equal(firstLine('x'.repeat(100), 10), `${'x'.repeat(9)}…`)
})

const log = (nodeId: string | null, level: RunLog['level'], message: string): RunLog => ({ id: message, nodeId, level, message, createdAt: '2026-11-30T00:00:00.000Z' })

t.test('branch nodes are read from the child runs they ran in, with their states and the first failure', async (t) => {
  const children = [
    { id: 'b1', status: 'SUCCESS' as const, logs: [log('a', 'INFO', 'Node a (set) started'), log('a', 'INFO', 'Node a completed in 1ms')] },
    { id: 'b2', status: 'FAILED' as const, logs: [log('b', 'INFO', 'Node b (code) started'), log('b', 'ERROR', 'Node b failed after 3ms: no stock for sku 42\nsecond line'), log(null, 'ERROR', 'Run failed: no stock')] },
    { id: 'b3', status: 'WAITING' as const, logs: [log('a', 'INFO', 'Node a (set) started')] }
  ]
  const nodes = inChildRunsOf(children)
  t.same(nodes.get('a'), { runs: [{ id: 'b1', state: 'done' }, { id: 'b3', state: 'current' }], error: undefined })
  t.same(nodes.get('b'), { runs: [{ id: 'b2', state: 'failed' }], error: { runId: 'b2', message: 'no stock for sku 42\nsecond line' } })
  t.equal(inChildRunsText(nodes.get('a')!), 'running in 1 of 2 child runs')
  t.equal(inChildRunsText(nodes.get('b')!), 'failed in 1 of 1 child run')
  t.equal(inChildRunsText({ runs: [{ id: 'b1', state: 'done' }, { id: 'b4', state: 'done' }], error: undefined }), 'ran in 2 child runs')
  t.same([...nodeErrorsOf(children[1]!.logs)], [['b', 'no stock for sku 42\nsecond line']], 'the engine\'s prefix is dropped; run lines have no node')
})

t.test('versions differ field by field: trigger, nodes added and removed, types, links, config paths, edges; positions aside', async (t) => {
  const linkFields = { condition: [{ field: 'then', kind: 'node' }, { field: 'else', kind: 'node' }] } as const
  const before = {
    triggerType: 'MANUAL' as const,
    triggerConfig: {},
    nodes: [
      { id: 'check', type: 'condition', config: { field: 'total', value: 100, then: 'big', else: 'small' }, position: { x: 0, y: 0 } },
      { id: 'big', type: 'set', config: { values: { lane: 'big', keep: 1 } }, next: 'done' },
      { id: 'small', type: 'set', config: { values: { lane: 'small' } } },
      { id: 'done', type: 'set' }
    ],
    edges: [{ source: 'a', target: 'b' }]
  }
  const after = {
    triggerType: 'WEBHOOK' as const,
    triggerConfig: { secret: 'x' },
    nodes: [
      { id: 'check', type: 'condition', config: { field: 'total', value: 500, then: 'huge', else: 'small' }, position: { x: 90, y: 10 } },
      { id: 'big', type: 'code', config: { values: { lane: 'BIG', keep: 1 }, retry: { attempts: 2 } } },
      { id: 'small', type: 'set', config: { values: { lane: 'small' } }, position: { x: 5, y: 5 } },
      { id: 'huge', type: 'set' }
    ],
    edges: null
  }
  const diff = diffVersions(before, after, linkFields)
  t.same(diff.trigger.map(describeChange), ['triggerType: "MANUAL" → "WEBHOOK"', 'triggerConfig.secret set to "x"'])
  t.same(diff.nodes.map((node) => [node.change, node.id, node.type, node.fields.map(describeChange)]), [
    ['changed', 'check', 'condition', ['value: 100 → 500', 'link then: "big" → "huge"']],
    ['changed', 'big', 'code', ['type: "set" → "code"', 'link next removed (was "done")', 'values.lane: "big" → "BIG"', 'retry set to {"attempts":2}']],
    ['added', 'huge', 'set', []],
    ['removed', 'done', 'set', []]
  ], 'small moved only: not listed')
  t.same([diff.edgesAdded, diff.edgesRemoved], [[], ['a → b']])
  t.ok(isEmptyDiff(diffVersions(before, { ...before, nodes: before.nodes.map((node) => ({ ...node, position: { x: 1, y: 2 } })) }, linkFields)), 'positions only')
  t.equal(describeChange({ field: 'code', kind: 'config', before: 'x'.repeat(100), after: 'y' }), `code: "${'x'.repeat(58)}… → "y"`, 'long values are cut')
})

t.test('a node added in the builder starts with its required defaults, and a merge joins by node id', async (t) => {
  const nodeType = (type: string, configSchema: NodeTypeInfo['configSchema']) => ({ type, configSchema }) as unknown as NodeTypeInfo
  const schema = { type: 'object', required: ['method'], properties: { method: { type: 'string', default: 'GET' }, url: { type: 'string', default: 'x' } } }
  t.same(startingConfig(nodeType('http_request', schema)), { method: 'GET' }, 'an optional field\'s default is left to the api')
  t.same(startingConfig(nodeType('merge', { type: 'object', properties: { output: { type: 'string', default: 'byBranch' } } })), { output: 'byNode' })
})

t.test('the builder offers flows: the type and the expects suggested, the flow a JSON field with its example', async (t) => {
  const fields = (type: string) => fieldsOf(describeNodeTypes().find((candidate) => candidate.type === type) as unknown as NodeTypeInfo)
  const interactive = fields('send_chat_interactive')
  t.same(interactive.find((field) => field.name === 'type')?.suggestions, ['button', 'list', 'flow'])
  t.match(interactive.find((field) => field.name === 'flow'), { kind: 'json', templated: true, example: { id: '1234567890', cta: 'Book a table', screen: 'BOOKING' } })
  const ask = fields('ask')
  t.match(ask.find((field) => field.name === 'expect')?.suggestions, ['text', 'number', 'email', 'phone', 'date', 'choice', 'media', 'pattern', 'location', 'flow'])
  t.match(ask.find((field) => field.name === 'flow'), { kind: 'json', example: { cta: 'Book a table' } })
})

t.test('a contact\'s labels and attributes as typed in its form', async (t) => {
  t.same(labelsOf(' vip, newsletter,,vip , '), ['vip', 'newsletter'], 'trimmed, empty ones and repeats dropped')
  t.same(attributesOf('plan = gold\n\ncity=Lisbon = centre\nflag'), { plan: 'gold', city: 'Lisbon = centre', flag: '' }, 'split at the first =; a bare name is an empty value')
  t.same(attributesOf(attributesText({ plan: 'gold', city: 'Lisbon' })), { plan: 'gold', city: 'Lisbon' }, 'what the form shows reads back the same')
})

t.test('a template as the customer reads it: its body\'s {{n}} filled, an empty value kept as {{n}}', async (t) => {
  const template = {
    id: '1',
    name: 'order_update',
    language: 'en_US',
    status: 'APPROVED',
    components: [{ type: 'HEADER', text: 'Shipping' }, { type: 'BODY', text: 'Hi {{1}}, order {{2}} left; {{1}}, thanks!' }, { type: 'FOOTER', text: 'Ana’s shop' }, { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'Track' }] }]
  }
  t.equal(placeholderCount(template), 2, 'each placeholder once')
  t.same(templatePreview(template, ['Rita', 'A-12']), { header: 'Shipping', body: 'Hi Rita, order A-12 left; Rita, thanks!', footer: 'Ana’s shop', buttons: ['Track'] })
  t.equal(templatePreview(template, ['Rita']).body, 'Hi Rita, order {{2}} left; Rita, thanks!')
  t.equal(placeholderCount(undefined), 0)
})

t.test('an ai_agent node\'s steps, from its output while it waits and once it answered; a step without the shape left out', async (t) => {
  const call = { type: 'model', text: null, toolCalls: [{ id: 'c1', name: 'order_status', arguments: '{"orderId":"A-1"}' }], model: 'm', tokensIn: 40, tokensOut: 8 }
  const waiting = agentViewOf({ agentOfRun: 'r1', steps: [call, { type: 'model', text: 7 }], waitingFor: [{ name: 'order_status', runId: 'r2' }, { name: 'no run' }], until: '2026-12-01T00:00:00.000Z' })
  t.same(waiting, { steps: [call], waitingFor: [{ name: 'order_status', runId: 'r2' }], answered: false })
  t.equal(agentProgress(waiting!), '1 model call, 1 tool call; waiting for order_status')
  const tool = { type: 'tool', callId: 'c1', name: 'order_status', status: 'succeeded', result: '{"lookup":{"status":"shipped"}}', runId: 'r2' }
  const answer = { type: 'model', text: 'Shipped.', toolCalls: [], model: 'm', tokensIn: 60, tokensOut: 3 }
  const answered = agentViewOf({ text: 'Shipped.', steps: [call, tool, { ...tool, status: 'lost' }, answer], model: 'm', tokensIn: 100, tokensOut: 11 })
  t.same(answered, { steps: [call, tool, answer], waitingFor: [], answered: true }, 'a tool step of an unknown status left out')
  t.equal(agentProgress(answered!), '2 model calls, 1 tool call')
  t.same(agentViewOf({ agentOfRun: 'r1', steps: [{ ...tool, status: 'refused', runId: undefined }] })?.steps, [{ ...tool, status: 'refused', runId: null }], 'a refused call: no run')
  t.equal(agentViewOf({ text: 'not an agent' }), undefined)
  t.equal(agentViewOf(null), undefined)
  t.equal(shortened('{"a":1}', 7), '{"a":1}', 'short enough: as it is')
  t.equal(shortened('{"a":12}', 7), '{"a":1…', 'cut, and says so')
})
