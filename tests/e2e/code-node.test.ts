import t from 'tap'
import { freePort, startStack } from '@switchboard/testing/processes'

/**
 * The code node (README, Code) through the front door: real api and worker processes, the
 * worker's sandbox threads, and the hostile code its bounds are for.
 */

const workerPort = await freePort()
// A short CPU limit keeps the endless cases quick; the default is 1000 ms.
const CPU_MS = 300
const stack = await startStack(t, { env: { WORKER_HTTP_PORT: String(workerPort), CODE_CPU_MS: String(CPU_MS), CODE_SANDBOX_THREADS: '2' } })
const token = await stack.adminToken()
const { client, call } = stack

const codeNode = (code: string, id = 'js') => ({ id, type: 'code', config: { code } })

t.test('a code node reads the run so far as input, returns its output, and its console lines reach the run log', async (t) => {
  const run = await client.runWorkflow(token, {
    nodes: [
      { id: 'prices', type: 'set', config: { values: { tax: 0.2 } }, next: 'js' },
      {
        ...codeNode([
          'const lines = input.triggerData.lines',
          'const net = lines.reduce((sum, line) => sum + line.qty * line.price, 0)',
          'console.log("lines", lines.length)',
          'console.warn("net", net)',
          'return { net, gross: Math.round(net * (1 + input.prices.tax) * 100) / 100, at: typeof Date.now(), later: await Promise.resolve("awaited") }'
        ].join('\n'))
      }
    ]
  }, { lines: [{ qty: 2, price: 10 }, { qty: 1, price: 5.5 }] })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.js, { net: 25.5, gross: 30.6, at: 'number', later: 'awaited' })
  const lines = run.logs.filter((line) => line.nodeId === 'js').map((line) => `${line.level} ${line.message}`)
  t.ok(lines.includes('INFO lines 2') && lines.indexOf('WARN net 25.5') > lines.indexOf('INFO lines 2'), lines.join('; '))
})

t.test('a syntax error is a 400 when the workflow is saved, naming the node and the line', async (t) => {
  const res = await call('POST', '/api/automation/workflows', {
    token,
    body: { name: 'broken', triggerType: 'MANUAL', nodes: [codeNode('const a = 1\nconst b = ;\nreturn a')] }
  })
  t.equal(res.status, 400)
  t.match(res.body, { code: 'VALIDATION_ERROR', message: /^Node js: code line 2: SyntaxError: / })
  const tooLarge = await call('POST', '/api/automation/workflows', {
    token,
    body: { name: 'huge', triggerType: 'MANUAL', nodes: [codeNode(`return 1 // ${'x'.repeat(70 * 1024)}`)] }
  })
  t.equal(tooLarge.status, 400)
  t.match(tooLarge.body, { message: 'Node js: code line 1: Code is larger than 65536 bytes (CODE_MAX_BYTES)' })
})

t.test('hostile code fails its own node with a clear message and harms nothing else', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['endless', 'while (true) {}', new RegExp(`^Code ran longer than ${CPU_MS} ms \\(CODE_CPU_MS\\)$`)],
    // One allocation past the limit, in milliseconds: memory used up in many small allocations can take
    // longer than this file's short CODE_CPU_MS on a loaded machine, and is packages/core's code-sandbox test.
    ['huge string', 'return "x".repeat(100 * 1024 * 1024).length', /^Code used more than 32 MiB of memory \(CODE_MEMORY_BYTES\)$/],
    ['recursion', 'function down (n) { return down(n + 1) + 1 }\nreturn down(0)', /^Stack overflow/],
    ['require', 'return require("fs")', /^ReferenceError: 'require' is not defined \(line 1\)$/],
    ['process', 'return process.env', /^ReferenceError: 'process' is not defined \(line 1\)$/],
    ['dynamic import', 'return await import("fs")', /^ReferenceError: could not load module 'fs'/],
    ['timers', 'setTimeout(() => {}, 1)', /^ReferenceError: 'setTimeout' is not defined/],
    ['network', 'return await fetch("http://127.0.0.1/")', /^ReferenceError: 'fetch' is not defined/],
    ['output', 'return () => 1', /^Output is not JSON/]
  ]
  for (const [name, code, error] of cases) {
    const run = await client.runWorkflow(token, { nodes: [codeNode(code)] }, {}, { statuses: ['SUCCESS', 'FAILED'] })
    t.equal(run.status, 'FAILED', name)
    t.match(run.error, error, name)
  }
  const globals = await client.runWorkflow(token, { nodes: [codeNode('return Object.getOwnPropertyNames(globalThis).filter((name) => /^(process|require|module|exports|Buffer|fetch|setTimeout|setInterval|setImmediate|XMLHttpRequest|WebAssembly|Deno|Bun|std|os)$/.test(name))')] })
  t.equal(globals.status, 'SUCCESS', globals.error ?? '')
  t.same(globals.result.js, [], 'nothing of the host is in the sandbox')
})

