/**
 * Per-key flow control (workflow setting `flowControl`, issue 44 item 1) through the real api and
 * two worker processes: its validation; a concurrency key holding 1,000 runs to one at a time, in
 * the order they were created; 100 keys progressing side by side, a key fired last not starved;
 * debounce collapsing a burst into one run with the last hit's data, and maxWaitSeconds bounding a
 * stream; a rate limit spreading starts without refusing any; and a key's slot coming back when
 * the worker of the run holding it is SIGKILLed.
 *
 * Each http_request node calls the sink at `/<tag>/<key>/<n>/<hold>`: the sink counts the calls in
 * flight per `<tag>/<key>` and holds each for `<hold>` ms (`gate<ms>`: until the test opens the tag's
 * gate, then `<ms>`; `hang`: the first call of a path until the test lets it go, later ones at once).
 */
import t, { type Test } from 'tap'
import { startDeliverySink, type Delivery } from '@switchboard/testing/delivery-sink'
import { createLoad, type Answer } from '@switchboard/testing/load'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

// About a minute when every test passes; a failing one waits out its bound before it reports. The bound is
// for a stuck file, not a target: beside the heaviest files of the pool the 1,000 runs below took 2.5 minutes.
t.setTimeout(360_000)

type Body = Record<string, any>

const inFlight = new Map<string, number>()
const maxInFlight = new Map<string, number>()
/** Tags whose calls wait until their gate is opened. */
const gates = new Map<string, { open: () => void, opened: Promise<void> }>()
/** `hang` calls waiting to be let go, by path. */
const hanging = new Map<string, () => void>()

const partsOf = (path: string): { tag: string, key: string, n: number, hold: string } => {
  const [, tag = '', key = '', n = '', hold = '0'] = path.split('/')
  return { tag, key: decodeURIComponent(key), n: Number(n), hold }
}

function gate (tag: string): { open: () => void } {
  let open = (): void => {}
  const opened = new Promise<void>((resolve) => { open = resolve })
  gates.set(tag, { open, opened })
  return { open }
}

const sink = await startDeliverySink(t, {
  answer: async (delivery) => {
    const { tag, key, hold } = partsOf(delivery.path)
    const slot = `${tag}/${key}`
    const now = (inFlight.get(slot) ?? 0) + 1
    inFlight.set(slot, now)
    maxInFlight.set(slot, Math.max(maxInFlight.get(slot) ?? 0, now))
    try {
      if (hold.startsWith('gate')) {
        await gates.get(tag)?.opened
        await new Promise((resolve) => setTimeout(resolve, Number(hold.slice('gate'.length))))
      } else if (hold === 'hang' && sink.deliveries.filter((other) => other.path === delivery.path).length === 1) {
        await new Promise<void>((resolve) => { hanging.set(delivery.path, resolve) })
      } else if (Number(hold) > 0) await new Promise((resolve) => setTimeout(resolve, Number(hold)))
    } finally {
      // Before the answer is written: the next call of the key cannot arrive before this.
      inFlight.set(slot, inFlight.get(slot)! - 1)
    }
    return {}
  }
})

// Few worker slots (2 × 5): runs compete for them, so that the order in which waiting runs are
// given a worker shows (100 keys), and a waiting run that held a worker would stall the tests.
const stack = await startStack(t, {
  workers: 2,
  env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true', RECONCILER_INTERVAL_MS: '1000', WORKER_CONCURRENCY: '5' }
})
const token = await stack.adminToken()
const { call } = stack

/** The http_request node calling the sink for `tag`, its key, number and hold from the trigger data. */
const sinkNode = (tag: string): Record<string, unknown> => ({
  id: 'call',
  type: 'http_request',
  config: { method: 'POST', url: `${sink.url}/${tag}/{{triggerData.key}}/{{triggerData.n}}/{{triggerData.hold}}`, timeoutMs: 60_000 }
})

