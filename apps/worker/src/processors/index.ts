import type { Processor } from 'bullmq'
import type { QueueName } from '@switchboard/core/queues/catalog'
import type { WorkerContext } from '../context.ts'
import { assistantMainProcessor } from './assistant-main.ts'
import { agentExecutionProcessor } from './agent-execution.ts'
import { scheduledTasksProcessor } from './scheduled-tasks.ts'
import { runProcessor } from './workflow-runs.ts'

export type ProcessorFactory = (context: WorkerContext) => Processor

/** One processor per queue; a queue without one has no Worker in this process. */
export const processors: Partial<Record<QueueName, ProcessorFactory>> = {
  'assistant-main': assistantMainProcessor,
  'workflow-runs': runProcessor,
  'agent-execution': agentExecutionProcessor,
  'scheduled-tasks': scheduledTasksProcessor
}
