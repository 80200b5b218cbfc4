import t from 'tap'
import { freePort, startStack } from '@switchboard/testing/processes'
import { probeUntil } from '@switchboard/testing/probes'

/**
 * A code node's `input` (README, Code) through the front door: a lazy, read-only view of the run,
 * read as code reads a plain object (a key computed at run time, its keys, `in`, nested fields,
 * JSON.stringify), whose changes throw and so never reach a later node; and the measured scenario
 * of issue 36 (item 5) in small form: code nodes after large outputs that they do not all read.
 * tests/reliability/code-input-memory.test.ts runs it at full size.
 */

const workerPort = await freePort()
const stack = await startStack(t, { env: { WORKER_HTTP_PORT: String(workerPort) } })
const token = await stack.adminToken()
const { client } = stack

const codeNode = (id: string, code: string, next?: string) => ({ id, type: 'code', config: { code }, ...(next !== undefined && { next }) })
const READ_ONLY = 'TypeError: input is read-only: build the output in an object of your own'

t.test('a code node reads the run by a key computed at run time, its keys, `in` and nested fields', async (t) => {
  const run = await client.runWorkflow(token, {
    nodes: [
      { id: 'prices', type: 'set', config: { values: { tax: 0.2, lines: [{ qty: 2, sku: 'a' }] } }, next: 'js' },
      codeNode('js', [
        'const key = input.triggerData.from',
        'return {',
        '  keys: Object.keys(input),',
        '  picked: input[key].tax,',
        '  nested: input.prices.lines[0].sku,',
        '  has: ["prices" in input, "missing" in input],',
        '  text: JSON.stringify(input),',
        '  same: input.prices === input.prices',
        '}'
      ].join('\n'))
    ]
  }, { from: 'prices' })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.js, {
    keys: ['triggerData', 'prices'],
    picked: 0.2,
    nested: 'a',
    has: [true, false],
    text: JSON.stringify({ triggerData: { from: 'prices' }, prices: { tax: 0.2, lines: [{ qty: 2, sku: 'a' }] } }),
    same: true
  })
})

t.test('every change to input throws, and later nodes see the run as it was', async (t) => {
  const attempts = {
    set: 'input.prices = 1',
    add: 'input.added = 1',
    remove: 'delete input.prices',
    define: 'Object.defineProperty(input, "added", { value: 1 })',
    prototype: 'Object.setPrototypeOf(input, null)'
  }
  const tries = Object.entries(attempts).map(([name, statement]) => `try { ${statement}; out.${name} = "changed" } catch (error) { out.${name} = String(error) }`)
  const run = await client.runWorkflow(token, {
    nodes: [
      { id: 'prices', type: 'set', config: { values: { tax: 0.2 } }, next: 'writer' },
      // An entry's value is the code's own copy: changing it changes nothing outside the node.
      codeNode('writer', ['const out = {}', ...tries, 'input.prices.tax = 0.5', 'out.copy = input.prices.tax', 'return out'].join('\n'), 'reader'),
      codeNode('reader', 'return { keys: Object.keys(input), tax: input.prices.tax, writerKeys: Object.keys(input.writer) }')
    ]
  })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.writer, { set: READ_ONLY, add: READ_ONLY, remove: READ_ONLY, define: READ_ONLY, prototype: READ_ONLY, copy: 0.5 })
  t.same(run.result.reader, { keys: ['triggerData', 'prices', 'writer'], tax: 0.2, writerKeys: ['set', 'add', 'remove', 'define', 'prototype', 'copy'] })
  t.same(run.result.prices, { tax: 0.2 }, 'the run itself is untouched')
})

t.test('the scenario in small form: code nodes after 1 MB outputs read what they name, and the worker answers its probes', async (t) => {
  const nodes = [
    codeNode('big0', 'return "0".repeat(1000000)', 'big1'),
    codeNode('big1', 'return "1".repeat(1000000)', 'count'),
    codeNode('count', 'return Object.keys(input).length', 'head'),
    codeNode('head', 'const name = "big" + input.triggerData.which\nreturn input[name].slice(0, 3) + input[name].length', 'small'),
    codeNode('small', 'return input.count + input.head.length')
  ]
  const workflowId = await client.createWorkflow(token, { name: 'large outputs', nodes })
  const runIds = await Promise.all([0, 1, 0, 1].map(async (which) => await client.fire(token, workflowId, { which })))
  const ended = Promise.all(runIds.map(async (runId) => await client.runReaching(token, runId, undefined, { timeoutMs: 60_000, intervalMs: 200 })))
  // Every probe is answered 200 within 5 s, or probeUntil throws.
  const probes = await probeUntil(`http://127.0.0.1:${workerPort}/health/live`, ended, { timeoutMs: 5000 })
  const runs = await ended
  for (const [i, run] of runs.entries()) {
    t.equal(run.status, 'SUCCESS', run.error ?? '')
    t.equal(run.result.count, 3, 'triggerData and the two outputs')
    t.equal(run.result.head, `${i % 2}${i % 2}${i % 2}1000000`)
    t.equal(run.result.small, 3 + 10)
  }
  t.comment(`worker /health/live during 4 runs of two 1 MB outputs: ${probes.length} probes, slowest ${Math.round(Math.max(...probes))} ms`)
  t.ok(Math.max(...probes) < 2000, 'the worker answered every probe within 2 s')
})
