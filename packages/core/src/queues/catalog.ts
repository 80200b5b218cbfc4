import type { DefaultJobOptions, Processor, Queue } from 'bullmq'

/** Every queue, in the order the queues endpoint lists them (README, Queues). */
export const QUEUE_NAMES = ['workflow-runs', 'scheduled-tasks', 'agent-execution', 'assistant-main', 'chat-broadcasts', 'event-deliveries', 'knowledge-index'] as const
export type QueueName = typeof QUEUE_NAMES[number]

export type Queues = Record<QueueName, Queue>

export const WORKFLOW_RUNS: QueueName = 'workflow-runs'
export const SCHEDULED_TASKS: QueueName = 'scheduled-tasks'
export const AGENT_EXECUTION: QueueName = 'agent-execution'
export const ASSISTANT_MAIN: QueueName = 'assistant-main'
export const CHAT_BROADCASTS: QueueName = 'chat-broadcasts'
export const EVENT_DELIVERIES: QueueName = 'event-deliveries'
export const KNOWLEDGE_INDEX: QueueName = 'knowledge-index'

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
export const isTakeoverJobId = (jobId: string): boolean => /:takeover:\d+$/.test(jobId)

/**
 * Every job: a job that throws (database or Redis briefly away) is retried after
 * 1, 2, 4 and 8 s instead of waiting for the reconciler; every processor is safe
 * to repeat (run status changes are guarded, ticks carry an idempotency key,
 * deliveries are stored once by wamid). Redis keeps only enough finished jobs for
 * the queue counters and debugging; the rows in Postgres are the history.
 */
const DEFAULT_JOB_OPTIONS: DefaultJobOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 5000 }
}

/** Job data is ids only: Postgres is the record. */
export interface RunJobData {
  runId: string
  /**
   * A wake (a child ended, a decision came): a run it finds RUNNING is not taken over but tried
   * again shortly, so that the execution in progress, which may suspend again, does not miss it.
   */
  wake?: boolean
  /**
   * The run's owner: the worker holds the job while the owner's runs take their share of its
   * slots or their in-flight quota (README, Quotas). Jobs the reconciler restores may lack it.
   */
  userId?: string
  /** The X-Request-Id of the request that started the run: the worker logs the run with it. */
  requestId?: string
  /**
   * The W3C traceparent of the span the run's execution continues, while tracing is on: the
   * request's `run.start`, or for a resume the `run.execute` that suspended it. Cron, event and
   * keyword starts, and the reconciler's jobs, have none.
   */
  traceparent?: string
  /**
   * The run's start is gated by its flow control (engine/flow-control.ts): the worker claims it
   * without first trying the first-write path, which such a run never takes.
   */
  gated?: boolean
}
export interface ScheduleJobData { workflowId: string }
export interface ChatDeliveryJobData { deliveryId: string }
/** `wake`: a tool run of the turn ended; a wake that finds the turn claimed by a live worker ends (that worker reads the runs again). */
export interface AssistantTurnJobData { conversationId: string, wake?: boolean }
export interface BroadcastJobData { broadcastId: string }
/** A knowledge source to index; `userId`, who added it: the worker holds the job while their sources take their share of its slots. */
export interface KnowledgeIndexJobData { sourceId: string, userId?: string }
export interface EventDeliveryJobData {
  deliveryId: string
  /** The subscription's owner: the worker holds the job while the owner's deliveries take their share of its slots (README, Quotas). */
  userId?: string
}

/** The job that starts, resumes or takes over a run. */
export const RUN_JOB = 'run'
/** A cron tick, produced by the workflow's job scheduler. */
export const TICK_JOB = 'tick'
/** An inbound chat platform delivery, stored before it is queued. */
export const CHAT_DELIVERY_JOB = 'chat-delivery'
/** A conversation's assistant turns, worked in message order (README, The assistant). */
export const ASSISTANT_TURN_JOB = 'assistant-turn'
/** A broadcast's sends, at its rate (README, Broadcasts). */
export const BROADCAST_JOB = 'broadcast'
/** One event for one subscription, its attempts and the waits between them (README, Event subscriptions). */
export const EVENT_DELIVERY_JOB = 'event-delivery'
/** A knowledge source read, split into passages and embedded (README, Knowledge). */
export const KNOWLEDGE_INDEX_JOB = 'knowledge-index'

/** What each queue carries: the name and data of its jobs. */
export interface JobCatalog {
  'workflow-runs': { name: typeof RUN_JOB, data: RunJobData }
  'scheduled-tasks': { name: typeof TICK_JOB, data: ScheduleJobData }
  'agent-execution': { name: typeof RUN_JOB, data: RunJobData }
  'assistant-main': { name: typeof CHAT_DELIVERY_JOB, data: ChatDeliveryJobData } | { name: typeof ASSISTANT_TURN_JOB, data: AssistantTurnJobData }
  'chat-broadcasts': { name: typeof BROADCAST_JOB, data: BroadcastJobData }
  'event-deliveries': { name: typeof EVENT_DELIVERY_JOB, data: EventDeliveryJobData }
  'knowledge-index': { name: typeof KNOWLEDGE_INDEX_JOB, data: KnowledgeIndexJobData }
}

/** Each queue's options for all of its jobs (BullMQ's defaultJobOptions): set once, when the queue is created. */
export const JOB_OPTIONS: Record<QueueName, DefaultJobOptions> = {
  'workflow-runs': DEFAULT_JOB_OPTIONS,
  'scheduled-tasks': DEFAULT_JOB_OPTIONS,
  'agent-execution': DEFAULT_JOB_OPTIONS,
  'assistant-main': DEFAULT_JOB_OPTIONS,
  'chat-broadcasts': DEFAULT_JOB_OPTIONS,
  'event-deliveries': DEFAULT_JOB_OPTIONS,
  'knowledge-index': DEFAULT_JOB_OPTIONS
}

/** The function that works a queue's jobs. */
export type QueueProcessor<Q extends QueueName> = Processor<JobCatalog[Q]['data'], unknown, JobCatalog[Q]['name']>
