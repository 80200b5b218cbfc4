import type { QueueName, QueueProcessor } from '@switchboard/core/queues'
import type { WorkerContext } from '../context.ts'
import { assistantMainProcessor } from './assistant-main.ts'
import { scheduledTasksProcessor } from './scheduled-tasks.ts'
import { runProcessor } from './workflow-runs.ts'

/** Builds the processor of queue `Q` from the worker's shared context. */
export type ProcessorFactory<Q extends QueueName> = (context: WorkerContext) => QueueProcessor<Q>

/** One processor per queue of the job catalog: a queue without one does not compile. */
export const processors: { [Q in QueueName]: ProcessorFactory<Q> } = {
  'assistant-main': assistantMainProcessor,
  'workflow-runs': runProcessor,
  // AGENT runs: the same engine on a queue of their own, so an agent never waits behind bulk automation.
  'agent-execution': runProcessor,
  'scheduled-tasks': scheduledTasksProcessor
}