async function createWorkflow (name: string, flowControl: unknown, nodes: unknown[]): Promise<string> {
  const res = await call('POST', '/api/automation/workflows', { token, body: { name, triggerType: 'MANUAL', isActive: true, nodes, flowControl } })
  if (res.status !== 201) throw new Error(`create workflow: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.id
}

const getRun = async (runId: string): Promise<Body> => (await call('GET', `/api/automation/runs/${runId}`, { token })).body

/** Every run of the workflow, oldest first (the list is newest first by created_at, id). */
async function runsOf (workflowId: string): Promise<Body[]> {
  const runs: Body[] = []
  for (let offset = 0; ; offset += 500) {
    const res = await call('GET', `/api/automation/runs?workflowId=${workflowId}&limit=500&offset=${offset}`, { token })
    if (res.status !== 200) throw new Error(`list runs: ${res.status} ${JSON.stringify(res.body)}`)
    runs.push(...res.body)
    if (res.body.length < 500) return runs.reverse()
  }
}

/** Waits until the workflow has `count` runs and none is PENDING, RUNNING or WAITING; returns them, oldest first. */
async function settled (workflowId: string, count: number, timeoutMs: number): Promise<Body[]> {
  let runs: Body[] = []
  return await waitFor(async () => {
    runs = await runsOf(workflowId)
    return runs.length >= count && runs.every((run) => ['SUCCESS', 'FAILED', 'CANCELLED'].includes(run.status)) ? runs : undefined
  }, { timeoutMs, intervalMs: 250, what: `${count} runs of ${workflowId} to end` }).catch((err: Error) => {
    const counts: Record<string, number> = {}
    for (const run of runs) counts[`${run.status} ${run.flowControl?.waitingFor ?? '-'}`] = (counts[`${run.status} ${run.flowControl?.waitingFor ?? '-'}`] ?? 0) + 1
    const stuck = runs.find((run) => run.status === 'PENDING')
    throw new Error(`${err.message} within ${timeoutMs} ms: ${runs.length} runs, by status and waitingFor ${JSON.stringify(counts)}; e.g. ${stuck?.id} ${JSON.stringify(stuck?.flowControl)}`)
  })
}

/**
 * Cancels the workflow's runs still unfinished when a test ends (it failed): a backlog left behind
 * would load the machine under the tests after it.
 */
function cancelLeftovers (t: Test, workflowId: string): void {
  t.teardown(async () => {
    const left = (await runsOf(workflowId)).filter((run) => ['PENDING', 'RUNNING', 'WAITING'].includes(run.status))
    for (const run of left) await call('POST', `/api/automation/runs/${run.id}/cancel`, { token })
  })
}

/**
 * The run's flowControl once it says it waits PENDING for `waitingFor` (a run is marked when a worker
 * first looks at its job, right after its creation when the workers keep up); a failure of `t`, and
 * what the run shows, when it does not within `timeoutMs`.
 */
async function waitingFlow (t: Test, runId: string, waitingFor: string, timeoutMs = 5000): Promise<Body | undefined> {
  try {
    const run = await waitFor(async () => {
      const run = await getRun(runId)
      return run.status === 'PENDING' && run.flowControl?.waitingFor === waitingFor ? run : undefined
    }, { timeoutMs, intervalMs: 50, what: `run ${runId} PENDING with flowControl.waitingFor ${waitingFor}` })
    t.pass(`run ${runId} waits PENDING, flowControl ${JSON.stringify(run.flowControl)}`)
    return run
  } catch (err) {
    const run = await getRun(runId)
    t.fail(`${(err as Error).message} within ${timeoutMs} ms: it is ${run.status} with flowControl ${JSON.stringify(run.flowControl)}`)
    return undefined
  }
}

/** `/fire` of the workflow, one request a call, numbered from 0 in the order they are sent. */
const fireLoad = (workflowId: string, body: (seq: number) => unknown) => createLoad({
  url: () => `${stack.baseUrl}/api/automation/workflows/${workflowId}/fire`,
  body,
  headers: { authorization: `Bearer ${token}` },
  giveUpMs: 30_000
})

/**
 * Sends `count` requests at most `perSecond`, request i not before i / perSecond, over `lanes`
 * senders (each sends its next once its last is answered). Resolves when all are answered.
 */
async function paced (load: ReturnType<typeof fireLoad>, count: number, perSecond: number, lanes = 1): Promise<void> {
  const began = Date.now()
  let next = 0
  await Promise.all(Array.from({ length: lanes }, async () => {
    for (let i = next++; i < count; i = next++) {
      const due = began + i * 1000 / perSecond
      // Pacing the sender, not waiting for a condition.
      if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()))
      await load.burst(1, 1)
    }
  }))
}

const callsOf = (tag: string): Delivery[] => sink.deliveries.filter((delivery) => delivery.path.startsWith(`/${tag}/`))
const accepted = (answers: Answer[]): Answer[] => answers.filter((answer) => answer.status === 202)
const isoTime = (value: unknown): boolean => typeof value === 'string' && !Number.isNaN(Date.parse(value))

t.test('validation: bad shapes are 400 VALIDATION_ERROR naming the field; a valid one round-trips; a change makes no new version', async (t) => {
  const key = '{{triggerData.orderId}}'
  const refused: Array<[string, unknown, RegExp]> = [
    ['concurrency limit 0', { concurrency: { key, limit: 0 } }, /limit/],
    ['concurrency limit 1001', { concurrency: { key, limit: 1001 } }, /limit/],
    ['concurrency without a key', { concurrency: { limit: 1 } }, /key/],
    ['rateLimit periodSeconds 0', { rateLimit: { limit: 1, periodSeconds: 0 } }, /periodSeconds/],
    ['rateLimit limit 10001', { rateLimit: { limit: 10_001, periodSeconds: 1 } }, /limit/],
    ['debounce maxWaitSeconds < periodSeconds', { debounce: { key, periodSeconds: 10, maxWaitSeconds: 5 } }, /maxWaitSeconds/],
    ['debounce periodSeconds 3601', { debounce: { key, periodSeconds: 3601 } }, /periodSeconds/],
    ['only an unknown part (dropped, README, Conventions: nothing is left)', { throttle: { limit: 1 } }, /^flowControl must be an object with concurrency, rateLimit, debounce or priority, or null$/],
    ['priority.value 11', { priority: { value: 11 } }, /priority/],
    ['priority.value 0', { priority: { value: 0 } }, /priority/],
    ['priority.value true', { priority: { value: true } }, /^flowControl\.priority\.value must be an integer from 1 to 10, or a template rendering to one$/],
    ['priority.value 2.5', { priority: { value: 2.5 } }, /^flowControl\.priority\.value must be an integer from 1 to 10, or a template rendering to one$/],
    ['not an object', 'fast', /^flowControl must be an object with concurrency, rateLimit, debounce or priority, or null$/]
  ]
  for (const [what, flowControl, field] of refused) {
    const res = await call('POST', '/api/automation/workflows', { token, body: { name: 'bad', triggerType: 'MANUAL', flowControl } })
    t.same([res.status, res.body.code], [400, 'VALIDATION_ERROR'], `${what}: 400 VALIDATION_ERROR (${res.status} ${JSON.stringify(res.body)})`)
    t.match(res.body.message, field, `${what}: the message names the field (${res.body.message})`)
  }

  // Unknown fields are dropped, never stored (README, Conventions), inside flowControl too.
  const dropped = await call('POST', '/api/automation/workflows', { token, body: { name: 'extra', triggerType: 'MANUAL', flowControl: { concurrency: { key, limit: 1, burst: 2 }, throttle: { limit: 1 } } } })
  t.equal(dropped.status, 201)
  t.same(dropped.body.flowControl, { concurrency: { key, limit: 1 } }, 'unknown fields dropped, the rest stored')

  const given = {
    concurrency: { key, limit: 3 },
    rateLimit: { key: '{{triggerData.customer}}', limit: 10, periodSeconds: 60 },
    priority: { value: '{{triggerData.priority}}' }
  }
  const workflowId = await createWorkflow('flow control settings', given, [{ id: 'n1', type: 'set', config: { values: { a: '1' } } }])
  const shown = (await call('GET', `/api/automation/workflows/${workflowId}`, { token })).body
  t.same(shown.flowControl, given, 'GET shows it as given')
  const version = shown.version

  const debounced = { debounce: { key, periodSeconds: 5, maxWaitSeconds: 30 }, priority: { value: 7 } }
  const patched = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { flowControl: debounced } })
  t.equal(patched.status, 200)
  t.same(patched.body.flowControl, debounced)
  t.same((await call('GET', `/api/automation/workflows/${workflowId}`, { token })).body.flowControl, debounced, 'a PATCH replaces it')
  const badPatch = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { flowControl: { concurrency: { key, limit: 0 } } } })
  t.same([badPatch.status, badPatch.body.code], [400, 'VALIDATION_ERROR'], 'a bad PATCH is refused too')
  t.same((await call('GET', `/api/automation/workflows/${workflowId}`, { token })).body.flowControl, debounced, 'and changes nothing')

  const removed = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { flowControl: null } })
  t.equal(removed.status, 200)
  const after = (await call('GET', `/api/automation/workflows/${workflowId}`, { token })).body
  t.equal(after.flowControl, null, 'PATCH null removes it')
  t.equal(after.version, version, 'changing flowControl made no new version')

  // A run of a workflow without flowControl says so.
  const runId = await stack.client.fire(token, workflowId, {})
  const ended = await stack.client.runReaching(token, runId)
  t.equal(ended.status, 'SUCCESS')
  t.equal((ended as Body).flowControl, null, 'a run started without flowControl shows flowControl null')
})

t.test('1,000 runs fired at once for one concurrency key (limit 1): one at a time, in creation order, all SUCCESS', async (t) => {
  const RUNS = 1000
  const workflowId = await createWorkflow('one key', { concurrency: { key: 'order-{{triggerData.key}}', limit: 1 } }, [sinkNode('one')])
  cancelLeftovers(t, workflowId)
  const load = fireLoad(workflowId, (seq) => ({ key: 'a', n: seq, hold: 3 }))
  const firedAt = Date.now()
  await load.burst(RUNS, 20)
  const firedMs = Date.now() - firedAt
  t.comment(`fired in ${firedMs} ms; ${callsOf('one').length} calls made by then`)
  t.equal(accepted(load.answers).length, RUNS, `every fire answered 202 (${JSON.stringify(load.answers.find((answer) => answer.status !== 202))})`)

  // The newest run waits behind the others, and says so.
  const newest = load.answers.find((answer) => answer.seq === RUNS - 1)!.body.runId as string
  const waiting = await waitingFlow(t, newest, 'concurrency')
  if (waiting !== undefined) {
    t.match(waiting.flowControl, { key: 'order-a', waitingFor: 'concurrency' }, 'the newest run shows what it waits for: the rendered key')
    t.ok(isoTime(waiting.flowControl.since) && Date.parse(waiting.flowControl.since) >= Date.parse(waiting.createdAt) - 1000, `since an ISO time (${waiting.flowControl.since})`)
  }

  // A 3 ms call and a hand-off each: about a minute when a hand-off takes tens of milliseconds; beside the
  // heaviest files of the shared pool (docs/testing.md) it took over two, so the bound is four.
  const runs = await settled(workflowId, RUNS, 240_000)
  const doneMs = Date.now() - firedAt
  t.same(runs.filter((run) => run.status !== 'SUCCESS').map((run) => `${run.id} ${run.status} ${run.error}`), [], 'every run SUCCESS')
  t.equal(runs.length, RUNS, 'one run per fire')
  t.same(new Set(runs.map((run) => run.id)), new Set(accepted(load.answers).map((answer) => answer.body.runId)), 'the runs are the ones the fires named')
  t.equal(maxInFlight.get('one/a'), 1, `never more than 1 call in flight for the key (saw ${maxInFlight.get('one/a')})`)

  const calls = callsOf('one').map((delivery) => partsOf(delivery.path).n)
  t.equal(calls.length, RUNS, 'each run called the sink once')
  const created = runs.map((run) => run.triggerData.n as number)
  const firstOutOfOrder = calls.findIndex((n, i) => n !== created[i])
  t.equal(firstOutOfOrder, -1, firstOutOfOrder === -1
    ? 'called in the order the runs were created'
    : `called in creation order: call ${firstOutOfOrder} was run ${calls[firstOutOfOrder]}, expected ${created[firstOutOfOrder]} (calls ${calls.slice(Math.max(0, firstOutOfOrder - 3), firstOutOfOrder + 4).join(', ')}; created ${created.slice(Math.max(0, firstOutOfOrder - 3), firstOutOfOrder + 4).join(', ')})`)
  const started = [...runs].sort((a, b) => a.startedAt.localeCompare(b.startedAt)).map((run) => run.triggerData.n as number)
  t.same(started, created, 'and started in that order')

  const last = await getRun(newest)
  t.match(last.flowControl, { key: 'order-a', waitingFor: null }, `once started it waits for nothing (${JSON.stringify(last.flowControl)})`)
  t.equal(last.logs.filter((line: Body) => line.message === 'Run started').length, 1, 'a waiting run is started once')
  const handoffs = callsOf('one').slice(1).map((delivery, i) => delivery.receivedAt - callsOf('one')[i]!.answeredAt!).sort((a, b) => a - b)
  t.comment(`all ended in ${doneMs} ms; call answered → next run's call: median ${handoffs[handoffs.length >> 1]} ms, p99 ${handoffs[Math.floor(handoffs.length * 0.99)]} ms`)
})

