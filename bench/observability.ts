/**
 * `pnpm bench:observability`: what metrics and log binding cost the engine. Runs of a
 * three-node workflow go end to end (startRuns → BullMQ → engine → Postgres) in this process,
 * first with the process log as production has it (info, to /dev/null: run lines written, node
 * lines at debug skipped) and then silent; metrics are on in both. Then the observability calls
 * of one run are timed alone, and set against the time a run costs end to end.
 */
import { createWriteStream } from 'node:fs'
import { Worker } from 'bullmq'
import { createCoreTestContext } from '@switchboard/testing/context'
import { REDIS_URL } from '@switchboard/testing/database'
import { createRunEngine, traceRun } from '@switchboard/core/engine'
import { createLogger, type Logger } from '@switchboard/core/logger'
import { queueWait, runsCreated } from '@switchboard/core/observability'
import { createWorkerConnection, WORKFLOW_RUNS, type RunJobData } from '@switchboard/core/queues'
import type { LogLine } from '@switchboard/core/engine'
import { startRuns } from '@switchboard/core/runs'

const RUNS = Number(process.env.BENCH_RUNS ?? 1000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4)
const CONCURRENCY = 50
const MICRO_ITERATIONS = 50_000

const teardowns: Array<() => unknown> = []
const { db, queues, queuePrefix } = await createCoreTestContext({ teardown: (fn) => { teardowns.push(fn) } })
const devNull = createWriteStream('/dev/null')
teardowns.push(() => { devNull.end() })

const loggerAt = (level: string): Logger => createLogger(level, 'worker', devNull)

const nodes = [
  { id: 'a', type: 'set', config: { values: { x: '{{triggerData.n}}' } }, next: 'b' },
  { id: 'b', type: 'condition', config: { field: 'a.x', operator: 'exists', then: 'c', else: 'c' } },
  { id: 'c', type: 'set', config: { values: { done: 'yes' } } }
]

try {
  const [{ id: userId }] = await db.execute<{ id: string }>("insert into users (id, email, password_hash) values ('bench', 'bench@example.com', 'x') returning id") as unknown as Array<{ id: string }>
  await db.execute(`insert into workflows (id, user_id, name, trigger_type, is_active, nodes) values ('bench-workflow', '${userId}', 'bench', 'MANUAL', true, '${JSON.stringify(nodes)}'::jsonb)`)
  const workflow = { id: 'bench-workflow', userId, triggerType: 'MANUAL' as const }

  /** Runs per second end to end with the engine logging through `logger`. */
  async function endToEnd (logger: Logger): Promise<number> {
    const engine = createRunEngine({
      db,
      queues,
      logger,
      nodes: { http: undefined as never, chat: undefined as never, code: undefined as never, ai: null },
      dispatchEvents: async () => []
    })
    const connection = createWorkerConnection(REDIS_URL)
    let done = 0
    let finish!: () => void
    const allDone = new Promise<void>((resolve) => { finish = resolve })
    const worker = new Worker<RunJobData>(WORKFLOW_RUNS, async (job) => await engine.executeRun(job.data.runId, undefined, { requestId: job.data.requestId }), {
      connection, prefix: queuePrefix, concurrency: CONCURRENCY
    })
    worker.on('active', (job) => { queueWait.observe({ queue: WORKFLOW_RUNS }, Math.max(0, (job.processedOn ?? 0) - job.timestamp) / 1000) })
    worker.on('completed', () => { if (++done === RUNS) finish() })
    await worker.waitUntilReady()
    const started = performance.now()
    await startRuns({ db, queues }, { runs: Array.from({ length: RUNS }, (_, n) => ({ workflow, triggerData: { n } })), requestId: 'bench-request' })
    await allDone
    const seconds = (performance.now() - started) / 1000
    await worker.close()
    connection.disconnect()
    return RUNS / seconds
  }

  const observed: number[] = []
  const silent: number[] = []
  // A round to warm up (JIT, prepared statements), not counted; then interleaved, in alternating
  // order, so that neither side is favoured by warming caches or a neighbour's load.
  await endToEnd(loggerAt('info'))
  for (let round = 0; round < ROUNDS; round++) {
    const pair = [async () => observed.push(await endToEnd(loggerAt('info'))), async () => silent.push(await endToEnd(loggerAt('silent')))]
    for (const measure of round % 2 === 0 ? pair : pair.reverse()) await measure()
  }
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  const observedRate = median(observed)
  const silentRate = median(silent)

  // The observability calls of one three-node run, alone, production log level.
  const logger = loggerAt('info')
  const at = new Date()
  const step = (nodeId: string): LogLine[] => [
    { nodeId, level: 'INFO', message: `Node ${nodeId} (set) started`, at },
    { nodeId, level: 'INFO', message: `Node ${nodeId} completed in 1ms`, at }
  ]
  const microStarted = performance.now()
  for (let i = 0; i < MICRO_ITERATIONS; i++) {
    runsCreated.inc({ trigger_type: 'MANUAL', domain: 'GENERAL' })
    queueWait.observe({ queue: WORKFLOW_RUNS }, 0.002)
    const trace = traceRun(logger, { id: `run-${i}`, workflowId: 'bench-workflow', startedAt: at, kind: 'start' }, 'bench-request')
    const first = trace.claimed()
    for (const nodeId of ['a', 'b', 'c']) {
      trace.node('set', 'success', 1)
      trace.write(nodeId === 'a' ? [...first, ...step(nodeId)] : step(nodeId))
    }
    trace.ended('SUCCESS')
  }
  const microsecondsPerRun = (performance.now() - microStarted) * 1000 / MICRO_ITERATIONS
  // Share of the time a run takes in this process end to end that its observability calls take.
  const shareOfRun = microsecondsPerRun / (1e6 / observedRate)

  const results = {
    runs: RUNS,
    rounds: ROUNDS,
    runsPerSecondObserved: Math.round(observedRate),
    runsPerSecondSilent: Math.round(silentRate),
    throughputCostPercent: Number(((1 - observedRate / silentRate) * 100).toFixed(1)),
    observabilityMicrosecondsPerRun: Number(microsecondsPerRun.toFixed(1)),
    observabilityShareOfRunPercent: Number((shareOfRun * 100).toFixed(2))
  }
  console.log(`end to end: ${results.runsPerSecondObserved} runs/s observed (info log + metrics), ${results.runsPerSecondSilent} runs/s silent: ${results.throughputCostPercent}% (medians of ${ROUNDS} rounds of ${RUNS} runs)`)
  console.log(`observability calls alone: ${results.observabilityMicrosecondsPerRun} µs per three-node run, ${results.observabilityShareOfRunPercent}% of a run's end-to-end time`)
  console.log(JSON.stringify(results))
} finally {
  for (const fn of teardowns.reverse()) await fn()
}
