import { Type } from 'typebox'
import { CREDENTIAL_TYPES, DOMAINS, EDGE_RULES, RUN_STATUSES, TRIGGER_TYPES } from '@switchboard/core/db'
import { BULK_RETRY_MAX_RUNS, BULK_RETRY_STATUSES } from '@switchboard/core/triggers'
import { EVENT_MATCH_BOUNDS, NODE_TYPES } from '@switchboard/core/engine'
import { CANCEL_ON_MAX_RULES, FLOW_CONTROL_BOUNDS, RUN_TAG_BOUNDS } from '@switchboard/core/runs'
import type { CancelOn as CancelOnSetting, FlowControl as FlowControlSetting } from '@switchboard/core/db'
import { EXPORT_FORMAT, EXPORT_FORMAT_VERSION } from '@switchboard/core/workflows'
import { NullableTimestamp, Pagination, Timestamp } from '../../../../schemas/common.ts'
import { ReplayVersion, RunRetried } from '../runs/schemas.ts'

export const TriggerType = Type.Enum(TRIGGER_TYPES)
export const Domain = Type.Enum(DOMAINS)

export const WorkflowNode = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  type: Type.String({ minLength: 1, maxLength: 100, description: NODE_TYPES.join(', ') }),
  config: Type.Optional(Type.Unsafe<Record<string, unknown>>(Type.Object({}, {
    additionalProperties: true,
    description: 'The config of the node’s type: GET /api/automation/node-types gives each type’s JSON Schema (docs/nodes.md).'
  }))),
  next: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'id of the following node' })),
  position: Type.Optional(Type.Object({
    x: Type.Number({ minimum: -1e6, maximum: 1e6 }),
    y: Type.Number({ minimum: -1e6, maximum: 1e6 })
  }, { additionalProperties: false, description: 'where the builder draws the node; a change of positions only makes no new version' }))
}, { additionalProperties: false })

const Name = Type.String({ maxLength: 200 })
/**
 * A type list rather than anyOf: AJV's type coercion would turn null into ''
 * trying the string branch of a union first.
 */
const NullableString = (options: { maxLength?: number, description?: string } = {}) => Type.Unsafe<string | null>({ type: ['string', 'null'], ...options })
const Description = NullableString({ maxLength: 2000 })
const TriggerConfig = Type.Unsafe<Record<string, unknown>>(Type.Object({}, {
  additionalProperties: true,
  description: 'EVENT: eventName; CRON: cronExpression (5 or 6 fields), timezone (IANA, default UTC); KEYWORD: keywords, match (contains, exact, startsWith)'
}))
const Nodes = Type.Array(WorkflowNode)
const Edges = Type.Unknown({ description: 'null, or an array of {source, target, sourceHandle?} as a visual builder saves them' })
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: 50 })

/** Bounds of the limits per workflow (README, Limits per workflow). */
const MAX_CONCURRENT_RUNS = 1000
const WEBHOOK_RATE_MAX = 100_000
const WEBHOOK_RATE_WINDOW_MAX_SECONDS = 3600

const MaxConcurrentRuns = Type.Unsafe<number | null>({
  type: ['integer', 'null'],
  minimum: 1,
  maximum: MAX_CONCURRENT_RUNS,
  description: `runs of the workflow executing at once (1–${MAX_CONCURRENT_RUNS}); beyond it runs wait PENDING and start oldest first. null: no limit`,
  errorMessage: `maxConcurrentRuns must be an integer from 1 to ${MAX_CONCURRENT_RUNS}, or null`
})
/** Checked further by core's `validateRunTags` (its placeholders). */
const RunTagsInput = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  maxLength: RUN_TAG_BOUNDS.template,
  errorMessage: `runTags must be a template of at most ${RUN_TAG_BOUNDS.template} characters, or null`
})

