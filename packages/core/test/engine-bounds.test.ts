import { asc, eq } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { createTestEngine } from '@switchboard/testing/engine'
import { runLogs, runs, users, workflows, type WorkflowNode } from '../src/db/schema/index.ts'
import { MAX_RESPONSE_JSON_DEPTH } from '../src/engine/nodes/http-request.ts'
import { WORKFLOW_RUNS } from '../src/queues/catalog.ts'

const { db, queues } = await createCoreTestContext(t)

/** Answers `/deep` with JSON nested `levels` deep, `/big` with a JSON string of `size` characters. */
const sink = await startDeliverySink(t, {
  answer: ({ path }) => {
    const url = new URL(path, 'http://sink')
    const levels = Number(url.searchParams.get('levels'))
    const body = url.pathname === '/deep'
      ? '['.repeat(levels) + ']'.repeat(levels)
      : JSON.stringify('x'.repeat(Number(url.searchParams.get('size'))))
    return { headers: { 'content-type': 'application/json' }, body }
  }
})

const engine = createTestEngine(t, { db, queues, nodeOutputMaxBytes: 64 * 1024, runResultMaxBytes: 160 * 1024 })

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()

async function runOf (nodes: WorkflowNode[], triggerData: unknown = {}): Promise<string> {
  const [workflow] = await db.insert(workflows).values({ userId: owner!.id, name: 'bounds', triggerType: 'MANUAL', isActive: true, nodes }).returning()
  const [run] = await db.insert(runs).values({ workflowId: workflow!.id, userId: owner!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData }).returning()
  return run!.id
}
const readRun = async (id: string) => (await db.select().from(runs).where(eq(runs.id, id)))[0]!
const readLogs = async (id: string) => db.select().from(runLogs).where(eq(runLogs.runId, id)).orderBy(asc(runLogs.id))

t.test('a set node referencing a large value thousands of times fails once, quickly, with the bound in its error', async (t) => {
  const values = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`copy${i}`, '{{triggerData}}']))
  const runId = await runOf([{ id: 'amplify', type: 'set', config: { values } }], { blob: 'x'.repeat(40 * 1024) })
  const started = performance.now()
  t.equal(await engine.executeRun(runId), 'FAILED')
  t.ok(performance.now() - started < 5000, `failed in ${Math.round(performance.now() - started)}ms`)
  const run = await readRun(runId)
  t.equal(run.error, 'Rendered config exceeds 65536 bytes')
  t.notOk('amplify' in run.result)
})

t.test('an output over NODE_OUTPUT_MAX_BYTES fails its node', async (t) => {
  const runId = await runOf([{ id: 'fetch', type: 'http_request', config: { url: `${sink.url}/big?size=${70 * 1024}` } }])
  t.equal(await engine.executeRun(runId), 'FAILED')
  t.equal((await readRun(runId)).error, 'Node output exceeds 65536 bytes')
})

t.test('a result over RUN_RESULT_MAX_BYTES fails the node whose output would pass it', async (t) => {
  const chunk = { values: { text: '{{triggerData.text}}' } }
  const runId = await runOf([
    { id: 'one', type: 'set', config: chunk, next: 'two' },
    { id: 'two', type: 'set', config: chunk, next: 'three' },
    { id: 'three', type: 'set', config: chunk }
  ], { text: 'y'.repeat(40 * 1024) })
  t.equal(await engine.executeRun(runId), 'FAILED')
  const run = await readRun(runId)
  t.equal(run.error, 'Run result exceeds 163840 bytes')
  t.same(Object.keys(run.result).sort(), ['one', 'triggerData', 'two'])
})

t.test('JSON nested too deeply to store fails the node once instead of throwing from the engine', async (t) => {
  sink.deliveries.length = 0
  const deep = await runOf([{ id: 'call', type: 'http_request', config: { url: `${sink.url}/deep?levels=100000` } }])
  t.equal(await engine.executeRun(deep), 'FAILED')
  t.equal((await readRun(deep)).error, `Response body nesting is too deep: more than ${MAX_RESPONSE_JSON_DEPTH} levels`)
  t.equal(sink.deliveries.length, 1)
  t.match((await readLogs(deep)).map((line) => line.message), ['Run started', 'Node call (http_request) started', /^Calling GET .*\/deep \(attempt 1\)$/, /^Node call failed after \d+ms: Response body nesting is too deep/, /^Run failed: /])

  const allowed = await runOf([{ id: 'call', type: 'http_request', config: { url: `${sink.url}/deep?levels=${MAX_RESPONSE_JSON_DEPTH}` } }])
  t.equal(await engine.executeRun(allowed), 'SUCCESS')
})

t.test('an output JSON cannot serialize fails the node, whatever produced it', async (t) => {
  // triggerData nested deeper than anything a node may store, as an older row could hold it.
  let deep: unknown = 1
  for (let i = 0; i < 1200; i++) deep = { d: deep }
  const runId = await runOf([{ id: 'copy', type: 'set', config: { values: { deep: '{{triggerData.deep}}' } } }])
  await db.update(runs).set({ triggerData: { deep } }).where(eq(runs.id, runId))
  t.equal(await engine.executeRun(runId), 'FAILED')
  t.equal((await readRun(runId)).error, 'Rendered config cannot be serialized: it is nested more than 1000 levels deep')
})

t.test('missing template paths log at most 20 lines, each quoting at most 200 characters of the path', async (t) => {
  const values = {
    // jsonb orders keys by length: this one comes first.
    a: `{{triggerData.${'p'.repeat(5000)}}}`,
    ...Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`v${i}`, `{{triggerData.missing${i}}}`]))
  }
  const runId = await runOf([{ id: 'sparse', type: 'set', config: { values } }])
  t.equal(await engine.executeRun(runId), 'SUCCESS')
  const warnings = (await readLogs(runId)).filter((line) => line.level === 'WARN').map((line) => line.message)
  t.equal(warnings.length, 21)
  t.equal(warnings[0], `Template path not found: triggerData.${'p'.repeat(188)}…`)
  t.equal(warnings[1], 'Template path not found: triggerData.missing0')
  t.equal(warnings[20], 'Template paths not found: 981 more')
})
