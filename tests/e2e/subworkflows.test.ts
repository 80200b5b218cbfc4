import postgres from 'postgres'
import t from 'tap'
import { startStack } from '@switchboard/testing/processes'
import { FORK_MAX_NESTING } from '@switchboard/core/engine/graph'

/**
 * Child runs and approvals (packages/core/src/engine/README.md) through the front door: real api and worker
 * processes. run_workflow waits for its child or not; foreach runs a workflow per item, a few at
 * a time, and collects their outputs in order; approval waits for a decision from the resume
 * route or the public link, or its timeout.
 */

const stack = await startStack(t, { env: { SUBWORKFLOW_MAX_DEPTH: '4', FOREACH_MAX_ITEMS: '500' } })
const token = await stack.adminToken()
const { client, call } = stack
// The edge rule of a stored version is set here as migration 0030 set it for versions before it.
const sql = postgres(stack.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
t.teardown(async () => { await sql.end() })

/** A callable workflow: doubles triggerData.n (or triggerData.item.n for a loop's item). */
async function doubler (userToken = token, name = 'doubler'): Promise<string> {
  return await client.createWorkflow(userToken, {
    name,
    triggerType: 'MANUAL',
    isActive: false,
    nodes: [{ id: 'double', type: 'code', config: { code: 'const n = input.triggerData.item?.n ?? input.triggerData.n\nif (n < 0) throw new Error("negative: " + n)\nreturn { n: n * 2 }' } }]
  })
}

t.test('run_workflow waits for its child (inactive, of the same owner) and continues with its node outputs', async (t) => {
  const child = await doubler()
  const run = await client.runWorkflow(token, {
    nodes: [
      { id: 'call', type: 'run_workflow', config: { workflowId: child, input: { n: '{{triggerData.n}}' } }, next: 'after' },
      { id: 'after', type: 'set', config: { values: { doubled: '{{call.output.double.n}}' } } }
    ]
  }, { n: 21 }, { timeoutMs: 30_000 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.equal(run.result.after.doubled, 42)
  const childRun = await client.getRun(token, run.result.call.runId)
  t.equal((childRun as unknown as { parentRunId: string }).parentRunId, run.id)
  t.same(childRun.triggerData, { n: 21 })
  const parent = await call('GET', `/api/automation/runs/${run.id}`, { token })
  t.equal(parent.body.childCount, 1)
  const children = await call('GET', `/api/automation/runs?parentRunId=${run.id}`, { token })
  t.same(children.body.map((r: { id: string }) => r.id), [childRun.id])
})

t.test('run_workflow fails with its child\'s error; without waiting it goes on with the child\'s run id', async (t) => {
  const child = await doubler()
  const failed = await client.runWorkflow(token, { nodes: [{ id: 'call', type: 'run_workflow', config: { workflowId: child, input: { n: -1 } } }] }, {}, { timeoutMs: 30_000 })
  t.equal(failed.status, 'FAILED')
  t.match(failed.error, /^Sub-workflow run \(run \S+\) failed: .*negative: -1/)
  const detached = await client.runWorkflow(token, { nodes: [{ id: 'call', type: 'run_workflow', config: { workflowId: child, input: { n: 2 }, wait: false } }] })
  t.equal(detached.status, 'SUCCESS')
  const childRun = await client.runReaching(token, detached.result.call.runId)
  t.equal(childRun.status, 'SUCCESS')
  t.same(childRun.result.double, { n: 4 })
})

t.test('a workflow that is not the caller\'s, a CRON workflow, and one that calls itself end with clear errors', async (t) => {
  const other = await client.newUser(token)
  const theirs = await doubler(other.token)
  const notMine = await client.runWorkflow(other.token, { nodes: [{ id: 'call', type: 'run_workflow', config: { workflowId: await doubler() } }] })
  t.equal(notMine.status, 'FAILED')
  t.match(notMine.error, /^Workflow \S+ not found$/)
  const adminCalls = await client.runWorkflow(token, { nodes: [{ id: 'call', type: 'run_workflow', config: { workflowId: theirs, input: { n: 1 } } }] }, {}, { timeoutMs: 30_000 })
  t.equal(adminCalls.status, 'SUCCESS', 'an admin may call anyone\'s workflow')
  const cron = await client.createWorkflow(token, { triggerType: 'CRON', triggerConfig: { cron: '0 0 1 1 *' }, isActive: false })
  const callsCron = await client.runWorkflow(token, { nodes: [{ id: 'call', type: 'run_workflow', config: { workflowId: cron } }] })
  t.match(callsCron.error, /is a CRON workflow: it cannot be called$/)

  const selfCalling = await client.createWorkflow(token, { name: 'self', nodes: [{ id: 'again', type: 'set', config: { values: {} } }] })
  const updated = await call('PATCH', `/api/automation/workflows/${selfCalling}`, {
    token,
    body: { nodes: [{ id: 'again', type: 'run_workflow', config: { workflowId: selfCalling } }] }
  })
  t.equal(updated.status, 200, JSON.stringify(updated.body))
  const fired = await client.fire(token, selfCalling)
  const top = await client.runReaching(token, fired, undefined, { timeoutMs: 60_000 })
  t.equal(top.status, 'FAILED')
  t.match(top.error, /nested deeper than 4 levels \(SUBWORKFLOW_MAX_DEPTH\)/, 'the depth error travels up to the first run')
})

t.test('foreach runs a workflow per item, at most `concurrency` at a time, results in item order', async (t) => {
  const child = await doubler()
  const items = Array.from({ length: 12 }, (_, n) => ({ n }))
  const run = await client.runWorkflow(token, {
    nodes: [{ id: 'loop', type: 'foreach', config: { workflowId: child, items: '{{triggerData.items}}', concurrency: 3 } }]
  }, { items }, { timeoutMs: 60_000 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.result.loop, { total: 12, succeeded: 12, failed: 0, errors: [] })
  t.same(run.result.loop.results.map((output: { double: { n: number } }) => output.double.n), items.map(({ n }) => n * 2))
  // Each suspension adds its timer job: a refused one would fail the job and show as a retry in the log.
  t.notOk(run.logs.some((line) => /error/i.test(line.message)), run.logs.map((line) => line.message).join('\n'))
  const children = await call('GET', `/api/automation/runs?parentRunId=${run.id}&limit=500`, { token })
  t.equal(children.body.length, 12)
  // Never more than three children RUNNING at once: each child started after one of the three before it ended.
  const spans = children.body.map((r: { startedAt: string, completedAt: string }) => [Date.parse(r.startedAt), Date.parse(r.completedAt)])
  const most = Math.max(...spans.map(([start]: number[]) => spans.filter(([s, e]: number[]) => s <= start && e > start).length))
  t.ok(most <= 3, `at most 3 at once (${most})`)
})

t.test('foreach: a failed item fails the node, or with continueOnFailure is listed among the errors; over FOREACH_MAX_ITEMS is refused', async (t) => {
  const child = await doubler()
  const items = [{ n: 1 }, { n: -5 }, { n: 3 }]
  const failed = await client.runWorkflow(token, { nodes: [{ id: 'loop', type: 'foreach', config: { workflowId: child, items: '{{triggerData.items}}', concurrency: 1 } }] }, { items }, { timeoutMs: 30_000 })
  t.equal(failed.status, 'FAILED')
  t.match(failed.error, /^Item 1 \(run \S+\) failed: .*negative: -5/)
  const tolerant = await client.runWorkflow(token, { nodes: [{ id: 'loop', type: 'foreach', config: { workflowId: child, items: '{{triggerData.items}}', continueOnFailure: true } }] }, { items }, { timeoutMs: 30_000 })
  t.equal(tolerant.status, 'SUCCESS', tolerant.error ?? '')
  t.match(tolerant.result.loop, { total: 3, succeeded: 2, failed: 1, errors: [{ index: 1, status: 'FAILED' }] })
  t.same(tolerant.result.loop.results[1], null)
  const huge = await client.runWorkflow(token, { nodes: [{ id: 'loop', type: 'foreach', config: { workflowId: child, items: '{{triggerData.items}}' } }] }, { items: Array.from({ length: 501 }, () => 1) })
  t.equal(huge.status, 'FAILED')
  t.equal(huge.error, 'items has 501 items, more than 500 (FOREACH_MAX_ITEMS)')
  t.equal((await call('GET', `/api/automation/runs?parentRunId=${huge.id}`, { token })).body.length, 0, 'no child started')
})

const approvalWorkflow = (timeoutMinutes = 60) => ({
  nodes: [
    { id: 'ask', type: 'approval', config: { message: 'Refund {{triggerData.amount}}?', timeoutMinutes, rejected: 'tell', timedOut: 'late' }, next: 'pay' },
    { id: 'pay', type: 'set', config: { values: { paid: true, note: '{{ask.data.note}}' } } },
    { id: 'tell', type: 'set', config: { values: { told: true } } },
    { id: 'late', type: 'set', config: { values: { late: true } } }
  ]
})

t.test('approval: the run waits, is listed, and goes on with the approved branch; a second decision is a 409', async (t) => {
  const run = await client.runWorkflow(token, approvalWorkflow(), { amount: 40 }, { statuses: ['WAITING'] })
  t.match(run.result.ask, { status: 'waiting', message: 'Refund 40?', resumePath: /^\/webhook\/resume\/rst_/ })
  const pending = await call('GET', '/api/automation/approvals', { token })
  t.ok(pending.body.some((a: { runId: string, nodeId: string, message: string }) => a.runId === run.id && a.nodeId === 'ask' && a.message === 'Refund 40?'))

  const wrongNode = await call('POST', `/api/automation/runs/${run.id}/resume`, { token, body: { nodeId: 'pay', decision: 'approve' } })
  t.equal(wrongNode.status, 409)
  t.equal(wrongNode.body.message, 'Run is not waiting for this node')
  const other = await client.newUser(token)
  const notTheirs = await call('POST', `/api/automation/runs/${run.id}/resume`, { token: other.token, body: { nodeId: 'ask', decision: 'approve' } })
  t.equal(notTheirs.status, 404)

  const resumed = await call('POST', `/api/automation/runs/${run.id}/resume`, { token, body: { nodeId: 'ask', decision: 'approve', data: { note: 'ok by Ana' } } })
  t.equal(resumed.status, 202, JSON.stringify(resumed.body))
  t.same(resumed.body, { runId: run.id, nodeId: 'ask', decision: 'approve' })
  const done = await client.runReaching(token, run.id)
  t.equal(done.status, 'SUCCESS', done.error ?? '')
  t.match(done.result.ask, { status: 'decided', decision: 'approve', data: { note: 'ok by Ana' } })
  t.same(done.result.pay, { paid: true, note: 'ok by Ana' })
  t.notOk('tell' in done.result)
  const again = await call('POST', `/api/automation/runs/${run.id}/resume`, { token, body: { nodeId: 'ask', decision: 'reject' } })
  t.equal(again.status, 409)
  const replay = await call('POST', run.result.ask.resumePath, { body: { decision: 'reject' } })
  t.equal(replay.status, 409, 'the link is single use')
})

t.test('approval by the public link: rejected goes to its branch; a guessed token is a 404', async (t) => {
  const run = await client.runWorkflow(token, approvalWorkflow(), { amount: 7 }, { statuses: ['WAITING'] })
  const guessed = await call('POST', `/webhook/resume/rst_${'A'.repeat(43)}`, { body: {} })
  t.equal(guessed.status, 404)
  const malformed = await call('POST', '/webhook/resume/not-a-token', { body: {} })
  t.equal(malformed.status, 404)
  const rejected = await call('POST', run.result.ask.resumePath, { body: { decision: 'reject' } })
  t.equal(rejected.status, 202, JSON.stringify(rejected.body))
  const done = await client.runReaching(token, run.id)
  t.equal(done.status, 'SUCCESS')
  t.same(done.result.tell, { told: true })
  t.notOk('pay' in done.result)
})

t.test('approval: cancelling a waiting run answers later decisions with a 409; a parent cancelled cancels its waiting child', async (t) => {
  const run = await client.runWorkflow(token, approvalWorkflow(), {}, { statuses: ['WAITING'] })
  t.match(run.result.ask, { resumePath: /^\/webhook\/resume\// }, JSON.stringify(run))
  t.equal((await call('POST', `/api/automation/runs/${run.id}/cancel`, { token })).status, 200)
  t.equal((await call('POST', run.result.ask.resumePath, { body: {} })).status, 409)

  const waitingChild = await client.createWorkflow(token, { name: 'asks', isActive: false, ...approvalWorkflow() })
  const parent = await client.runWorkflow(token, { nodes: [{ id: 'call', type: 'run_workflow', config: { workflowId: waitingChild } }] }, {}, { statuses: ['WAITING'] })
  const childId = parent.result.call.runId
  await client.runReaching(token, childId, ['WAITING'])
  t.equal((await call('POST', `/api/automation/runs/${parent.id}/cancel`, { token })).status, 200)
  t.equal((await client.getRun(token, childId)).status, 'CANCELLED')
})

t.test('parallel branches run at once and meet at the merge, each branch\'s outputs joining the run\'s result', async (t) => {
  const slow = (id: string, ms: number, value: string) => ({ id, type: 'code', config: { code: `await new Promise((resolve) => resolve())\nconst until = Date.now() + ${ms}\nwhile (Date.now() < until) {}\nreturn { value: '${value}' }` } })
  const run = await client.runWorkflow(token, {
    nodes: [
      { id: 'fork', type: 'parallel', config: { branches: ['a1', 'b1'] } },
      { id: 'a1', type: 'set', config: { values: { from: 'a', order: '{{triggerData.order}}' } }, next: 'a2' },
      { ...slow('a2', 50, 'A'), next: 'join' },
      { ...slow('b1', 10, 'B'), next: 'join' },
      { id: 'join', type: 'merge', config: {}, next: 'after' },
      { id: 'after', type: 'set', config: { values: { both: '{{a2.value}}{{b1.value}}', order: '{{a1.order}}' } } }
    ]
  }, { order: 7 }, { timeoutMs: 30_000 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.join, { a1: { a1: { from: 'a', order: 7 }, a2: { value: 'A' } }, b1: { b1: { value: 'B' } } }, 'byBranch, the default')
  t.same(run.result.after, { both: 'AB', order: 7 })
  const byNode = await client.runWorkflow(token, {
    nodes: [
      { id: 'fork', type: 'parallel', config: { branches: ['a1', 'b1'] } },
      { id: 'a1', type: 'set', config: { values: { from: 'a' } }, next: 'a2' },
      { id: 'a2', type: 'set', config: { values: { value: 'A' } }, next: 'join' },
      { id: 'b1', type: 'set', config: { values: { value: 'B' } }, next: 'join' },
      { id: 'join', type: 'merge', config: { output: 'byNode' }, next: 'after' },
      { id: 'after', type: 'set', config: { values: { both: '{{join.a2.value}}{{join.b1.value}}' } } }
    ]
  }, {}, { timeoutMs: 30_000 })
  t.equal(byNode.status, 'SUCCESS', byNode.error ?? '')
  t.same(byNode.result.join, { a1: { from: 'a' }, a2: { value: 'A' }, b1: { value: 'B' } }, 'byNode: every branch node by its id, once')
  t.same(byNode.result.after, { both: 'AB' })
  const branches = (await call('GET', `/api/automation/runs?parentRunId=${run.id}`, { token })).body
  t.equal(branches.length, 2, 'one child run per branch')
  t.ok(branches.every((branch: { workflowId: string, status: string }) => branch.workflowId === run.workflowId && branch.status === 'SUCCESS'))
})

t.test('parallel: a failing branch fails the run; merge mode any goes on with the first branch and cancels the other', async (t) => {
  const failing = await client.runWorkflow(token, {
    nodes: [
      { id: 'fork', type: 'parallel', config: { branches: ['ok', 'bad'] } },
      { id: 'ok', type: 'set', config: { values: { fine: true } }, next: 'join' },
      { id: 'bad', type: 'code', config: { code: 'throw new Error("lookup down")' }, next: 'join' },
      { id: 'join', type: 'merge', config: {} }
    ]
  }, {}, { timeoutMs: 30_000 })
  t.equal(failing.status, 'FAILED')
  t.match(failing.error, /^Branch bad \(run \S+\) failed: .*lookup down/)

  const approvalBranch = await client.runWorkflow(token, {
    nodes: [
      { id: 'fork', type: 'parallel', config: { branches: ['fast', 'ask'] } },
      { id: 'fast', type: 'set', config: { values: { first: true } }, next: 'join' },
      { id: 'ask', type: 'approval', config: { message: 'never answered' }, next: 'join' },
      { id: 'join', type: 'merge', config: { mode: 'any', output: 'append' } }
    ]
  }, {}, { timeoutMs: 30_000 })
  t.equal(approvalBranch.status, 'SUCCESS', approvalBranch.error ?? '')
  t.same(approvalBranch.result.join, [{ fast: { first: true } }])
  const branches = (await call('GET', `/api/automation/runs?parentRunId=${approvalBranch.id}`, { token })).body
  t.same(branches.map((branch: { status: string }) => branch.status).sort(), ['CANCELLED', 'SUCCESS'])
})

t.test('save-time: a merge no branch reaches and branches meeting at different merges are 400s; a parallel nests in a branch', async (t) => {
  const save = async (nodes: unknown[]) => await call('POST', '/api/automation/workflows', { token, body: { name: 'bad graph', triggerType: 'MANUAL', nodes } })
  const unreached = await save([
    { id: 'fork', type: 'parallel', config: { branches: ['a', 'b'] } },
    { id: 'a', type: 'set', config: { values: {} }, next: 'join' },
    { id: 'b', type: 'set', config: { values: {} } },
    { id: 'join', type: 'merge', config: {} }
  ])
  t.equal(unreached.status, 400)
  t.equal(unreached.body.message, 'Node fork: branch b never reaches a merge node')
  const orphan = await save([{ id: 'a', type: 'set', config: { values: {} }, next: 'join' }, { id: 'join', type: 'merge', config: {} }])
  t.equal(orphan.status, 400)
  t.equal(orphan.body.message, 'Node join: merge is not reached by the branches of any parallel node')
  const tooWide = await save([{ id: 'fork', type: 'parallel', config: { branches: Array.from({ length: 11 }, (_, i) => `n${i}`) } }])
  t.equal(tooWide.status, 400)
  const twoMerges = await save([
    { id: 'fork', type: 'parallel', config: { branches: ['a', 'b'] } },
    { id: 'a', type: 'set', config: { values: {} }, next: 'm1' },
    { id: 'b', type: 'set', config: { values: {} }, next: 'm2' },
    { id: 'm1', type: 'merge', config: {} },
    { id: 'm2', type: 'merge', config: {} }
  ])
  t.equal(twoMerges.status, 400)
  t.equal(twoMerges.body.message, 'Node fork: its branches reach different merge nodes (m1, m2)')
  const nested = await client.runWorkflow(token, {
    nodes: [
      { id: 'outer', type: 'parallel', config: { branches: ['inner', 'b'] } },
      { id: 'inner', type: 'parallel', config: { branches: ['x', 'y'] } },
      { id: 'x', type: 'set', config: { values: { x: 1 } }, next: 'innerJoin' },
      { id: 'y', type: 'set', config: { values: { y: 1 } }, next: 'innerJoin' },
      { id: 'innerJoin', type: 'merge', config: { output: 'byNode' }, next: 'join' },
      { id: 'b', type: 'set', config: { values: { b: 1 } }, next: 'join' },
      { id: 'join', type: 'merge', config: { output: 'byNode' } }
    ]
  }, {}, { timeoutMs: 30_000 })
  t.equal(nested.status, 'SUCCESS', nested.error ?? '')
  t.same(nested.result.join, { inner: nested.result.inner, x: { x: 1 }, y: { y: 1 }, innerJoin: { x: { x: 1 }, y: { y: 1 } }, b: { b: 1 } }, 'the inner merge inside the outer branch')
})

t.test('several edges without a sourceHandle run every target, meeting at a merge or each ending on its own; a version stored before that rule follows the first', async (t) => {
  const values = (id: string) => ({ id, type: 'set', config: { values: { [id]: '{{a.from}}' } } })
  const fanOut = [{ source: 'a', target: 'b' }, { source: 'a', target: 'c' }, { source: 'a', target: 'd' }]
  const merged = await client.runWorkflow(token, {
    nodes: [{ id: 'a', type: 'set', config: { values: { from: 'a' } } }, values('b'), values('c'), values('d'), { id: 'm', type: 'merge', config: { output: 'byNode' } }],
    edges: [...fanOut, { source: 'b', target: 'm' }, { source: 'c', target: 'm' }, { source: 'd', target: 'm' }]
  }, {}, { timeoutMs: 30_000 })
  t.equal(merged.status, 'SUCCESS', merged.error ?? '')
  t.same(merged.result.m, { b: { b: 'a' }, c: { c: 'a' }, d: { d: 'a' } }, 'the merge gets every branch\'s outputs')
  const [branch] = (await call('GET', `/api/automation/runs?parentRunId=${merged.id}`, { token })).body
  t.notOk('m' in (await client.getRun(token, branch.id)).result, 'a branch ends where it meets the merge')

  const definition = { nodes: [{ id: 'a', type: 'set', config: { values: { from: 'a' } } }, values('b'), values('c'), values('d')], edges: fanOut }
  const workflowId = await client.createWorkflow(token, definition)
  const all = await client.runReaching(token, await client.fire(token, workflowId), undefined, { timeoutMs: 30_000 })
  t.equal(all.status, 'SUCCESS', all.error ?? '')
  t.match(all.result, { b: { b: 'a' }, c: { c: 'a' }, d: { d: 'a' } }, 'no merge: each branch ends on its own, the run when all have, its result holding their outputs')
  t.equal((await call('GET', `/api/automation/runs?parentRunId=${all.id}`, { token })).body.length, 3, 'one child run per branch')

  await sql`update workflow_versions set edge_rule = 'first' where workflow_id = ${workflowId}`
  const first = await client.runReaching(token, await client.fire(token, workflowId))
  t.equal(first.status, 'SUCCESS', first.error ?? '')
  t.same(Object.keys(first.result).sort(), ['a', 'b', 'triggerData'], 'edge_rule first: the first edge only')
})

t.test('merge any: a failed branch stays in its output and the run succeeds with the other; every branch failing fails the run', async (t) => {
  const failing = (id: string) => ({ id, type: 'condition', config: { field: 'triggerData.n', operator: '{{triggerData.operator}}', value: 1 } })
  const mixed = await client.runWorkflow(token, {
    nodes: [
      { id: 'a', type: 'set', config: { values: {} } },
      { id: 'later', type: 'wait', config: { seconds: 1 }, next: 'fine' },
      { id: 'fine', type: 'set', config: { values: { ok: true } }, next: 'm' },
      { ...failing('bad'), next: 'm' },
      { id: 'm', type: 'merge', config: { mode: 'any' } }
    ],
    edges: [{ source: 'a', target: 'later' }, { source: 'a', target: 'bad' }]
  }, { operator: 'bogus' }, { timeoutMs: 30_000 })
  t.equal(mixed.status, 'SUCCESS', mixed.error ?? '')
  t.match(mixed.result.m, { later: { fine: { ok: true } }, bad: { status: 'FAILED', error: /^operator must be one of/, runId: /\S/ } })

  const none = await client.runWorkflow(token, {
    nodes: [
      { id: 'fork', type: 'parallel', config: { branches: ['bad1', 'bad2'] } },
      { ...failing('bad1'), next: 'm' }, { ...failing('bad2'), next: 'm' },
      { id: 'm', type: 'merge', config: { mode: 'any' } }
    ]
  }, { operator: 'bogus' }, { timeoutMs: 30_000 })
  t.equal(none.status, 'FAILED')
  t.match(none.error, /^Branch bad1 \(run \S+\) failed: operator must be one of/)
})

t.test('condition: gt compares numbers, and "n/a" against 10 is false', async (t) => {
  const run = await client.runWorkflow(token, {
    nodes: [
      { id: 'check', type: 'condition', config: { field: 'triggerData.amount', operator: 'gt', value: 10, then: 'big', else: 'small' } },
      { id: 'big', type: 'set', config: { values: { big: true } } },
      { id: 'small', type: 'set', config: { values: { big: false } } }
    ]
  }, { amount: 'n/a' })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.equal(run.result.check.matched, false)
  t.same(run.result.small, { big: false })
})

t.test(`a fan-out of 10 edges whose branches fork again to ${FORK_MAX_NESTING} levels runs; one level more is refused when saved`, async (t) => {
  // Per branch i: b<i> forks into c<i> and f<i>; c<i> forks into d<i> and e<i>.
  const ids = Array.from({ length: 10 }, (_, i) => i)
  const nodes = [{ id: 'start', type: 'set', config: { values: {} } }, ...ids.flatMap((i) => ['b', 'c', 'd', 'e', 'f'].map((kind) => ({ id: `${kind}${i}`, type: 'set', config: { values: { at: `${kind}${i}` } } })))]
  const edges = [
    ...ids.map((i) => ({ source: 'start', target: `b${i}` })),
    ...ids.flatMap((i) => [{ source: `b${i}`, target: `c${i}` }, { source: `b${i}`, target: `f${i}` }, { source: `c${i}`, target: `d${i}` }, { source: `c${i}`, target: `e${i}` }])
  ]
  const started = performance.now()
  const run = await client.runWorkflow(token, { nodes, edges }, {}, { timeoutMs: 60_000 })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(nodes.map((node) => node.id).filter((id) => !(id in run.result)), [], `every node ran (${Math.round(performance.now() - started)} ms)`)
  const deeper = await call('POST', '/api/automation/workflows', {
    token,
    body: { name: 'too deep', triggerType: 'MANUAL', nodes: [...nodes, { id: 'g', type: 'set', config: {} }, { id: 'h', type: 'set', config: {} }], edges: [...edges, { source: 'd3', target: 'g' }, { source: 'd3', target: 'h' }] }
  })
  t.equal(deeper.status, 400)
  t.equal(deeper.body.message, `Node d3: branches nest deeper than ${FORK_MAX_NESTING} levels (a parallel node, or a node whose edges run several targets, inside a branch of another, at most ${FORK_MAX_NESTING} deep)`)
})

t.test('foreach reads its children\'s outputs only up to NODE_OUTPUT_MAX_BYTES: past it the node says so, collectOutputs false keeps counts', async (t) => {
  const big = await client.createWorkflow(token, { name: 'big', isActive: false, nodes: [{ id: 'blob', type: 'code', config: { code: 'return "x".repeat(200000)' } }] })
  const items = Array.from({ length: 8 }, (_, n) => n)
  const cut = await client.runWorkflow(token, { nodes: [{ id: 'loop', type: 'foreach', config: { workflowId: big, items: '{{triggerData.items}}', concurrency: 8 } }] }, { items }, { timeoutMs: 30_000 })
  t.equal(cut.status, 'FAILED')
  t.equal(cut.error, 'The items\' outputs exceed 1048576 bytes (NODE_OUTPUT_MAX_BYTES): set collectOutputs to false')
  const counted = await client.runWorkflow(token, { nodes: [{ id: 'loop', type: 'foreach', config: { workflowId: big, items: '{{triggerData.items}}', concurrency: 8, collectOutputs: false } }] }, { items }, { timeoutMs: 30_000 })
  t.equal(counted.status, 'SUCCESS', counted.error ?? '')
  t.same(counted.result.loop, { total: 8, succeeded: 8, failed: 0, errors: [] })
})