t.test('100 keys × 5 runs, limit 1 per key: each key one at a time in creation order, and the key fired last is not starved', async (t) => {
  const KEYS = 100
  const PER_KEY = 5
  const workflowId = await createWorkflow('hundred keys', { concurrency: { key: '{{triggerData.key}}', limit: 1 } }, [sinkNode('keys')])
  cancelLeftovers(t, workflowId)
  const began = Date.now()
  // Fired key after key: k0's five runs, then k1's, … k99's last. The first calls wait at the gate until every run
  // exists, so that the runs then compete for the workers from one backlog.
  const { open } = gate('keys')
  const keyOf = (seq: number): string => `k${Math.floor(seq / PER_KEY)}`
  const load = fireLoad(workflowId, (seq) => ({ key: keyOf(seq), n: seq, hold: 'gate20' }))
  await load.burst(KEYS * PER_KEY, 10)
  t.equal(accepted(load.answers).length, KEYS * PER_KEY, 'every fire answered 202')
  // The calls that reached the sink while the runs were fired (at most the 10 worker slots) wait there; once it opens every call is held 20 ms.
  const heldAtGate = callsOf('keys').length
  const gated = new Set(callsOf('keys').map((delivery) => delivery.path))
  open()

  const firedMs = Date.now() - began
  const runs = await settled(workflowId, KEYS * PER_KEY, 120_000)
  t.comment(`fired in ${firedMs} ms, all ended in ${Date.now() - began} ms`)
  t.same(runs.filter((run) => run.status !== 'SUCCESS').map((run) => `${run.id} ${run.status} ${run.error}`), [], 'all SUCCESS')
  const over = [...maxInFlight].filter(([slot, max]) => slot.startsWith('keys/') && max > 1)
  t.same(over, [], 'no key ever had more than 1 call in flight')

  const calls = callsOf('keys')
  t.equal(calls.length, KEYS * PER_KEY, 'one call per run')
  // The runs one group commit wrote were created at one instant: their order among themselves is
  // no promise, so a key's calls may not go back in creation time, and ties may come in any order.
  const createdAt = new Map(runs.map((run) => [run.triggerData.n as number, run.createdAt as string]))
  const calledOrder = new Map<string, number[]>()
  calls.forEach((delivery) => {
    const { key, n } = partsOf(delivery.path)
    calledOrder.set(key, [...(calledOrder.get(key) ?? []), n])
  })
  const outOfOrder = [...calledOrder].filter(([, order]) => order.some((n, i) => i > 0 && createdAt.get(n)! < createdAt.get(order[i - 1]!)!))
  t.same(outOfOrder.map(([key, order]) => `${key}: called ${order.join(',')}, created at ${order.map((n) => createdAt.get(n)).join(',')}`), [], 'each key\'s runs called in creation order')

  // Fairness: the last key's first call against the other keys' last calls (positions in the order calls came).
  const position = new Map(calls.map((delivery, i) => [delivery.path, i]))
  const firstOf = (key: string): number => Math.min(...calls.filter((delivery) => partsOf(delivery.path).key === key).map((delivery) => position.get(delivery.path)!))
  const lastOf = (key: string): number => Math.max(...calls.filter((delivery) => partsOf(delivery.path).key === key).map((delivery) => position.get(delivery.path)!))
  const lastKey = `k${KEYS - 1}`
  const lastKeyFirst = firstOf(lastKey)
  const others = Array.from({ length: KEYS - 1 }, (_, k) => `k${k}`)
  const finishedBefore = others.filter((key) => lastOf(key) < lastKeyFirst)
  t.comment(`${heldAtGate} calls held at the gate (${[...gated].map((path) => partsOf(path).key).join(', ')}); ${lastKey}'s first call was call ${lastKeyFirst + 1} of ${calls.length}; keys done before it: ${finishedBefore.length}`)
  t.ok(finishedBefore.length <= (KEYS - 1) / 10, `${lastKey}, fired last, got its first run started before at least 90% of the other keys had started their last (${finishedBefore.length} of ${KEYS - 1} had)`)
  const firstCalls = others.map(firstOf)
  t.ok(firstCalls.filter((first) => first < lastKeyFirst).length >= KEYS / 2, 'while most keys had started before it (it was fired last)')
})

