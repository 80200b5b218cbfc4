import { Queue, type ConnectionOptions, type DefaultJobOptions } from 'bullmq'
import { Redis, type RedisOptions } from 'ioredis'

/** The four queues of spec 2.5, in the order the queues endpoint lists them. */
export const QUEUE_NAMES = ['workflow-runs', 'scheduled-tasks', 'agent-execution', 'assistant-main'] as const
export type QueueName = typeof QUEUE_NAMES[number]

export const WORKFLOW_RUNS: QueueName = 'workflow-runs'
export const SCHEDULED_TASKS: QueueName = 'scheduled-tasks'
export const AGENT_EXECUTION: QueueName = 'agent-execution'
export const ASSISTANT_MAIN: QueueName = 'assistant-main'

/*
 * Job ids derive from the run, so re-adding a job never duplicates it and the
 * reconciler finds a run's jobs from the run alone.
 */

/** The job that starts a run (added with the run): never queued twice. */
export const runJobId = (runId: string): string => runId

/** The delayed job that resumes a run suspended at a wait node; unique per wait node (a workflow has no cycles). */
export const resumeJobId = (runId: string, nodeId: string): string => `${runId}:resume:${encodeURIComponent(nodeId)}`

/** The job that takes over a RUNNING run whose job is gone; unique per takeover attempt. */
export const takeoverJobId = (runId: string, attempt: number): string => `${runId}:takeover:${attempt}`

/** Job data is ids only: Postgres is the record. */
export interface RunJobData { runId: string }
export interface ScheduleJobData { workflowId: string }
export interface ChatDeliveryJobData { deliveryId: string }

/**
 * Every job: a job that throws (database or Redis briefly away) is retried after
 * 1, 2, 4 and 8 s instead of waiting for the reconciler; every processor is safe
 * to repeat (run status changes are guarded, ticks carry an idempotency key,
 * deliveries are stored once by wamid). Redis keeps only enough finished jobs for
 * the queue counters and debugging; the rows in Postgres are the history.
 */
export const DEFAULT_JOB_OPTIONS: DefaultJobOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 5000 }
}

/** Producer side (api): fail fast when Redis is away instead of queueing commands in memory. */
export function createProducerConnection (url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, ...options })
}

/** Consumer side (worker): BullMQ requires `maxRetriesPerRequest: null` for blocking commands. */
export function createWorkerConnection (url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, ...options })
}

export type Queues = Record<QueueName, Queue>

export function createQueues (connection: ConnectionOptions, prefix: string): Queues {
  const queues = {} as Queues
  for (const name of QUEUE_NAMES) {
    queues[name] = new Queue(name, { connection, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS })
  }
  return queues
}

export async function closeQueues (queues: Queues): Promise<void> {
  await Promise.all(Object.values(queues).map(async (queue) => { await queue.close() }))
}
