import type { QueueName } from '@switchboard/core/queues'
import type { ProcessorFactory } from '../context.ts'
import { assistantMainProcessor } from './assistant-main.ts'
import { chatBroadcastsProcessor } from './chat-broadcasts.ts'
import { eventDeliveriesProcessor } from './event-deliveries.ts'
import { knowledgeIndexProcessor } from './knowledge-index.ts'
import { scheduledTasksProcessor } from './scheduled-tasks.ts'
import { runProcessor } from './workflow-runs.ts'

/** One processor per queue of the job catalog: a queue without one does not compile. */
export const processors: { [Q in QueueName]: ProcessorFactory<Q> } = {
  'assistant-main': assistantMainProcessor,
  'workflow-runs': runProcessor,
  // AGENT runs: the same engine on a queue of their own, so an agent never waits behind bulk automation.
  'agent-execution': runProcessor,
  'scheduled-tasks': scheduledTasksProcessor,
  'chat-broadcasts': chatBroadcastsProcessor,
  'event-deliveries': eventDeliveriesProcessor,
  'knowledge-index': knowledgeIndexProcessor
}