t.test('debounce: 1,000 hits of one key in about 5 s make one run, with the last hit\'s data, started once the burst settled', async (t) => {
  const HITS = 1000
  // A period of 2 s: a hit answered late on a loaded machine does not end the burst early.
  const workflowId = await createWorkflow('debounced', { debounce: { key: '{{triggerData.key}}', periodSeconds: 2 } }, [sinkNode('debounce')])
  cancelLeftovers(t, workflowId)
  const load = fireLoad(workflowId, (seq) => ({ key: 'd', n: seq, hold: 0 }))
  // The first hit alone (it begins the burst: simultaneous first hits are the next test's), then 200 a second over
  // 4 senders, then the last hit alone once every other was answered: it is the last one applied.
  await load.burst(1, 1)
  await paced(load, HITS - 2, 200, 4)
  await load.burst(1, 1)
  const lastHit = load.answers.find((answer) => answer.seq === HITS - 1)!
  const lastHitAt = lastHit.sentAt + lastHit.ms
  t.equal(accepted(load.answers).length, HITS, 'every hit answered 202')
  const runIds = new Set(load.answers.map((answer) => answer.body?.runId))
  t.equal(runIds.size, 1, `every hit answered the same runId (${runIds.size} different)`)
  const runId = lastHit.body.runId as string
  const spanMs = lastHit.sentAt - Math.min(...load.answers.map((answer) => answer.sentAt))
  t.ok(spanMs > 2000, `the hits came over ${spanMs} ms, more than the period`)

  const waiting = await getRun(runId)
  t.equal(waiting.status, 'PENDING', 'the run has not started: the burst has not settled yet')
  t.match(waiting.flowControl, { key: 'd', waitingFor: 'debounce' }, `the run waits for the debounce (${JSON.stringify(waiting.flowControl)})`)
  t.ok(isoTime(waiting.flowControl?.since))

  const ended = await stack.client.runReaching(token, runId, undefined, { timeoutMs: 30_000 })
  t.equal(ended.status, 'SUCCESS', ended.error ?? '')
  t.same(ended.triggerData, { key: 'd', n: HITS - 1, hold: 0 }, 'its triggerData is the last hit\'s body')
  const startedAt = Date.parse((ended as Body).startedAt)
  t.ok(startedAt >= lastHit.sentAt + 1900, `it started after the burst settled: ${startedAt - lastHitAt} ms after the last hit was answered (period 2000 ms)`)
  await waitFor(async () => callsOf('debounce').length > 0 ? true : undefined, { what: 'the debounced run\'s call' })
  t.same(callsOf('debounce').map((delivery) => delivery.path), [`/debounce/d/${HITS - 1}/0`], 'it ran once, with the last data')
  t.equal((await runsOf(workflowId)).length, 1, 'exactly one run for the burst')
})

