import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Database } from '../db/client.ts'
import { ASSISTANT_TURN_OUTCOMES, DRAFT_DECISIONS } from '../db/schema/assistant.ts'
import { FINISHED_RUN_STATUSES } from '../db/schema/runs.ts'
import { DOMAINS, TRIGGER_TYPES } from '../db/schema/workflows.ts'
import { QUEUE_NAMES, type QueueName, type Queues } from '../queues/catalog.ts'
import type { RedisConnection } from '../queues/connections.ts'
import { withTimeout } from '../timeout.ts'

/**
 * The application's series, defined once for the api and the worker: each process counts what it
 * does and serves these next to its own (process defaults, HTTP durations, store state). Labels
 * take values from closed sets only (statuses, trigger types, domains, node types, queue names,
 * the platform's numeric error codes): never a workflow, run, user or conversation id.
 */
const applicationMetrics = new Registry()
const registers = [applicationMetrics]

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
const RUN_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]

export const runsCreated = new Counter({
  name: 'switchboard_runs_created_total',
  help: 'Runs created, by trigger type and workflow domain',
  labelNames: ['trigger_type', 'domain'] as const,
  registers
})

/** Stored runs whose job Redis did not take when they were committed: the reconciler queues them (README, Guarantees). */
export const runsLeftForReconciler = new Counter({
  name: 'switchboard_runs_enqueue_deferred_total',
  help: 'Runs committed while Redis did not take their job; the reconciler queues them once it answers',
  registers
})

export const runsFinished = new Counter({
  name: 'switchboard_runs_finished_total',
  help: 'Runs that reached a terminal status (SUCCESS, FAILED, CANCELLED)',
  labelNames: ['status'] as const,
  registers
})

export const runDuration = new Histogram({
  name: 'switchboard_run_duration_seconds',
  help: 'From a run\'s start to its end (waits included), by terminal status',
  labelNames: ['status'] as const,
  buckets: RUN_SECONDS,
  registers
})

export const queueWait = new Histogram({
  name: 'switchboard_queue_wait_seconds',
  help: 'From when a job could run (added, or its delay over) to when a worker took it, by queue',
  labelNames: ['queue'] as const,
  buckets: SECONDS,
  registers
})

export const nodeDuration = new Histogram({
  name: 'switchboard_node_duration_seconds',
  help: 'Node executions, by node type and outcome (success, failure, waiting)',
  labelNames: ['node_type', 'outcome'] as const,
  buckets: SECONDS,
  registers
})

export const chatSends = new Counter({
  name: 'switchboard_chat_sends_total',
  help: 'Messages sent to the chat platform, by outcome (sent, rejected, unavailable) and platform error code',
  labelNames: ['outcome', 'error_code'] as const,
  registers
})

export const chatInboundDeliveries = new Counter({
  name: 'switchboard_chat_inbound_deliveries_total',
  help: 'Chat platform deliveries accepted at /webhook/chat and queued',
  registers
})

export const eventDeliveryAttempts = new Counter({
  name: 'switchboard_event_deliveries_total',
  help: 'Event subscription delivery jobs, by outcome: succeeded (answered 2xx), retrying (an attempt failed, another is scheduled), failed (retries spent, or its subscription disabled), skipped (finished already, or not due yet)',
  labelNames: ['outcome'] as const,
  registers
})

export const webhookAnswers = new Counter({
  name: 'switchboard_webhook_answers_total',
  help: 'Inbound webhook answers, by status (received, ignored, rate_limited)',
  labelNames: ['status'] as const,
  registers
})

export const reconcilerActions = new Counter({
  name: 'switchboard_reconciler_actions_total',
  help: 'What the reconciler did: requeued (PENDING run without a job), resumed (WAITING run without a resume job), woken (run waiting for a slot of its workflow while one was free), taken_over (RUNNING run without a live job), failed (too many takeovers), schedulers_restored (workflows whose cron scheduler was rebuilt after Redis lost schedulers), chat_deliveries_requeued (stored chat delivery without a job), events_dispatched (outbox events their writer did not dispatch), assistant_turns_requeued (conversations with assistant turns but no job), broadcasts_requeued (broadcasts still to send without a job), event_deliveries_requeued (pending subscription deliveries without a job), knowledge_sources_requeued (knowledge sources still indexing, queued again by the job id they had)',
  labelNames: ['action'] as const,
  registers
})

