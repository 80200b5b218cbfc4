import { fakeModelEnv, startFakeModelProvider, type ModelRequestBody, type ModelStep } from '@switchboard/testing/fake-model-provider'
import { quantile } from '../lib/load.ts'
import { metric, type Metric, type ScenarioResult } from '../lib/report.ts'
import { startStack, type BenchContext, type Stack } from '../lib/stack.ts'
import { orderStatusTool } from '@switchboard/testing/agent-tools'

/** How long the fake model takes to answer each call: the model's time of a run is its calls times this. */
const MODEL_DELAY_MS = 50
/** Runs fired at once for the throughput phase, in this many lanes (as I does), so that the worker has a backlog. */
const FIRE_LANES = 25
/** Runs the worker executes at once (its default, set so that the figure says at what concurrency). */
const WORKER_CONCURRENCY = 50
const TIMEOUT_MS = 120_000
/** The workflows' `input`: the model's requests name the run's order, so that each request is counted to its run. */
const INPUT_PREFIX = 'Where is order '
const REPLY = 'Order shipped yesterday; it arrives on Friday.'

interface Variant {
  name: string
  /** Model calls and tool runs each run makes. */
  modelCalls: number
  toolRuns: number
  workflowId: string
}

interface TimedRun {
  order: number
  /** Created → completed, from `runs`. */
  totalMs: number
  /** Its child runs: the tool calls it made. */
  children: number
}

const orderOf = (body: ModelRequestBody): number | undefined => {
  const asked = body.messages.find((message) => message.role === 'user')?.content
  return typeof asked === 'string' && asked.startsWith(INPUT_PREFIX) ? Number(asked.slice(INPUT_PREFIX.length)) : undefined
}

/**
 * The fake model after MODEL_DELAY_MS: offered tools and not yet given a tool's result, it calls
 * `order_status` once; otherwise it answers.
 */
const modelAnswer: ModelStep = {
  handler: ({ body }) => ({
    delayMs: MODEL_DELAY_MS,
    then: body.tools !== undefined && !body.messages.some((message) => message.role === 'tool')
      ? { toolCalls: [{ name: 'order_status', arguments: { orderId: String(orderOf(body)) } }] }
      : { reply: REPLY }
  })
}

/** Fires `orders` (one run each) in FIRE_LANES lanes, or one after another's end with `oneAtATime`, and waits until all ended SUCCESS. */
async function fireRuns (stack: Stack, variant: Variant, orders: number[], oneAtATime: boolean): Promise<Map<string, number>> {
  const token = await stack.adminToken()
  const runs = new Map<string, number>()
  const untilEnded = async (runIds: string[]): Promise<void> => {
    const deadline = Date.now() + TIMEOUT_MS
    for (;;) {
      const [left] = await stack.sql<Array<{ unfinished: number, failed: number, error: string | null }>>`
        select count(*) filter (where status in ('PENDING', 'RUNNING', 'WAITING'))::int as unfinished,
          count(*) filter (where status in ('FAILED', 'CANCELLED'))::int as failed, min(error) as error
        from runs where id = any(${runIds})`
      if (left!.failed > 0) throw new Error(`${left!.failed} runs of ${variant.name} did not succeed: ${left!.error ?? ''}`)
      if (left!.unfinished === 0) return
      if (Date.now() > deadline) throw new Error(`${left!.unfinished} runs of ${variant.name} did not finish within ${TIMEOUT_MS / 1000}s`)
      await new Promise((resolve) => setTimeout(resolve, oneAtATime ? 5 : 100))
    }
  }
  if (oneAtATime) {
    for (const order of orders) {
      const runId = await stack.client.fire(token, variant.workflowId, { order })
      runs.set(runId, order)
      await untilEnded([runId])
    }
    return runs
  }
  let next = 0
  await Promise.all(Array.from({ length: FIRE_LANES }, async () => {
    while (next < orders.length) {
      const order = orders[next++]!
      runs.set(await stack.client.fire(token, variant.workflowId, { order }), order)
    }
  }))
  await untilEnded([...runs.keys()])
  return runs
}

async function timedRuns (stack: Stack, runs: Map<string, number>): Promise<{ timed: TimedRun[], perSecond: number }> {
  const rows = await stack.sql<Array<{ id: string, ms: number, created: number, completed: number, children: number }>>`
    select id, extract(epoch from completed_at - created_at)::float8 * 1000 as ms,
      extract(epoch from created_at)::float8 as created, extract(epoch from completed_at)::float8 as completed,
      (select count(*) from runs child where child.parent_run_id = runs.id)::int as children
    from runs where id = any(${[...runs.keys()]})`
  const first = Math.min(...rows.map((row) => row.created))
  const last = Math.max(...rows.map((row) => row.completed))
  return { timed: rows.map((row) => ({ order: runs.get(row.id)!, totalMs: row.ms, children: row.children })), perSecond: rows.length / (last - first) }
}