const WebhookRateLimitInput = Type.Unsafe<{ max: number, windowSeconds: number } | null>({
  type: ['object', 'null'],
  properties: {
    max: { type: 'integer', minimum: 1, maximum: WEBHOOK_RATE_MAX, errorMessage: `webhookRateLimit.max must be an integer from 1 to ${WEBHOOK_RATE_MAX}` },
    windowSeconds: { type: 'integer', minimum: 1, maximum: WEBHOOK_RATE_WINDOW_MAX_SECONDS, errorMessage: `webhookRateLimit.windowSeconds must be an integer from 1 to ${WEBHOOK_RATE_WINDOW_MAX_SECONDS}` }
  },
  required: ['max', 'windowSeconds'],
  additionalProperties: false,
  description: 'at most max inbound webhooks per windowSeconds; beyond, 429 with Retry-After and no run. null: no limit',
  errorMessage: 'webhookRateLimit must be an object {max, windowSeconds}, or null'
})
/** Bounded by the body's 1 MiB, as a fire's triggerData is. */
const PinnedData = Type.Unknown({ description: 'sample triggerData for test runs (POST /workflows/:id/test) when they bring none; never used by real triggers, not versioned, not exported. null: none' })
const WebhookRateLimit = Type.Union([Type.Object({ max: Type.Integer(), windowSeconds: Type.Integer() }), Type.Null()])

const B = FLOW_CONTROL_BOUNDS
/** A key template of flowControl: checked further by core's `validateFlowControl` (its placeholders). */
const flowKey = (field: string): Record<string, unknown> => ({
  type: 'string', maxLength: B.keyTemplateChars, errorMessage: `${field} must be a template of at most ${B.keyTemplateChars} characters`
})
const flowInteger = (field: string, minimum: number, maximum: number): Record<string, unknown> => ({
  type: 'integer', minimum, maximum, errorMessage: `${field} must be an integer from ${minimum} to ${maximum}`
})
const flowPart = (field: string, properties: Record<string, Record<string, unknown>>, required: string[]): Record<string, unknown> => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
  errorMessage: `${field} must be an object {${Object.keys(properties).join(', ')}} with ${required.join(', ')}`
})

const priorityMessage = `flowControl.priority.value must be an integer from ${B.priority.min} to ${B.priority.max}, or a template rendering to one`

/** flowControl (README, Flow control): per-key limits of the starts of the workflow's runs. */
const FlowControlInput = Type.Unsafe<FlowControlSetting | null>({
  type: ['object', 'null'],
  properties: {
    concurrency: flowPart('flowControl.concurrency', {
      key: flowKey('flowControl.concurrency.key'),
      limit: flowInteger('flowControl.concurrency.limit', 1, B.concurrencyLimit)
    }, ['key', 'limit']),
    rateLimit: flowPart('flowControl.rateLimit', {
      key: flowKey('flowControl.rateLimit.key'),
      limit: flowInteger('flowControl.rateLimit.limit', 1, B.rateLimit),
      periodSeconds: flowInteger('flowControl.rateLimit.periodSeconds', 1, B.ratePeriodSeconds)
    }, ['limit', 'periodSeconds']),
    debounce: flowPart('flowControl.debounce', {
      key: flowKey('flowControl.debounce.key'),
      periodSeconds: flowInteger('flowControl.debounce.periodSeconds', 1, B.debouncePeriodSeconds),
      maxWaitSeconds: flowInteger('flowControl.debounce.maxWaitSeconds', 1, B.debounceMaxWaitSeconds)
    }, ['key', 'periodSeconds']),
    priority: flowPart('flowControl.priority', {
      // The message is on each branch: the error formatter reads the schema of the first error (plugins/errors.ts).
      value: {
        anyOf: [
          { type: 'integer', minimum: B.priority.min, maximum: B.priority.max, errorMessage: priorityMessage },
          { type: 'string', maxLength: B.keyTemplateChars, errorMessage: priorityMessage }
        ]
      },
      key: flowKey('flowControl.priority.key')
    }, ['value'])
  },
  additionalProperties: false,
  minProperties: 1,
  description: 'per-key limits of the runs\' starts: concurrency {key, limit}, rateLimit {key?, limit, periodSeconds}, debounce {key, periodSeconds, maxWaitSeconds?}, priority {value, key?}; keys are templates over the trigger\'s data (README, Flow control). null: none',
  errorMessage: 'flowControl must be an object with concurrency, rateLimit, debounce or priority, or null'
})
const FlowControl = Type.Unsafe<FlowControlSetting | null>({ type: ['object', 'null'], additionalProperties: true, description: 'per-key limits (README, Flow control)' })

