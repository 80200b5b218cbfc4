/** The queues: names, the job catalog (job names, data, options) and connections. */
export { ASSISTANT_MAIN, ASSISTANT_TURN_JOB, BROADCAST_JOB, CHAT_BROADCASTS, CHAT_DELIVERY_JOB, EVENT_DELIVERIES, KNOWLEDGE_INDEX, QUEUE_NAMES, resumeJobId, runJobId, SCHEDULED_TASKS, WORKFLOW_RUNS, type AssistantTurnJobData, type BroadcastJobData, type ChatDeliveryJobData, type QueueName, type QueueProcessor, type Queues, type RunJobData } from './catalog.ts'
export { closeQueues, createProducerConnection, createQueues, createWorkerConnection, queueKeyPrefix, redisAnswers, type RedisConnection } from './connections.ts'
export { createFairShare, fairShareOn } from './fair-share.ts'
export { createRedisStateLog, type RedisStateLog } from './redis-state.ts'
export { checkRedisPolicy } from './redis-policy.ts'