t.test('debounce: the first hits of a burst arriving together (30 keys, 8 hits each over 4 senders) make one run a key', async (t) => {
  const KEYS = 30
  const HITS = 8
  const workflowId = await createWorkflow('debounced, hits together', { debounce: { key: '{{triggerData.key}}', periodSeconds: 2 } }, [sinkNode('together')])
  cancelLeftovers(t, workflowId)
  // Key after key, each burst's hits 5 ms apart over 4 senders: its first starts are committed while others are on
  // their way. Its last hit alone, once the others were answered: the one whose data the run must have.
  const loads = Array.from({ length: KEYS }, (_, k) => fireLoad(workflowId, (seq) => ({ key: `t${k}`, n: seq, hold: 0 })))
  for (const load of loads) {
    await paced(load, HITS - 1, 200, 4)
    await load.burst(1, 1)
  }
  t.equal(loads.flatMap((load) => accepted(load.answers)).length, KEYS * HITS, 'every hit answered 202')
  const split = loads.map((load, k) => [`t${k}`, new Set(load.answers.map((answer) => answer.body.runId)).size] as const).filter(([, runIds]) => runIds !== 1)
  t.same(split, [], `the hits of each key answered one runId (keys answered more: ${JSON.stringify(split)})`)

  const runs = await settled(workflowId, KEYS, 20_000)
  const extra = runs.filter((run, i) => runs.findIndex((other) => other.triggerData.key === run.triggerData.key) !== i)
  t.equal(runs.length, KEYS, `one run a key (${runs.length} runs; also ran: ${extra.map((run) => `${run.id} ${run.triggerData.key}/${run.triggerData.n}`).join(', ')})`)
  t.same(runs.filter((run) => run.status !== 'SUCCESS').map((run) => `${run.id} ${run.status}`), [], 'all SUCCESS')
  t.same(runs.filter((run) => run.triggerData.n !== HITS - 1).map((run) => `${run.triggerData.key}/${run.triggerData.n}`), [], 'each with the data of its key\'s last hit')
})