const M = EVENT_MATCH_BOUNDS
const cancelOnMessage = `cancelOn must be a list of at most ${CANCEL_ON_MAX_RULES} rules {event, match?}: event a name of 1 to ${M.eventChars} characters, match at most ${M.entries} paths mapped to templates of at most ${M.valueChars} characters; or null`
/** cancelOn (README, Events and waits): the events that cancel a run of the workflow; paths and templates checked further by core's `validateCancelOn`. */
const CancelOnInput = Type.Unsafe<CancelOnSetting[] | null>({
  type: ['array', 'null'],
  maxItems: CANCEL_ON_MAX_RULES,
  items: {
    type: 'object',
    properties: {
      event: { type: 'string', minLength: 1, maxLength: M.eventChars },
      match: { type: 'object', maxProperties: M.entries, additionalProperties: { type: 'string', maxLength: M.valueChars } }
    },
    required: ['event'],
    additionalProperties: false
  },
  description: 'the events that cancel a waiting or running run: [{event, match?}], match mapping paths into the event\'s payload to templates over the run\'s trigger data (README, Events and waits). null: none',
  errorMessage: cancelOnMessage
})
const CancelOn = Type.Unsafe<CancelOnSetting[] | null>({ type: ['array', 'null'], description: 'the events that cancel its runs (README, Events and waits)' })

const errorWorkflowDescription = 'the workflow a run that fails finally starts once, with triggerData {run: {id, workflowId, workflowName, error, failedNodeId, triggerData, startedAt}}: another non-CRON workflow of the owner, active or not; runs of an error workflow, child runs and test runs start none (README, Error workflows). null: none'
/** Checked further by core's workflow service: another non-CRON workflow of the owner. */
const ErrorWorkflowIdInput = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  minLength: 1,
  maxLength: 64,
  description: errorWorkflowDescription,
  errorMessage: 'errorWorkflowId must be a workflow id, or null'
})
const ErrorWorkflowId = NullableString({ description: errorWorkflowDescription })

/**
 * The writable fields. The property order is the order in which AJV reports
 * failures, which gives the API's order of checks (README, Workflows): name, triggerType, domain, the rest.
 */
const writable = {
  name: Name,
  triggerType: TriggerType,
  domain: Type.Optional(Domain),
  description: Type.Optional(Description),
  triggerConfig: Type.Optional(TriggerConfig),
  nodes: Type.Optional(Nodes),
  edges: Type.Optional(Edges),
  isActive: Type.Optional(Type.Boolean()),
  tags: Type.Optional(Tags),
  maxConcurrentRuns: Type.Optional(MaxConcurrentRuns),
  webhookRateLimit: Type.Optional(WebhookRateLimitInput),
  runTags: Type.Optional(RunTagsInput),
  flowControl: Type.Optional(FlowControlInput),
  cancelOn: Type.Optional(CancelOnInput),
  errorWorkflowId: Type.Optional(ErrorWorkflowIdInput),
  pinnedData: Type.Optional(PinnedData)
}

export const CreateWorkflowBody = Type.Object(writable, { additionalProperties: false })

export const UpdateWorkflowBody = Type.Object({
  ...writable,
  name: Type.Optional(Name),
  triggerType: Type.Optional(TriggerType)
}, { additionalProperties: false })

export const ListWorkflowsQuery = Type.Object({
  domain: Type.Optional(Domain),
  triggerType: Type.Optional(TriggerType),
  isActive: Type.Optional(Type.Boolean()),
  tag: Type.Optional(Type.String({ maxLength: 50 })),
  ...Pagination
}, { additionalProperties: false })

export const WorkflowSummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: NullableString(),
  triggerType: TriggerType,
  triggerConfig: TriggerConfig,
  isActive: Type.Boolean(),
  runCount: Type.Integer(),
  successCount: Type.Integer(),
  failureCount: Type.Integer(),
  lastRunAt: NullableTimestamp,
  domain: Domain,
  tags: Type.Array(Type.String()),
  maxConcurrentRuns: Type.Union([Type.Integer(), Type.Null()]),
  webhookRateLimit: WebhookRateLimit,
  runTags: NullableString(),
  flowControl: FlowControl,
  cancelOn: CancelOn,
  errorWorkflowId: ErrorWorkflowId,
  updatedAt: Timestamp
})

export const RecentRun = Type.Object({
  id: Type.String(),
  status: Type.Enum(RUN_STATUSES),
  durationMs: Type.Union([Type.Integer(), Type.Null()]),
  startedAt: NullableTimestamp,
  completedAt: NullableTimestamp,
  createdAt: Timestamp
})

