import type { Processor } from 'bullmq'
import type { QueueName } from '@switchboard/core/queues'
import type { WorkerContext } from '../context.ts'
import { scheduledTasksProcessor } from './scheduled-tasks.ts'

export type ProcessorFactory = (context: WorkerContext) => Processor

/** One processor per queue; a queue without one has no Worker in this process. */
export const processors: Partial<Record<QueueName, ProcessorFactory>> = {
  'scheduled-tasks': scheduledTasksProcessor
}
