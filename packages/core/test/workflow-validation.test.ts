import t, { type Test } from 'tap'
import { DEFAULT_LIMITS } from '../src/config.ts'
import { DomainError } from '../src/errors.ts'
import type { WorkflowNode } from '../src/db/schema/index.ts'
import {
  cronTriggerOf,
  shortestCronInterval,
  validateCronExpression,
  validateTriggerConfig,
  validateWorkflowGraph
} from '../src/workflows/validation.ts'
import { FORK_MAX_NESTING, outgoingLinks } from '../src/engine/graph.ts'
import { NODE_LINK_FIELDS } from '../src/engine/nodes/index.ts'

const node = (id: string, extra: Partial<WorkflowNode> = {}): WorkflowNode => ({ id, type: 'set', config: { values: {} }, ...extra })

/** The message of the DomainError `fn` throws. */
function refusal (t: Test, fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    t.type(err, DomainError)
    return (err as DomainError).message
  }
  t.fail('expected a DomainError')
  return ''
}

t.test('a valid graph passes: chains, branches, edges, waits, an empty workflow', async (t) => {
  t.doesNotThrow(() => validateWorkflowGraph([], undefined))
  t.doesNotThrow(() => validateWorkflowGraph([
    node('check', { type: 'condition', config: { field: 'triggerData.body.event', cases: { paid: 'thank' }, default: 'later', then: 'thank' } }),
    node('thank', { type: 'send_chat', config: { phone: '1', text: 'hi' } }),
    node('later', { type: 'wait', config: { hours: 1 }, next: 'final' }),
    node('final', { type: 'http_request', config: { url: 'https://example.com' } })
  ], [{ source: 'thank', target: 'final', sourceHandle: null }]))
  // The same node reached from two branches is a diamond, not a cycle.
  t.doesNotThrow(() => validateWorkflowGraph([
    node('a', { type: 'condition', config: { field: 'x', then: 'b', else: 'c' } }),
    node('b', { next: 'd' }),
    node('c', { next: 'd' }),
    node('d')
  ], null))
})

t.test('node types and ids', async (t) => {
  t.equal(refusal(t, () => validateWorkflowGraph([node('n1', { type: 'foo' })], [])), 'Unknown node type: foo')
  t.equal(refusal(t, () => validateWorkflowGraph([node('n1'), node('n2'), node('n1')], [])), 'Duplicate node id: n1')
})

t.test('links must reach existing nodes', async (t) => {
  t.equal(refusal(t, () => validateWorkflowGraph([node('n1', { next: 'n9' })], [])), 'Node n1: next refers to missing node n9')
  const condition = (config: Record<string, unknown>): WorkflowNode[] => [node('n1', { type: 'condition', config: { field: 'x', ...config } }), node('n2')]
  t.equal(refusal(t, () => validateWorkflowGraph(condition({ then: 'n9' }), [])), 'Node n1: then refers to missing node n9')
  t.equal(refusal(t, () => validateWorkflowGraph(condition({ else: 'n8' }), [])), 'Node n1: else refers to missing node n8')
  t.equal(refusal(t, () => validateWorkflowGraph(condition({ cases: { gold: 'n2', silver: 'n7' } }), [])), 'Node n1: cases.silver refers to missing node n7')
  t.equal(refusal(t, () => validateWorkflowGraph(condition({ default: 'n6' }), [])), 'Node n1: default refers to missing node n6')
  t.equal(refusal(t, () => validateWorkflowGraph(condition({ then: 5 }), [])), 'Node n1: then must be a node id')
  t.equal(refusal(t, () => validateWorkflowGraph(condition({ cases: ['n2'] }), [])), 'Node n1: cases must map values to node ids')
  t.equal(refusal(t, () => validateWorkflowGraph([node('n1')], [{ source: 'n1', target: 'n5' }])), 'Edge 0: target refers to missing node n5')
  t.equal(refusal(t, () => validateWorkflowGraph([node('n1')], [{ source: 'n4', target: 'n1' }])), 'Edge 0: source refers to missing node n4')
  t.equal(refusal(t, () => validateWorkflowGraph([node('n1')], { source: 'n1' })), 'edges must be an array')
  t.equal(refusal(t, () => validateWorkflowGraph([node('n1')], [{ source: 'n1' }])), 'edges[0].target is required')
})