export const WorkflowSchedule = Type.Object({
  id: Type.String(),
  workflowId: Type.String(),
  cronExpression: Type.String(),
  timezone: Type.String(),
  nextRunAt: NullableTimestamp,
  lastRunAt: NullableTimestamp,
  createdAt: Timestamp
})

/** Create, GET one and PATCH: every stored field but the owner, with the latest runs and the schedules. */
export const WorkflowDetail = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: NullableString(),
  triggerType: TriggerType,
  triggerConfig: TriggerConfig,
  nodes: Type.Array(WorkflowNode),
  edges: Edges,
  isActive: Type.Boolean(),
  domain: Domain,
  tags: Type.Array(Type.String()),
  runCount: Type.Integer(),
  successCount: Type.Integer(),
  failureCount: Type.Integer(),
  lastRunAt: NullableTimestamp,
  version: Type.Integer({ description: 'the number of the current definition (GET /workflows/:id/versions)' }),
  maxConcurrentRuns: Type.Union([Type.Integer(), Type.Null()], { description: 'runs executing at once; null: no limit' }),
  webhookRateLimit: WebhookRateLimit,
  runTags: NullableString({ description: 'a template over the trigger\'s data: each run\'s tags, comma-separated (README, Finding runs)' }),
  flowControl: FlowControl,
  cancelOn: CancelOn,
  errorWorkflowId: ErrorWorkflowId,
  pinnedData: PinnedData,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  runs: Type.Array(RecentRun, { description: 'the latest 10 runs, newest first' }),
  schedules: Type.Array(WorkflowSchedule)
})

export const TestRunBody = Type.Object({
  triggerData: Type.Optional(Type.Unknown({ description: 'the run\'s triggerData; absent: the workflow\'s pinnedData, or {}' })),
  untilNodeId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'the run ends SUCCESS once this node has run' }))
}, { additionalProperties: false })

/** POST /workflows/:id/rename-node: `to` follows the rules of any node id. */
export const RenameNodeBody = Type.Object({
  from: Type.String({ minLength: 1, maxLength: 100, description: 'the id of the node to rename' }),
  to: WorkflowNode.properties.id,
  force: Type.Optional(Type.Boolean({ default: false, description: 'rename even though code refers to the node: the code is left as it is' }))
}, { additionalProperties: false })

/** POST and GET /workflows/:id/test-capture: where "listen for a test request" stands. */
export const TestCaptureAnswer = Type.Object({
  state: Type.Union([Type.Literal('idle'), Type.Literal('armed'), Type.Literal('captured'), Type.Literal('expired')], {
    description: 'idle: never armed; armed: the next inbound webhook becomes pinnedData; captured: one did; expired: none came in time'
  }),
  until: Type.Union([Timestamp, Type.Null()], { description: 'when the listening ends (once captured: when the request came)' }),
  capturedAt: Type.Union([Timestamp, Type.Null()]),
  pinnedData: Type.Optional(Type.Unknown({ description: 'once captured: the pinned data it made, {body, headers, query} as a run’s triggerData, without authorization and cookie' }))
})

export const ListVersionsQuery = Type.Object({ ...Pagination }, { additionalProperties: false })

/** `:n` is a version number; anything else is a version that does not exist (404, like a malformed id). */
export const VersionParams = Type.Object({ id: Type.String(), n: Type.String() })

/** A version in the list: who made it and when, without its definition. */
export const WorkflowVersionSummary = Type.Object({
  version: Type.Integer(),
  triggerType: TriggerType,
  createdBy: Type.Union([Type.String(), Type.Null()], { description: 'the user who saved it; null when unknown (versions recorded at the upgrade) or deleted' }),
  restoredFrom: Type.Union([Type.Integer(), Type.Null()], { description: 'the version a restore copied' }),
  createdAt: Timestamp
})

/** One version: the definition runs started on it execute to their end. */
export const WorkflowVersion = Type.Object({
  workflowId: Type.String(),
  ...WorkflowVersionSummary.properties,
  triggerConfig: TriggerConfig,
  nodes: Type.Array(WorkflowNode),
  edges: Edges,
  edgeRule: Type.Enum(EDGE_RULES, { description: 'how a node\'s several edges without a sourceHandle are followed: all (every target, in parallel branches) or first (versions saved before that rule)' })
})