/**
 * What an `ai_agent` step costs beside its model's time (bench/README.md, R): the fake model on
 * loopback answers every call after MODEL_DELAY_MS, so a run's model time is its calls (counted
 * from the fake's requests) times that, and the rest of its time, created → completed, is the
 * service's: the claim, each step's checkpoint, the calls' round trips, and with a tool its child
 * run, the suspend and the wake. Two workflows of one `ai_agent` node: one whose model calls an
 * AGENT workflow of one `set` node once and then answers (two model calls, one child run), one
 * without tools (one model call, the bare step). One run at a time for the times, then a backlog
 * for runs/s.
 */
export async function agentSteps (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const provider = await startFakeModelProvider({ defaultReply: modelAnswer })
  ctx.teardown(async () => { await provider.close() })
  const stack = await startStack(ctx, 'R', { env: { ...fakeModelEnv(provider), WORKER_CONCURRENCY: String(WORKER_CONCURRENCY) } })
  const token = await stack.adminToken()
  const toolId = await stack.client.createWorkflow(token, orderStatusTool())
  const agentWorkflow = async (name: string, tools: string[]): Promise<string> => stack.client.createWorkflow(token, {
    name,
    triggerType: 'MANUAL',
    isActive: true,
    nodes: [{ id: 'agent', type: 'ai_agent', config: { instructions: 'You answer questions about orders.', input: `${INPUT_PREFIX}{{triggerData.order}}`, tools, maxSteps: 3 } }]
  })
  const variants: Variant[] = [
    { name: 'one tool call', modelCalls: 2, toolRuns: 1, workflowId: await agentWorkflow('bench R one tool call', [toolId]) },
    { name: 'no tool', modelCalls: 1, toolRuns: 0, workflowId: await agentWorkflow('bench R no tool', []) }
  ]
  const oneByOne = ctx.quick ? 20 : 100
  const backlog = ctx.quick ? 100 : 500
  const warmUp = 20
  let order = 0
  const nextOrders = (count: number): number[] => Array.from({ length: count }, () => ++order)

  const metrics: Metric[] = []
  const notes: string[] = []
  const overheadP50 = new Map<Variant, number>()
  for (const variant of variants) {
    // A few first, not counted: JIT, prepared statements, caches.
    await fireRuns(stack, variant, nextOrders(warmUp), true)
    const { timed } = await timedRuns(stack, await fireRuns(stack, variant, nextOrders(oneByOne), true))
    const { perSecond } = await timedRuns(stack, await fireRuns(stack, variant, nextOrders(backlog), false))

    const callsOf = new Map<number, number>()
    for (const request of provider.requests) {
      const asked = orderOf(request.body)
      if (asked !== undefined) callsOf.set(asked, (callsOf.get(asked) ?? 0) + 1)
    }
    const unexpected = timed.filter((run) => callsOf.get(run.order) !== variant.modelCalls || run.children !== variant.toolRuns).length
    if (unexpected > 0) throw new Error(`${unexpected} runs of ${variant.name} did not make ${variant.modelCalls} model calls and ${variant.toolRuns} tool runs`)
    const modelMs = variant.modelCalls * MODEL_DELAY_MS
    const overheads = timed.map((run) => run.totalMs - modelMs)
    overheadP50.set(variant, quantile(overheads, 0.5))
    metrics.push(
      metric(`${variant.name}: run p50 (created → completed)`, quantile(timed.map((run) => run.totalMs), 0.5), 'ms'),
      metric(`${variant.name}: run p99`, quantile(timed.map((run) => run.totalMs), 0.99), 'ms'),
      metric(`${variant.name}: the model's time`, modelMs, 'ms'),
      metric(`${variant.name}: overhead p50 (run − model)`, overheadP50.get(variant)!, 'ms'),
      metric(`${variant.name}: overhead p99`, quantile(overheads, 0.99), 'ms'),
      metric(`${variant.name}: runs/s from a backlog`, perSecond, 'runs/s')
    )
    notes.push(`${variant.name}: ${variant.modelCalls} model call(s) and ${variant.toolRuns} tool run(s) a run, ${oneByOne} runs one at a time after ${warmUp} not counted, then ${backlog} fired at once (${FIRE_LANES} requests in flight, the worker taking up to ${WORKER_CONCURRENCY} runs at once)`)
  }
  const [withTool, bare] = variants.map((variant) => overheadP50.get(variant)!)
  metrics.push(metric('what the tool call adds to the overhead, p50 (child run, suspend, wake, a second model call\'s round trip)', withTool! - bare!, 'ms'))
  return {
    id: 'R',
    title: `ai_agent step (the fake model answering after ${MODEL_DELAY_MS} ms)`,
    metrics,
    notes: [`the model's time is the fake's requests of each run (counted by the order its input names) × ${MODEL_DELAY_MS} ms; the overhead is the rest of the run's time`, ...notes]
  }
}
