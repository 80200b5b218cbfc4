import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core'
import { id, nullableTimestamp, timestamps } from './_columns.ts'
import { DOMAINS, TRIGGER_TYPES } from '../values.ts'
import { users } from './users.ts'

export { DOMAINS, TRIGGER_TYPES }
export type TriggerType = typeof TRIGGER_TYPES[number]
export type Domain = typeof DOMAINS[number]

export interface WorkflowNode {
  id: string
  type: string
  config?: Record<string, unknown>
  next?: string
  /** Where the builder draws it (README, The workflow builder: Positions): a change of positions only makes no new version. */
  position?: { x: number, y: number }
}

/** At most `max` inbound webhooks per `windowSeconds` (a fixed window, counted in Redis); beyond, 429. */
export interface WebhookRateLimit {
  max: number
  windowSeconds: number
}

/**
 * Per-key flow control (README, Flow control): each key a template over the trigger's data,
 * rendered when a run starts (runs/flow-control.ts).
 */
export interface FlowControl {
  concurrency?: { key: string, limit: number }
  rateLimit?: { key?: string, limit: number, periodSeconds: number }
  debounce?: { key: string, periodSeconds: number, maxWaitSeconds?: number }
  /** `value`: 1 to 10, or a template rendering to one; `key`: the runs of one key take turns with the others'. */
  priority?: { value: number | string, key?: string }
}

/**
 * A run is cancelled when an event of this name arrives whose payload matches (README, Events and
 * waits): `match` maps paths into the payload to templates over the run's trigger data.
 */
export interface CancelOn {
  event: string
  match?: Record<string, string>
}

export interface WorkflowEdge {
  source: string
  target: string
  sourceHandle?: string | null
}

export const workflows = pgTable('workflows', {
  id: id(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  description: text('description'),
  triggerType: text('trigger_type', { enum: TRIGGER_TYPES }).notNull(),
  triggerConfig: jsonb('trigger_config').$type<Record<string, unknown>>().notNull().default({}),
  nodes: jsonb('nodes').$type<WorkflowNode[]>().notNull().default([]),
  edges: jsonb('edges').$type<unknown>(),
  isActive: boolean('is_active').notNull().default(false),
  domain: text('domain', { enum: DOMAINS }).notNull().default('GENERAL'),
  tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
  runCount: integer('run_count').notNull().default(0),
  successCount: integer('success_count').notNull().default(0),
  failureCount: integer('failure_count').notNull().default(0),
  lastRunAt: nullableTimestamp('last_run_at'),
  // The current definition's number in workflow_versions.
  version: integer('version').notNull().default(1),
  // Settings, not definition (no new version when they change). Null: no limit.
  // Runs of the workflow executing at once; beyond it they wait PENDING (engine/slots.ts).
  maxConcurrentRuns: integer('max_concurrent_runs'),
  webhookRateLimit: jsonb('webhook_rate_limit').$type<WebhookRateLimit>(),
  // A template over the trigger's data giving each run's tags, comma-separated (README, Finding runs).
  runTags: text('run_tags'),
  // Per-key limits of its runs' starts (README, Flow control): rendered into each run's flow_control when it starts.
  flowControl: jsonb('flow_control').$type<FlowControl>(),
  // Events that cancel its runs (README, Events and waits): each run's matches are rendered when it starts.
  cancelOn: jsonb('cancel_on').$type<CancelOn[]>(),
  // The workflow a run that fails finally starts once (README, Error workflows); runs of an error workflow start none.
  errorWorkflowId: text('error_workflow_id'),
  /**
   * The event names its runs may wait for (its wait_for_event nodes and cancelOn, set at save), so
   * that the events written only while someone listens are written for a run about to wait (events/outbox.ts).
   */
  listensTo: text('listens_to').array().notNull().default(sql`'{}'::text[]`),
  /** Sample triggerData a test run uses when given none (README, The workflow builder); never used by real triggers, never versioned. */
  pinnedData: jsonb('pinned_data').$type<unknown>(),
  /**
   * "Listen for a test request" (workflows/test-capture.ts): the first inbound webhook before this
   * time becomes pinnedData. Read by the webhook's own lookup, so a workflow not listening costs it nothing.
   */
  testCaptureUntil: nullableTimestamp('test_capture_until'),
  /** When the listening took its request; null while listening, or when it took none. */
  testCapturedAt: nullableTimestamp('test_captured_at'),
  ...timestamps()
}, (t) => [
  // The list's order, newest updatedAt first with id breaking ties, per owner and for admins;
  // NULLS FIRST like `order by … desc`, or the index cannot serve it.
  index('workflows_user_updated_idx').on(t.userId, t.updatedAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  index('workflows_updated_idx').on(t.updatedAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  index('workflows_user_trigger_idx').on(t.userId, t.triggerType, t.isActive),
  index('workflows_user_domain_idx').on(t.userId, t.domain),
  index('workflows_tags_idx').using('gin', t.tags),
  // The owners' workflows that name an event in a wait or cancelOn: probed by every run's end (events/outbox.ts), tiny while few do.
  index('workflows_listening_idx').on(t.userId).where(sql`${t.listensTo} <> '{}'`),
  // Event fan-out looks workflows up by event name.
  index('workflows_event_name_idx').on(sql`(${t.triggerConfig}->>'eventName')`).where(sql`${t.triggerType} = 'EVENT' and ${t.isActive}`),
  index('workflows_active_trigger_idx').on(t.triggerType).where(sql`${t.isActive}`)
])

export type Workflow = typeof workflows.$inferSelect
export type NewWorkflow = typeof workflows.$inferInsert