t.test('debounce maxWaitSeconds: a stream of hits longer than maxWait gets a run no later than maxWait after its first hit', async (t) => {
  const workflowId = await createWorkflow('debounced with a max wait', { debounce: { key: '{{triggerData.key}}', periodSeconds: 1, maxWaitSeconds: 2 } }, [sinkNode('maxwait')])
  cancelLeftovers(t, workflowId)
  const load = fireLoad(workflowId, (seq) => ({ key: 'm', n: seq, hold: 0 }))
  // Every 100 ms for 4.5 s: never a second of quiet.
  await paced(load, 45, 10)
  t.equal(accepted(load.answers).length, 45, 'every hit answered 202')
  const firstHit = load.answers[0]!
  const firstRunId = firstHit.body.runId as string
  const runIds = [...new Set(load.answers.map((answer) => answer.body.runId as string))]
  t.ok(runIds.length >= 2, `the stream made more than one run (${runIds.length})`)

  const ended = await Promise.all(runIds.map(async (runId) => await stack.client.runReaching(token, runId, undefined, { timeoutMs: 30_000 })))
  t.same(ended.map((run) => run.status), runIds.map(() => 'SUCCESS'))
  const firstStart = Date.parse((ended[0] as Body).startedAt)
  // maxWait from the first hit, with room for a loaded machine to start it (without maxWait: 5.5 s).
  t.ok(firstStart - firstHit.sentAt <= 2000 + 2000, `the first run started ${firstStart - firstHit.sentAt} ms after the first hit (maxWait 2000 ms)`)
  t.ok(firstStart - firstHit.sentAt >= 1000, 'and not before a period had passed')
  t.equal(ended[0]!.id, firstRunId)
  // Each run carries the last hit answered with its id: no hit was answered with a run it did not reach.
  for (const run of ended) {
    const last = Math.max(...load.answers.filter((answer) => answer.body.runId === run.id).map((answer) => answer.seq))
    t.equal(run.triggerData.n, last, `run ${run.id} has the data of the last hit that named it (${last})`)
  }
  t.equal((await runsOf(workflowId)).length, runIds.length, 'no run but those the hits named')
  const calls = await waitFor(async () => callsOf('maxwait').length >= runIds.length ? callsOf('maxwait') : undefined, { what: 'the runs\' calls' })
  t.equal(calls.length, runIds.length, 'each ran once')
})

