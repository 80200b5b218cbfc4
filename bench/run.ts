/**
 * `pnpm bench`: the hot paths of issue 13 measured against real api and worker processes on the
 * local PostgreSQL and Redis (a database and queue prefix of their own per scenario, removed
 * after it), driven over HTTP by a load generator in this process. Prints a table of the figures
 * against their targets and writes it, with the JSON, to bench/results/. See bench/README.md.
 *
 *   pnpm bench [-- --only A,B] [--quick] [--scale] [--built] [--log-level warn] [--connections 50]
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { machineFacts } from './lib/facts.ts'
import { ROOT } from './lib/processes.ts'
import { renderTable, type ScenarioResult } from './lib/report.ts'
import type { BenchContext } from './lib/stack.ts'
import { webhookToSuccess } from './scenarios/a-webhook.ts'
import { sustainedFire } from './scenarios/b-fire.ts'
import { realisticWorkflow } from './scenarios/c-realistic.ts'
import { nodeCost } from './scenarios/d-node-cost.ts'
import { sizeIndependence } from './scenarios/e-size.ts'
import { readsAtScale } from './scenarios/f-reads.ts'
import { workerMemory } from './scenarios/g-memory.ts'
import { foreachLoop } from './scenarios/h-foreach.ts'
import { parallelMerge } from './scenarios/i-parallel.ts'
import { assistantTurns } from './scenarios/j-assistant.ts'
import { broadcasts } from './scenarios/k-broadcasts.ts'
import { eventDeliveries } from './scenarios/l-event-deliveries.ts'
import { tracingCost } from './scenarios/m-tracing.ts'
import { askAnswers } from './scenarios/n-ask.ts'
import { flowControlKeys } from './scenarios/o-flow-control.ts'
import { runSearch } from './scenarios/p-search.ts'
import { knowledgeRetrieval } from './scenarios/q-knowledge.ts'
import { agentSteps } from './scenarios/r-agent.ts'

const SCENARIOS: Array<{ id: string, title: string, run: (ctx: BenchContext) => Promise<Omit<ScenarioResult, 'seconds'>> }> = [
  { id: 'A', title: 'inbound webhook → set → SUCCESS', run: webhookToSuccess },
  { id: 'B', title: '/fire sustained', run: sustainedFire },
  { id: 'C', title: 'realistic workflow', run: realisticWorkflow },
  { id: 'D', title: 'node cost', run: nodeCost },
  { id: 'E', title: 'size independence', run: sizeIndependence },
  { id: 'F', title: 'reads at scale', run: readsAtScale },
  { id: 'G', title: 'worker memory', run: workerMemory },
  { id: 'H', title: 'foreach loop', run: foreachLoop },
  { id: 'I', title: 'parallel and merge', run: parallelMerge },
  { id: 'J', title: 'assistant turns', run: assistantTurns },
  { id: 'K', title: 'broadcast', run: broadcasts },
  { id: 'L', title: 'event deliveries', run: eventDeliveries },
  { id: 'M', title: 'what tracing adds', run: tracingCost },
  { id: 'N', title: '1,000 conversations answering an ask', run: askAnswers },
  { id: 'O', title: 'a concurrency key under load', run: flowControlKeys },
  { id: 'P', title: 'q= search at 1M runs', run: runSearch },
  { id: 'Q', title: 'knowledge retrieval over 10,000 passages', run: knowledgeRetrieval },
  { id: 'R', title: 'an ai_agent step beside its model\'s time', run: agentSteps }
]

function usage (message: string): never {
  console.error(`${message}\nusage: pnpm bench [-- --only A,B,...] [--quick] [--scale] [--built] [--log-level <level>] [--connections <n>]`)
  process.exit(2)
}

// `pnpm bench -- --quick` passes the `--` on.
const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    only: { type: 'string' },
    quick: { type: 'boolean', default: false },
    scale: { type: 'boolean', default: false },
    built: { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'warn' },
    connections: { type: 'string', default: '50' }
  }
})
const only = values.only?.split(',').map((id) => id.trim().toUpperCase()).filter((id) => id !== '')
const unknown = only?.find((id) => !SCENARIOS.some((scenario) => scenario.id === id))
if (unknown !== undefined) usage(`unknown scenario ${unknown}: the scenarios are ${SCENARIOS.map((s) => s.id).join(', ')}`)
const connections = Number(values.connections)
if (!Number.isInteger(connections) || connections < 1 || connections > 1000) usage('--connections must be an integer from 1 to 1000')

const startedAt = new Date()
const stamp = startedAt.toISOString().replace(/[:.]/g, '-')
const resultsDir = join(ROOT, 'bench', 'results')
const logDir = join(resultsDir, 'logs', stamp)
mkdirSync(logDir, { recursive: true })

let teardowns: Array<() => unknown> = []
async function tearDown (): Promise<void> {
  const pending = teardowns.reverse()
  teardowns = []
  for (const fn of pending) {
    try {
      await fn()
    } catch (err) {
      console.error('clean-up failed:', err)
    }
  }
}
// Interrupted: stop the processes and drop the databases before leaving.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => { tearDown().finally(() => process.exit(130)) })
}

const options = { quick: values.quick, scale: values.scale, mode: values.built ? 'built' as const : 'sources' as const, logLevel: values['log-level'], connections }
const machine = await machineFacts(options)
const ctx: BenchContext = { ...options, logDir, teardown: (fn) => { teardowns.push(fn) } }

const results: ScenarioResult[] = []
for (const scenario of SCENARIOS.filter((s) => only === undefined || only.includes(s.id))) {
  const began = performance.now()
  console.log(`${scenario.id}. ${scenario.title}…`)
  let result: ScenarioResult
  try {
    result = { ...await scenario.run(ctx), seconds: 0 }
  } catch (err) {
    console.error(err)
    result = { id: scenario.id, title: scenario.title, metrics: [], notes: [], seconds: 0, error: err instanceof Error ? err.message : String(err) }
  } finally {
    await tearDown()
  }
  result.seconds = Math.round((performance.now() - began) / 1000)
  console.log(`${scenario.id} done in ${result.seconds}s`)
  results.push(result)
}

const totalSeconds = Math.round((Date.now() - startedAt.getTime()) / 1000)
// Beside the load at start: whether other work on the machine went on during the run.
machine['Load average at end'] = loadavg().map((load) => load.toFixed(2)).join(' ')
const table = `${renderTable(machine, results)}\n\nTotal ${totalSeconds}s; process logs in bench/results/logs/${stamp}/.`
const json = JSON.stringify({ startedAt: startedAt.toISOString(), seconds: totalSeconds, options, machine, scenarios: results }, null, 2)
for (const name of [stamp, 'latest']) {
  writeFileSync(join(resultsDir, `${name}.json`), `${json}\n`)
  writeFileSync(join(resultsDir, `${name}.md`), `${table}\n`)
}
console.log(`\n${table}\n\nWritten: bench/results/${stamp}.json (and latest.json, latest.md)`)
process.exitCode = results.some((result) => result.error !== undefined) ? 1 : 0