export const retentionDeleted = new Counter({
  name: 'switchboard_retention_total',
  help: 'What retention removed: expired_runs, excess_runs (beyond RUN_RETENTION_MAX_PER_WORKFLOW), raw_bodies (cleared), expired_events (dispatched outbox events), expired_audit (audit log rows past AUDIT_RETENTION_DAYS), expired_deliveries (finished subscription deliveries), expired_agent_memories (ai_agent memories no run used for RUN_RETENTION_DAYS)',
  labelNames: ['kind'] as const,
  registers
})

export const assistantTurns = new Counter({
  name: 'switchboard_assistant_turns_total',
  help: 'Assistant turns ended, by outcome (drafted, sent, superseded, skipped, failed)',
  labelNames: ['outcome'] as const,
  registers
})

export const assistantTurnSeconds = new Histogram({
  name: 'switchboard_assistant_turn_duration_seconds',
  help: 'From the inbound message\'s turn created to the turn ended, by outcome (the model and tool runs included)',
  labelNames: ['outcome'] as const,
  buckets: RUN_SECONDS,
  registers
})

export const assistantTokens = new Counter({
  name: 'switchboard_assistant_tokens_total',
  help: 'Model tokens of assistant turns, by direction (in: the prompt, out: the answer), as the provider counted them',
  labelNames: ['direction'] as const,
  registers
})

export const assistantToolCalls = new Counter({
  name: 'switchboard_assistant_tool_calls_total',
  help: 'Tool calls of assistant turns, by status (succeeded, failed, timed_out, invalid: refused before any run)',
  labelNames: ['status'] as const,
  registers
})

export const assistantDrafts = new Counter({
  name: 'switchboard_assistant_drafts_total',
  help: 'Assistant drafts decided, by decision (approved as written, edited, rejected, stale: a newer customer message came first)',
  labelNames: ['decision'] as const,
  registers
})

/** The platform's error codes are numbers of a few digits; anything else is one bucket. */
export const chatErrorCodeLabel = (code: unknown): string => {
  const text = String(code)
  return /^[0-9]{1,6}$/.test(text) ? text : 'other'
}

/** Every series shows from the first scrape, at zero, so dashboards and alerts see them before the first event. */
function zeroKnownSeries (): void {
  for (const triggerType of TRIGGER_TYPES) {
    for (const domain of DOMAINS) runsCreated.inc({ trigger_type: triggerType, domain }, 0)
  }
  for (const status of FINISHED_RUN_STATUSES) {
    runsFinished.inc({ status }, 0)
    runDuration.zero({ status })
  }
  for (const queue of QUEUE_NAMES) queueWait.zero({ queue })
  chatSends.inc({ outcome: 'sent', error_code: 'none' }, 0)
  chatInboundDeliveries.inc(0)
  for (const status of ['received', 'ignored', 'rate_limited']) webhookAnswers.inc({ status }, 0)
  for (const action of ['requeued', 'resumed', 'woken', 'taken_over', 'failed', 'schedulers_restored', 'chat_deliveries_requeued', 'events_dispatched', 'assistant_turns_requeued', 'broadcasts_requeued', 'event_deliveries_requeued', 'knowledge_sources_requeued']) reconcilerActions.inc({ action }, 0)
  for (const outcome of ['succeeded', 'retrying', 'failed', 'skipped']) eventDeliveryAttempts.inc({ outcome }, 0)
  for (const kind of ['expired_runs', 'excess_runs', 'raw_bodies', 'expired_events', 'expired_audit', 'expired_deliveries', 'expired_agent_memories']) retentionDeleted.inc({ kind }, 0)
  for (const outcome of ASSISTANT_TURN_OUTCOMES) {
    assistantTurns.inc({ outcome }, 0)
    assistantTurnSeconds.zero({ outcome })
  }
  for (const direction of ['in', 'out']) assistantTokens.inc({ direction }, 0)
  for (const status of ['succeeded', 'failed', 'timed_out', 'invalid']) assistantToolCalls.inc({ status }, 0)
  for (const decision of DRAFT_DECISIONS) assistantDrafts.inc({ decision }, 0)
}
zeroKnownSeries()

/**
 * The node series from the first scrape, at zero, for each node type the process knows: the
 * engine's catalogue is passed in by the process that serves the scrape, so this module imports
 * nothing above it (docs/architecture.md, The arrows).
 */
export function zeroNodeSeries (nodeTypes: readonly string[]): void {
  for (const nodeType of nodeTypes) {
    for (const outcome of ['success', 'failure', 'waiting']) nodeDuration.zero({ node_type: nodeType, outcome })
  }
}

/** Job states the depth gauge reports (BullMQ's names). */
const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const

/** A scrape must answer even when a store does not: each probe is cut short. */
const PROBE_TIMEOUT_MS = 1000