t.test('rateLimit 1 per second under 100 fires a second: none refused, none lost, starts a second apart; removing it drains the rest', async (t) => {
  const workflowId = await createWorkflow('rate limited', { rateLimit: { limit: 1, periodSeconds: 1 } }, [{ id: 'n1', type: 'set', config: { values: { n: '{{triggerData.n}}' } } }])
  cancelLeftovers(t, workflowId)
  const load = fireLoad(workflowId, (seq) => ({ n: seq }))
  const sending = load.paced(100)
  // Paced at 100 a second until 100 are answered: on a loaded machine the answers come later, not fewer.
  await waitFor(async () => load.answers.length >= 100 || undefined, { timeoutMs: 20_000, intervalMs: 50, what: '100 fires answered' })
  await sending.stop()
  const fired = load.answers.length
  t.ok(fired >= 100, `${fired} fires sent`)
  t.same(load.answers.filter((answer) => answer.status !== 202).map((answer) => `${answer.status} ${JSON.stringify(answer.body)}`), [], 'every fire answered 202: none refused')
  const runIds = new Set(accepted(load.answers).map((answer) => answer.body.runId as string))
  t.equal(runIds.size, fired, 'a run per fire')

  const newest = load.answers.reduce((a, b) => (a.seq > b.seq ? a : b)).body.runId as string
  const waiting = await waitingFlow(t, newest, 'rateLimit')
  t.ok(waiting === undefined || isoTime(waiting.flowControl.since), 'since an ISO time')

  const STARTS = 5
  const startedRuns = await waitFor(async () => {
    const runs = (await runsOf(workflowId)).filter((run) => run.startedAt !== null)
    return runs.length >= STARTS ? runs : undefined
  }, { timeoutMs: 20_000, intervalMs: 100, what: `${STARTS} runs started` })
  const starts = startedRuns.map((run) => Date.parse(run.startedAt)).sort((a, b) => a - b)
  const gaps = starts.slice(1).map((at, i) => at - starts[i]!)
  t.comment(`gaps between the first starts: ${gaps.join(', ')} ms`)
  t.ok(gaps.slice(0, STARTS - 1).every((gap) => gap >= 900), `the first ${STARTS} starts at least 900 ms apart (${gaps.join(', ')})`)
  const all = await runsOf(workflowId)
  t.equal(all.length, fired, 'none lost: every run exists')
  t.ok(all.filter((run) => run.status === 'PENDING').length >= fired - STARTS - 2, 'the rest still wait')

  const removed = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { flowControl: null } })
  t.equal(removed.status, 200)
  const ended = await settled(workflowId, fired, 20_000)
  t.same(ended.filter((run) => run.status !== 'SUCCESS').map((run) => `${run.id} ${run.status}`), [], 'with the limit removed, every waiting run ends SUCCESS')
  t.same(new Set(ended.map((run) => run.id)), runIds)
})