t.test('what one run does to prototypes or to its input never reaches the next run or the worker', async (t) => {
  const polluting = await client.runWorkflow(token, {
    nodes: [codeNode('Object.prototype.polluted = "yes"\ninput.__proto__.viaInput = "yes"\nArray.prototype.push = () => 0\nreturn ({}).polluted')]
  })
  t.equal(polluting.status, 'SUCCESS', polluting.error ?? '')
  t.equal(polluting.result.js, 'yes', 'the pollution took inside its own run')
  for (let i = 0; i < 4; i++) {
    const clean = await client.runWorkflow(token, {
      nodes: [codeNode('const list = []\nlist.push(1)\nreturn { polluted: ({}).polluted ?? null, viaInput: ({}).viaInput ?? null, length: list.length }')]
    })
    t.same(clean.result.js, { polluted: null, viaInput: null, length: 1 }, `run ${i + 1} after it sees none of it`)
  }
  const host = await client.runWorkflow(token, { nodes: [{ id: 'plain', type: 'set', config: { values: { seen: '{{triggerData.polluted}}' } } }] })
  t.same(host.result.plain, { seen: '' }, 'the worker’s own objects are untouched')
})

t.test('1,000 code nodes in one run each add one', async (t) => {
  const nodes = Array.from({ length: 1000 }, (_, i) => ({
    ...codeNode(i === 0 ? 'return 1' : `return input.c${i - 1} + 1`, `c${i}`),
    ...(i < 999 && { next: `c${i + 1}` })
  }))
  const run = await client.runWorkflow(token, { nodes }, {}, { timeoutMs: 90_000 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.equal(run.result.c999, 1000)
})

t.test('50 runs of endless code at once: the api and worker answer their probes, another user\'s runs go on', async (t) => {
  const heavy = await client.createWorkflow(token, { name: 'heavy', nodes: [codeNode('while (true) {}')] })
  const other = await client.newUser(token)
  const light = await client.createWorkflow(other.token, { name: 'light', nodes: [{ id: 'hello', type: 'set', config: { values: { ok: true } } }] })
  // The other user uses the queue, so the fair share keeps slots for them (README, Quotas): a user
  // alone on a queue may take every slot, and code waiting for a sandbox thread holds its slot.
  t.equal((await client.runReaching(other.token, await client.fire(other.token, light), ['SUCCESS', 'FAILED'])).status, 'SUCCESS')
  const started = Date.now()
  const heavyRuns = await Promise.all(Array.from({ length: 50 }, async () => await client.fire(token, heavy)))

  const probes: number[] = []
  const lightRuns: number[] = []
  const deadline = Date.now() + 6000
  while (Date.now() < deadline) {
    for (const url of [`${stack.baseUrl}/health/live`, `http://127.0.0.1:${workerPort}/health/live`]) {
      const before = Date.now()
      const res = await fetch(url, { signal: AbortSignal.timeout(5000) })
      t.equal(res.status, 200)
      probes.push(Date.now() - before)
    }
    const before = Date.now()
    const run = await client.runReaching(other.token, await client.fire(other.token, light), ['SUCCESS', 'FAILED'])
    t.equal(run.status, 'SUCCESS')
    lightRuns.push(Date.now() - before)
  }
  t.ok(Math.max(...probes) < 2000, `every probe answered within 2 s (slowest ${Math.max(...probes)} ms)`)
  t.ok(Math.max(...lightRuns) < 2000, `the other user's ${lightRuns.length} runs each finished within 2 s (slowest ${Math.max(...lightRuns)} ms)`)

  const ended = await Promise.all(heavyRuns.map(async (runId) => await client.runReaching(token, runId, ['SUCCESS', 'FAILED'], { timeoutMs: 120_000 })))
  t.equal(ended.filter((run) => run.status === 'FAILED' && run.error === `Code ran longer than ${CPU_MS} ms (CODE_CPU_MS)`).length, 50)
  const lastEnd = Math.max(...ended.map((run) => Date.parse(run.completedAt!)))
  t.comment(`50 endless runs (${CPU_MS} ms each) ended ${lastEnd - started} ms after the first was fired, on 2 sandbox threads`)
})
