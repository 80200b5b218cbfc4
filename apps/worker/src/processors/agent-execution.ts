import type { ProcessorFactory } from './index.ts'
import { runProcessor } from './workflow-runs.ts'

/** AGENT runs: the same engine on a queue of their own, so an agent never waits behind bulk automation. */
export const agentExecutionProcessor: ProcessorFactory = runProcessor