t.test('a worker SIGKILLed while its run holds the key\'s slot: the slot comes back, the next runs of the key run, nothing lost', async (t) => {
  const workflowId = await createWorkflow('killed holder', { concurrency: { key: '{{triggerData.key}}', limit: 1 } }, [sinkNode('kill')])
  cancelLeftovers(t, workflowId)
  const holder = await stack.client.fire(token, workflowId, { key: 'x', n: 1, hold: 'hang' })
  await waitFor(async () => hanging.has('/kill/x/1/hang') ? true : undefined, { timeoutMs: 15_000, what: 'the holder\'s call' })
  const next = [await stack.client.fire(token, workflowId, { key: 'x', n: 2, hold: 0 }), await stack.client.fire(token, workflowId, { key: 'x', n: 3, hold: 0 })]
  const held = await waitingFlow(t, next[0]!, 'concurrency')
  t.match(held?.flowControl, { key: 'x', waitingFor: 'concurrency' }, 'the next run waits PENDING for the key\'s slot')

  const runner = stack.workers.find((worker) => worker.output().split('\n').some((line) => line.includes(holder) && line.includes('Run started')))
  t.ok(runner !== undefined, 'the worker running the holder is known from its log')
  await runner!.stop('SIGKILL')
  // Its connection to the sink is gone with it; the call it made is let go (the answer goes nowhere).
  hanging.get('/kill/x/1/hang')!()
  const killedAt = Date.now()
  await stack.startWorker()

  const ended = await Promise.all([holder, ...next].map(async (runId) => await stack.client.runReaching(token, runId, undefined, { timeoutMs: 60_000, intervalMs: 250 })))
  t.same(ended.map((run) => run.status), ['SUCCESS', 'SUCCESS', 'SUCCESS'], 'the holder was taken over and ended, and the runs behind it ran')
  t.ok(ended[0]!.logs.some((line) => line.message.startsWith('Run taken over')), 'the holder was taken over')
  t.same(callsOf('kill').map((delivery) => partsOf(delivery.path).n), [1, 1, 2, 3], 'the holder\'s call again, then the others in order')
  t.equal(maxInFlight.get('kill/x'), 1, 'never 2 calls of the key at once')
  t.comment(`kill → the next run's call: ${callsOf('kill')[2]!.receivedAt - killedAt} ms`)
})