/** What an export carries of the workflow: the writable fields but isActive. */
const PortableWorkflow = Type.Object({
  name: Name,
  triggerType: TriggerType,
  domain: Type.Optional(Domain),
  description: Type.Optional(Description),
  triggerConfig: Type.Optional(TriggerConfig),
  nodes: Type.Optional(Nodes),
  edges: Type.Optional(Edges),
  tags: Type.Optional(Tags),
  maxConcurrentRuns: Type.Optional(MaxConcurrentRuns),
  webhookRateLimit: Type.Optional(WebhookRateLimitInput),
  runTags: Type.Optional(RunTagsInput),
  flowControl: Type.Optional(FlowControlInput),
  cancelOn: Type.Optional(CancelOnInput),
  errorWorkflowId: Type.Optional(ErrorWorkflowIdInput)
}, { additionalProperties: false })

const ExportedCredential = Type.Object({ name: Type.String(), type: Type.Enum(CREDENTIAL_TYPES) })

/** GET /workflows/:id/export: portable JSON without ids, owner, counters, activity, version or secrets. */
export const WorkflowExport = Type.Object({
  format: Type.Literal(EXPORT_FORMAT),
  formatVersion: Type.Literal(EXPORT_FORMAT_VERSION),
  exportedAt: Timestamp,
  workflow: Type.Object({
    name: Type.String(),
    description: NullableString(),
    triggerType: TriggerType,
    triggerConfig: TriggerConfig,
    nodes: Type.Array(WorkflowNode),
    edges: Edges,
    domain: Domain,
    tags: Type.Array(Type.String()),
    maxConcurrentRuns: Type.Union([Type.Integer(), Type.Null()]),
    webhookRateLimit: WebhookRateLimit,
    runTags: Type.Optional(NullableString()),
    flowControl: Type.Optional(FlowControl),
    cancelOn: Type.Optional(CancelOn),
    errorWorkflowId: Type.Optional(NullableString({ description: 'its error workflow\'s id: an import that cannot name it (another account\'s) leaves it out and lists errorWorkflowId in toFill' }))
  }),
  credentials: Type.Array(ExportedCredential, { description: 'the credentials the nodes name: the importer needs credentials of these names and types' }),
  redacted: Type.Array(Type.String(), { description: 'where a secret written into a node was removed' })
})

/** Places an export lists in `redacted`: one per value removed, at most a few per node. */
const MAX_REDACTED_PLACES = 10_000

/**
 * POST /workflows/import takes an export; `credentials` and `exportedAt` are informative and
 * dropped, `redacted` says which places the answer checks for a value (`toFill`).
 */
export const ImportWorkflowBody = Type.Object({
  format: Type.Literal(EXPORT_FORMAT, { errorMessage: `format must be ${EXPORT_FORMAT}` }),
  formatVersion: Type.Literal(EXPORT_FORMAT_VERSION, { errorMessage: `formatVersion must be ${EXPORT_FORMAT_VERSION}` }),
  workflow: PortableWorkflow,
  redacted: Type.Optional(Type.Array(Type.String({ maxLength: 1000 }), {
    maxItems: MAX_REDACTED_PLACES,
    errorMessage: `redacted must be at most ${MAX_REDACTED_PLACES} places`
  }))
}, { additionalProperties: false })

/** POST /workflows/import answers the workflow, and the values removed by the export that it still lacks. */
export const ImportedWorkflow = Type.Object({
  ...WorkflowDetail.properties,
  toFill: Type.Array(Type.String(), { description: 'the places of `redacted` the imported nodes leave without a value: fill them in (or use credentials) before activating the workflow; and errorWorkflowId when the exported one names no workflow of the importer' })
})

const instant = (field: string, description: string) =>
  Type.String({ format: 'date-time', maxLength: 64, description, errorMessage: `${field} must be an ISO 8601 date-time` })

/** POST /workflows/:id/runs/retry: which runs to replay, and on which version. */
export const BulkRetryBody = Type.Object({
  from: instant('from', 'runs created at or after this time'),
  to: instant('to', 'runs created before this time'),
  status: Type.Enum(BULK_RETRY_STATUSES, { default: 'FAILED', description: 'the runs to replay: FAILED (default) or CANCELLED' }),
  version: ReplayVersion
}, { additionalProperties: false })

export const BulkRetried = Type.Object({
  runs: Type.Array(RunRetried, { description: `the replays started, oldest run first; at most ${BULK_RETRY_MAX_RUNS}` }),
  more: Type.Boolean({ description: 'whether runs of the range remain to be replayed: the same call, made again, replays them next' })
})
