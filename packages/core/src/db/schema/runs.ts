import { sql } from 'drizzle-orm'
import { bigint, boolean, customType, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import type { QueueName } from '../../queues/catalog.ts'
import { FINISHED_RUN_STATUSES, isFinished, RUN_STATUSES } from '../values.ts'
import { createdAt, id, nullableTimestamp } from './_columns.ts'
import { users } from './users.ts'
import { workflows } from './workflows.ts'

export { FINISHED_RUN_STATUSES, isFinished, RUN_STATUSES }
export type RunStatus = typeof RUN_STATUSES[number]
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const
export type LogLevel = typeof LOG_LEVELS[number]

/**
 * A run's flow control (README, Flow control): the keys its workflow's flowControl rendered to when
 * it started, its priority, and what holds its start (`waitingFor`, null once started, and `since`).
 * `startAt`: the start its rate limit reserved for it (engine/flow-control.ts).
 */
export interface RunFlowControl {
  concurrencyKey?: string
  rateKey?: string
  debounceKey?: string
  priority?: number
  priorityKey?: string
  waitingFor: 'concurrency' | 'rateLimit' | 'debounce' | null
  since: string | null
  startAt?: string
}

const bytea = customType<{ data: Buffer, driverData: Buffer }>({ dataType: () => 'bytea' })

export const runs = pgTable('runs', {
  id: id(),
  workflowId: text('workflow_id').notNull().references(() => workflows.id, { onDelete: 'cascade' }),
  // Denormalised owner so that run reads are scoped without a join.
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  status: text('status', { enum: RUN_STATUSES }).notNull().default('PENDING'),
  // The queue of every job of the run, fixed when it is created: the workflow's trigger type
  // may change while the run is unfinished, and its jobs must still be found where they are.
  queue: text('queue').$type<QueueName>().notNull(),
  // The workflow_versions row the run executes to its end, whatever the workflow becomes meanwhile.
  workflowVersion: integer('workflow_version').notNull(),
  // The run this one replays (POST /runs/:id/retry and the bulk retry). No foreign key: the link
  // stays a fact after retention deletes the first run, and deleting runs costs no lookup of replays.
  retriedFrom: text('retried_from'),
  // A run started by a run_workflow or foreach node (engine/README.md, "Child runs"): its parent, the
  // node that started it and, for foreach, its item. No foreign key, as for retried_from: retention
  // deletes runs one by one, and a child outliving its parent's row stays a fact.
  parentRunId: text('parent_run_id'),
  parentNodeId: text('parent_node_id'),
  itemIndex: integer('item_index'),
  // How many parents above it: a child of a top-level run is 1 (SUBWORKFLOW_MAX_DEPTH bounds it).
  depth: integer('depth').notNull().default(0),
  triggerData: jsonb('trigger_data').$type<unknown>(),
  // The exact bytes of an inbound webhook, for verify_signature; never part of triggerData.
  rawBody: bytea('raw_body'),
  result: jsonb('result').$type<Record<string, unknown>>().notNull().default({}),
  error: text('error'),
  // The node to run when the run resumes (after a wait, or after its worker died).
  currentNodeId: text('current_node_id'),
  // Takeovers: claims of a RUNNING run whose worker stopped (not a retry of the same job after an error).
  attempt: integer('attempt').notNull().default(0),
  // The fencing token: bumped by every claim; a step is written only under the claim that read it.
  claim: integer('claim').notNull().default(0),
  // Who holds the claim: one delivery of one job (`<queue>/<jobId>/<added>/<stalls>`), null when claimed outside a job.
  claimOwner: text('claim_owner'),
  createdAt: createdAt(),
  startedAt: nullableTimestamp('started_at'),
  completedAt: nullableTimestamp('completed_at'),
  durationMs: integer('duration_ms'),
  // A run started by POST /workflows/:id/test (README, The workflow builder): counted as a run, filtered by `?test=`.
  test: boolean('test').notNull().default(false),
  // Set when the run starts: `POST …/fire?tags=`, else the workflow's runTags rendered (README, Finding runs).
  tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
  // A test run's last node: the run ends SUCCESS once that node has run ("Run to here").
  untilNodeId: text('until_node_id'),
  // The assistant turn this run is a tool call of (README, The assistant: Tools): its end wakes the
  // turn. No foreign key, as for parent_run_id: a run outliving its turn's row stays a fact.
  assistantTurnId: text('assistant_turn_id'),
  // Its workflow's flowControl rendered when it started (runs/flow-control.ts), and what it waits for; null without one.
  flowControl: jsonb('flow_control').$type<RunFlowControl>(),
  // A run of an error workflow (README, Error workflows): the failed run it was started for. Unique,
  // so each failed run starts its error workflow once; such a run starts no error workflow itself.
  errorOfRunId: text('error_of_run_id')
}, (t) => [
  // Newest first, id breaking ties, as the run list and a workflow's latest runs read them: per workflow,
  // per owner, and for admins (every run). NULLS FIRST like `order by … desc`, or the index cannot serve it.
  index('runs_workflow_created_idx').on(t.workflowId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  index('runs_user_created_idx').on(t.userId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  index('runs_created_idx').on(t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  index('runs_unfinished_idx').on(t.status, t.createdAt).where(sql`${t.status} in ('PENDING', 'RUNNING', 'WAITING')`),
  // A user's runs in flight and waiting, which their quotas count (users/quotas.ts).
  index('runs_user_active_idx').on(t.userId, t.status).where(sql`${t.status} in ('RUNNING', 'WAITING')`),
  // Retention clears raw bodies past RAW_BODY_RETENTION_HOURS: only the rows that still hold one are indexed.
  index('runs_raw_body_created_idx').on(t.createdAt).where(sql`${t.rawBody} is not null`),
  // The bulk retry skips runs retried already: only replays are indexed.
  index('runs_retried_from_idx').on(t.retriedFrom).where(sql`${t.retriedFrom} is not null`),
  // A node's children, one per item: the insert's conflict target (a node started again after a
  // crash finds the children it started), its loop's progress and `?parentRunId=` (children only).
  uniqueIndex('runs_parent_item_idx').on(t.parentRunId, t.parentNodeId, t.itemIndex).where(sql`${t.parentRunId} is not null`),
  uniqueIndex('runs_error_of_run_idx').on(t.errorOfRunId).where(sql`${t.errorOfRunId} is not null`)
])

const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' })

/**
 * What `GET /api/automation/runs?q=&tag=` searches (README, Finding runs): a run's id, the start of its
 * trigger data and of its error as words, and its tags, in a table of its own so that the writes of the
 * hot path gain nothing: the worker indexes new runs in batches behind them (runs/search-index.ts), and a
 * trigger on a change of a run's error rewrites its words (migration 0027_run_search).
 */
export const runSearch = pgTable('run_search', {
  runId: text('run_id').primaryKey().references(() => runs.id, { onDelete: 'cascade' }),
  userId: text('user_id').notNull(),
  workflowId: text('workflow_id').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  tags: text('tags').array().notNull(),
  terms: tsvector('terms').notNull()
}, (t) => [
  index('run_search_terms_idx').using('gin', t.terms),
  index('run_search_tags_idx').using('gin', t.tags),
  // Newest first, a search's window and its reading in order (README, Finding runs): a member's runs, and everyone's for an admin.
  index('run_search_user_created_idx').on(t.userId, t.createdAt.desc().nullsFirst(), t.runId.desc().nullsFirst()),
  index('run_search_created_idx').on(t.createdAt.desc().nullsFirst(), t.runId.desc().nullsFirst())
])

/** How far the worker has indexed runs into run_search, in the order of `runs_created_idx`: one row. */
export const runSearchProgress = pgTable('run_search_progress', {
  id: integer('id').primaryKey(),
  indexedUntil: timestamp('indexed_until', { withTimezone: true, mode: 'date' }).notNull(),
  lastRunId: text('last_run_id').notNull()
})

/**
 * A run waiting at an approval node (engine/README.md, "Waits and resumes"): one row per node and
 * run, its public resume token stored as a SHA-256 digest, decided once (by the resume route, the
 * public resume URL, or its timeout).
 */
export const runWaits = pgTable('run_waits', {
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  nodeId: text('node_id').notNull(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  tokenHash: text('token_hash').notNull(),
  message: text('message'),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  decision: text('decision', { enum: ['approve', 'reject', 'timeout'] }),
  data: jsonb('data').$type<unknown>(),
  // The user who decided (null: the public URL or the timeout).
  decidedBy: text('decided_by'),
  decidedAt: nullableTimestamp('decided_at'),
  createdAt: createdAt()
}, (t) => [
  primaryKey({ columns: [t.runId, t.nodeId] }),
  uniqueIndex('run_waits_token_idx').on(t.tokenHash),
  // The approvals a user has to decide, oldest first.
  index('run_waits_open_idx').on(t.userId, t.createdAt).where(sql`${t.decidedAt} is null`)
])

// Keyed by run, then line: every read and delete goes by run, and one index is all a line inserts
// (a key of its own beside (run_id, id) made two; docs/decisions.md, "Fewer writes per run").
export const runLogs = pgTable('run_logs', {
  id: bigint('id', { mode: 'number' }).notNull().generatedAlwaysAsIdentity(),
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  nodeId: text('node_id'),
  level: text('level', { enum: LOG_LEVELS }).notNull().default('INFO'),
  message: text('message').notNull(),
  createdAt: createdAt()
}, (t) => [primaryKey({ name: 'run_logs_pkey', columns: [t.runId, t.id] })])

/** `Idempotency-Key` of /fire and the inbound webhook: one run per key and workflow for 24 hours. */
export const idempotencyKeys = pgTable('idempotency_keys', {
  workflowId: text('workflow_id').notNull().references(() => workflows.id, { onDelete: 'cascade' }),
  key: text('key').notNull(),
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  createdAt: createdAt()
}, (t) => [
  primaryKey({ columns: [t.workflowId, t.key] }),
  index('idempotency_keys_created_idx').on(t.createdAt),
  // Deleting a run (retention) cascades to its keys: found by index, not by a scan per run.
  index('idempotency_keys_run_idx').on(t.runId)
])

export type Run = typeof runs.$inferSelect
export type NewRun = typeof runs.$inferInsert
export type RunLog = typeof runLogs.$inferSelect
export type RunWait = typeof runWaits.$inferSelect
export type ApprovalDecision = 'approve' | 'reject'