/**
 * Store readings are shared by the scrapes of this long: a burst of scrapes (several Prometheus
 * servers, or anyone who reaches the port) costs one round of queries (README, Security).
 */
const STORE_READINGS_TTL_MS = 1000

export interface StoreMetricsSources {
  database: Database
  databasePoolMax: number
  /** Redis connections by role (producer, worker). */
  redis: Record<string, RedisConnection>
  queues: Queues
}

interface StoreReadings {
  /** Job counts by queue; a queue Redis did not answer for is missing. */
  queueJobs: Map<QueueName, Record<string, number>>
  databaseUp: boolean
}

/** One round of store queries: every queue's job counts and a Postgres probe, each cut short. */
async function readStores (sources: StoreMetricsSources): Promise<StoreReadings> {
  const queueJobs = new Map<QueueName, Record<string, number>>()
  const [, database] = await Promise.allSettled([
    Promise.all(QUEUE_NAMES.map(async (name) => {
      try {
        queueJobs.set(name, await withTimeout(sources.queues[name].getJobCounts(...QUEUE_STATES), PROBE_TIMEOUT_MS, 'queue depth'))
      } catch {
        // Redis away: no sample rather than a wrong zero (redis_up says why).
      }
    })),
    withTimeout(sources.database.sql`select 1`.execute(), PROBE_TIMEOUT_MS, 'database')
  ])
  return { queueJobs, databaseUp: database.status === 'fulfilled' }
}

/** `read`, shared by every caller from its start until STORE_READINGS_TTL_MS after it finished. */
function sharedFor<T> (read: () => Promise<T>): () => Promise<T> {
  let current: Promise<T> | undefined
  return async () => {
    if (current === undefined) {
      current = read()
      current.finally(() => { setTimeout(() => { current = undefined }, STORE_READINGS_TTL_MS).unref() }).catch(() => {})
    }
    return current
  }
}

/**
 * Series read from the stores, into the process's own registry: queue depths (BullMQ's job counts
 * per queue and state), Postgres answering, pool size and connections in use, Redis connections. The queries behind the
 * first two are made at most once a second, whatever the number of scrapes.
 */
export function registerStoreMetrics (registry: Registry, sources: StoreMetricsSources): void {
  const registers = [registry]
  const storeReadings = sharedFor(async () => readStores(sources))
  // eslint-disable-next-line no-new -- registered, read through the registry
  new Gauge({
    name: 'switchboard_queue_jobs',
    help: 'Jobs per queue and state (waiting, active, delayed, failed); absent while Redis does not answer',
    labelNames: ['queue', 'state'] as const,
    registers,
    async collect () {
      this.reset()
      for (const [queue, counts] of (await storeReadings()).queueJobs) {
        for (const state of QUEUE_STATES) this.set({ queue, state }, counts[state] ?? 0)
      }
    }
  })
  // eslint-disable-next-line no-new -- registered, read through the registry
  new Gauge({
    name: 'switchboard_database_up',
    help: '1 when Postgres answered a probe within 1 s (readings are shared by the scrapes of one second)',
    registers,
    async collect () {
      this.set((await storeReadings()).databaseUp ? 1 : 0)
    }
  })
  const poolMax = new Gauge({ name: 'switchboard_database_pool_max', help: 'Connections this process\'s Postgres pool may open (DATABASE_POOL_MAX)', registers })
  poolMax.set(sources.databasePoolMax)
  // Read from postgres.js's own connection queues when scraped (the repository's patch exposes
  // them: pnpm-workspace.yaml), so a query costs nothing more; counting in the query wrapper would
  // add a promise reaction to every query and miss the statements sent outside drizzle.
  // eslint-disable-next-line no-new -- registered, read through the registry
  new Gauge({
    name: 'switchboard_database_pool_in_use',
    help: 'Connections of this process\'s Postgres pool taken now: opening for a query, running queries, or held by a transaction',
    registers,
    collect () {
      this.set(sources.database.sql.connectionsInUse())
    }
  })
  // eslint-disable-next-line no-new -- registered, read through the registry
  new Gauge({
    name: 'switchboard_redis_up',
    help: '1 while the Redis connection is ready, by connection role',
    labelNames: ['connection'] as const,
    registers,
    collect () {
      for (const [connection, redis] of Object.entries(sources.redis)) this.set({ connection }, redis.status === 'ready' ? 1 : 0)
    }
  })
}

/** The exposition text of a process: its own registry, then the application's series. */
export async function metricsText (registry: Registry): Promise<string> {
  return `${await registry.metrics()}\n${await applicationMetrics.metrics()}`
}