t.test('cycles are refused wherever their links are declared', async (t) => {
  t.equal(refusal(t, () => validateWorkflowGraph([node('n1', { next: 'n2' }), node('n2', { next: 'n3' }), node('n3', { next: 'n2' })], [])),
    'Workflow graph has a cycle at n2')
  t.equal(refusal(t, () => validateWorkflowGraph([node('n1', { next: 'n1' })], [])), 'Workflow graph has a cycle at n1')
  t.equal(refusal(t, () => validateWorkflowGraph([
    node('n1', { type: 'condition', config: { field: 'x', then: 'n2' } }),
    node('n2', { type: 'wait', config: { seconds: 1 } })
  ], [{ source: 'n2', target: 'n1' }])), 'Workflow graph has a cycle at n1', 'a wait inside the loop does not make it legal')
  t.equal(refusal(t, () => validateWorkflowGraph([
    node('n1', { type: 'condition', config: { field: 'x', cases: { a: 'n2' } } }),
    node('n2', { next: 'n1' })
  ], [])), 'Workflow graph has a cycle at n1')
})

t.test('a long chain is checked without exhausting the stack', async (t) => {
  const nodes = Array.from({ length: 50_000 }, (_, i) => node(`n${i}`, i < 49_999 ? { next: `n${i + 1}` } : {}))
  // WORKFLOW_MAX_NODES may be set up to 100,000.
  t.doesNotThrow(() => validateWorkflowGraph(nodes, [], { ...DEFAULT_LIMITS, workflowMaxNodes: 100_000 }))
})

t.test('outgoing links follow the engine order: branches, next, edges', async (t) => {
  const condition = node('c', { type: 'condition', config: { field: 'x', then: 'a', else: 'b', cases: { k: 'd' }, default: 'e' }, next: 'f' })
  t.same(outgoingLinks(condition, [{ source: 'c', target: 'g' }, { source: 'z', target: 'c' }], NODE_LINK_FIELDS).map((link) => `${link.via}:${link.target}`),
    ['then:a', 'else:b', 'cases.k:d', 'default:e', 'next:f', 'edges[0]:g'])
})

t.test('a node\'s edges without a sourceHandle fork (edge rule all): their branches meet at one merge or none, at most 10, nested at most FORK_MAX_NESTING deep', async (t) => {
  const fanOut = (targets: string[]) => targets.map((target) => ({ source: 'a', target }))
  t.doesNotThrow(() => validateWorkflowGraph([node('a'), node('b'), node('c')], fanOut(['b', 'c'])), 'no merge: each branch ends on its own')
  t.doesNotThrow(() => validateWorkflowGraph([node('a'), node('b', { next: 'm' }), node('c', { next: 'm' }), node('m', { type: 'merge', config: {} })], fanOut(['b', 'c'])))
  const half = [node('a'), node('b', { next: 'm' }), node('c'), node('m', { type: 'merge', config: {} })]
  t.equal(refusal(t, () => validateWorkflowGraph(half, fanOut(['b', 'c']))),
    'Node a: branch c never reaches merge m, which its other branches reach: a node\'s edges without a sourceHandle run every target, and the branches meet at one merge or none')
  t.equal(refusal(t, () => validateWorkflowGraph(half, fanOut(['b', 'c']), DEFAULT_LIMITS, 'first')), 'Node m: merge is not reached by the branches of any parallel node',
    'under first the edges are followed one at a time: no fork, so the merge is nobody\'s')
  const wide = Array.from({ length: 11 }, (_, i) => `n${i}`)
  t.equal(refusal(t, () => validateWorkflowGraph([node('a'), ...wide.map((id) => node(id))], fanOut(wide))), 'Node a: its edges without a sourceHandle run 11 targets at once, more than 10')
  // Four levels: a parallel whose branch forks by edges, whose branch holds a parallel, whose branch forks by edges.
  const nested = [
    node('p1', { type: 'parallel', config: { branches: ['e2', 'x1'] } }),
    node('e2'), node('x1', { next: 'm1' }),
    node('p3', { type: 'parallel', config: { branches: ['e4', 'x3'] } }), node('x2', { next: 'm2' }),
    node('e4'), node('x3', { next: 'm3' }), node('y4', { next: 'm3' }), node('z4', { next: 'm3' }),
    node('m3', { type: 'merge', config: {} }),
    node('m2', { type: 'merge', config: {}, next: 'm1' }),
    node('m1', { type: 'merge', config: {} })
  ]
  const edges = [{ source: 'e2', target: 'p3' }, { source: 'e2', target: 'x2' }, { source: 'm3', target: 'm2' }, { source: 'e4', target: 'y4' }, { source: 'e4', target: 'z4' }]
  t.equal(refusal(t, () => validateWorkflowGraph(nested, edges)), `Node e4: branches nest deeper than ${FORK_MAX_NESTING} levels (a parallel node, or a node whose edges run several targets, inside a branch of another, at most ${FORK_MAX_NESTING} deep)`)
  t.doesNotThrow(() => validateWorkflowGraph(nested.map((n) => n.id === 'e4' ? { ...n, next: 'y4' } : n), edges), 'three levels: e4 follows its next, not its edges')
})

t.test('cron expressions: 5 or 6 fields, in a timezone', async (t) => {
  const from = new Date('2030-01-01T00:00:00Z')
  t.same(validateCronExpression('*/5 * * * *', 'UTC', from), new Date('2030-01-01T00:05:00Z'))
  t.same(validateCronExpression('30 * * * * *', 'UTC', from), new Date('2030-01-01T00:00:30Z'))
  t.same(validateCronExpression('0 9 * * *', 'America/New_York', from), new Date('2030-01-01T14:00:00Z'))
  t.equal(refusal(t, () => validateCronExpression('61 * * * *')), 'Invalid cron expression: Constraint error, got value 61 expected range 0-59')
  t.equal(refusal(t, () => validateCronExpression('* * *')), 'Invalid cron expression: expected 5 or 6 fields, got 3')
  t.equal(refusal(t, () => validateCronExpression('* * * * * * *')), 'Invalid cron expression: expected 5 or 6 fields, got 7')
  t.match(refusal(t, () => validateCronExpression('0 0 30 2 *')), /^Invalid cron expression: /)
  t.equal(refusal(t, () => validateCronExpression('* * * * *', 'Mars/Olympus_Mons')), 'Invalid timezone: Mars/Olympus_Mons')
})

t.test('trigger configs', async (t) => {
  t.doesNotThrow(() => validateTriggerConfig('CRON', {}), 'a CRON draft without an expression')
  t.doesNotThrow(() => validateTriggerConfig('CRON', { cronExpression: '0 * * * *', timezone: 'Asia/Tokyo' }))
  t.match(refusal(t, () => validateTriggerConfig('CRON', { cronExpression: 'nope nope nope nope nope' })), /^Invalid cron expression: .*nope/)
  t.equal(refusal(t, () => validateTriggerConfig('CRON', { cronExpression: 5 })), 'Invalid cron expression: must be a string')
  t.equal(refusal(t, () => validateTriggerConfig('CRON', { cronExpression: '0 * * * *', timezone: 'Nowhere/Land' })), 'Invalid timezone: Nowhere/Land')
  t.doesNotThrow(() => validateTriggerConfig('MANUAL', { cronExpression: 'ignored' }), 'only CRON reads cronExpression')
  t.equal(refusal(t, () => validateTriggerConfig('EVENT', { eventName: 3 })), 'triggerConfig.eventName must be a string')
  t.equal(refusal(t, () => validateTriggerConfig('KEYWORD', { keywords: 'hi' })), 'triggerConfig.keywords must be an array of strings')
  t.equal(refusal(t, () => validateTriggerConfig('KEYWORD', { keywords: ['hi'], match: 'fuzzy' })), 'triggerConfig.match must be one of contains, exact, startsWith')
})

t.test('cronTriggerOf reads the schedule a CRON workflow declares', async (t) => {
  t.same(cronTriggerOf('CRON', { cronExpression: '0 * * * *' }), { cronExpression: '0 * * * *', timezone: 'UTC' })
  t.same(cronTriggerOf('CRON', { cronExpression: '0 * * * *', timezone: 'Europe/Paris' }), { cronExpression: '0 * * * *', timezone: 'Europe/Paris' })
  t.equal(cronTriggerOf('CRON', {}), null)
  t.equal(cronTriggerOf('EVENT', { cronExpression: '0 * * * *' }), null)
})

t.test('a literal matches pattern must be a valid RE2 pattern; a template is checked when the node runs', async (t) => {
  const condition = (value: unknown, operator = 'matches'): WorkflowNode => node('check', { type: 'condition', config: { field: 'triggerData.text', operator, value } })
  for (const value of ['^order-\\d+$', '(?i)yes|no', 42, '{{triggerData.pattern}}', undefined]) {
    t.doesNotThrow(() => validateWorkflowGraph([condition(value)], []), String(value))
  }
  t.doesNotThrow(() => validateWorkflowGraph([condition('(a)\\1', 'equals')], []), 'only matches reads a pattern')
  try {
    validateWorkflowGraph([condition('^(a|a)*$\\1')], [])
    t.fail('expected a 400')
  } catch (err) {
    t.match(err, { code: 'VALIDATION_ERROR', message: 'Node check: value is not a valid regular expression (RE2 syntax): invalid escape sequence: `\\1`' })
  }
  t.equal(refusal(t, () => validateWorkflowGraph([condition('a(?=b)')], [])), 'Node check: value is not a valid regular expression (RE2 syntax): invalid or unsupported Perl syntax: `(?=`')
  t.equal(refusal(t, () => validateWorkflowGraph([condition('[ab]{1000}')], [])), 'Node check: value is not a usable regular expression: it compiles to 1002 instructions, more than 500')
})

t.test('shortestCronInterval: the shortest time between two ticks', async (t) => {
  const cases: Array<[string, number]> = [
    ['* * * * * *', 1],
    ['0-5 * * * * *', 1],
    ['*/10 * * * * *', 10],
    ['0,50 * * * * *', 10],
    ['59 * * * * *', 60],
    ['* * * * *', 60],
    ['*/5 * * * *', 300],
    ['0 0,23 * * *', 3600],
    ['0 9 * * 1-5', 86_400],
    ['0 0 L * *', 86_400]
  ]
  for (const [expression, seconds] of cases) t.equal(shortestCronInterval(expression), seconds, expression)
})

t.test('limits: nodes per workflow and cron frequency', async (t) => {
  const chain = (length: number): WorkflowNode[] => Array.from({ length }, (_, i) => node(`n${i}`))
  t.doesNotThrow(() => validateWorkflowGraph(chain(DEFAULT_LIMITS.workflowMaxNodes), []))
  t.equal(refusal(t, () => validateWorkflowGraph(chain(DEFAULT_LIMITS.workflowMaxNodes + 1), [])), 'Workflow has too many nodes (max 2000)')
  t.equal(refusal(t, () => validateWorkflowGraph(chain(4), [], { ...DEFAULT_LIMITS, workflowMaxNodes: 3 })), 'Workflow has too many nodes (max 3)')

  t.equal(refusal(t, () => validateTriggerConfig('CRON', { cronExpression: '* * * * * *' })), 'Cron expression fires too often (minimum interval 60 seconds)')
  t.equal(refusal(t, () => validateTriggerConfig('CRON', { cronExpression: '0,30 * * * * *' })), 'Cron expression fires too often (minimum interval 60 seconds)')
  t.doesNotThrow(() => validateTriggerConfig('CRON', { cronExpression: '15 * * * * *' }), 'six fields, once a minute')
  const every10s = { ...DEFAULT_LIMITS, cronMinIntervalSeconds: 10 }
  t.doesNotThrow(() => validateTriggerConfig('CRON', { cronExpression: '*/10 * * * * *' }, every10s))
  t.equal(refusal(t, () => validateTriggerConfig('CRON', { cronExpression: '*/5 * * * * *' }, every10s)), 'Cron expression fires too often (minimum interval 10 seconds)')
})

t.test('http_request idempotencyKey is true or false', async (t) => {
  const call = (idempotencyKey: unknown): WorkflowNode => node('call', { type: 'http_request', config: { url: 'https://example.com', idempotencyKey } })
  for (const value of [true, false, undefined, null]) t.doesNotThrow(() => validateWorkflowGraph([call(value)], []), String(value))
  for (const value of ['false', 0, 'run-1', {}]) {
    t.match(refusal(t, () => validateWorkflowGraph([call(value)], [])), 'Node call: idempotencyKey must be true or false', JSON.stringify(value))
  }
})
