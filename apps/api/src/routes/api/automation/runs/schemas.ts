import { Type, type TInteger } from 'typebox'
import { RUN_STATUSES, LOG_LEVELS } from '@switchboard/core/db'
import { RUN_SEARCH_BOUNDS, RUN_TAG_BOUNDS } from '@switchboard/core/runs'
import { NullableTimestamp, Pagination, Timestamp } from '../../../../schemas/common.ts'

const RunStatus = Type.Enum(RUN_STATUSES)

export const RunLog = Type.Object({
  id: Type.String(),
  nodeId: Type.Union([Type.String(), Type.Null()]),
  level: Type.Enum(LOG_LEVELS),
  message: Type.String(),
  createdAt: Timestamp
})

/** A run without its logs, as lists return it. */
export const RunSummary = Type.Object({
  id: Type.String(),
  workflowId: Type.String(),
  workflowVersion: Type.Integer({ description: 'the workflow version the run executes, to its end' }),
  retriedFrom: Type.Union([Type.String(), Type.Null()], { description: 'the run this one replays; null when it is not a replay' }),
  parentRunId: Type.Union([Type.String(), Type.Null()], { description: 'the run whose run_workflow or foreach node started this one; null for a run started by a trigger' }),
  errorOfRunId: Type.Union([Type.String(), Type.Null()], { description: 'the failed run this run of an error workflow was started for (README, Error workflows); null for any other run' }),
  status: RunStatus,
  triggerData: Type.Unknown(),
  result: Type.Record(Type.String(), Type.Unknown()),
  error: Type.Union([Type.String(), Type.Null()]),
  createdAt: Timestamp,
  startedAt: NullableTimestamp,
  completedAt: NullableTimestamp,
  durationMs: Type.Union([Type.Integer(), Type.Null()]),
  test: Type.Boolean({ description: 'started by POST /workflows/:id/test' }),
  tags: Type.Array(Type.String(), { description: 'from POST /workflows/:id/fire?tags=, or the workflow\'s runTags (README, Finding runs)' }),
  flowControl: Type.Union([Type.Object({
    key: Type.String({ description: 'the rendered key of what holds the run (else its concurrency key)' }),
    waitingFor: Type.Union([Type.Literal('concurrency'), Type.Literal('rateLimit'), Type.Literal('debounce'), Type.Null()], { description: 'what holds its start; null once started' }),
    since: Type.Union([Timestamp, Type.Null()])
  }), Type.Null()], { description: 'its workflow\'s flowControl when it started (README, Flow control); null without one' })
})

/** A run as GET /runs/:id answers it (README, Runs). */
export const Run = Type.Object({
  ...RunSummary.properties,
  childCount: Type.Integer({ description: 'runs its run_workflow and foreach nodes started (GET /runs?parentRunId=)' }),
  logs: Type.Array(RunLog)
})

export const APPROVAL_DECISIONS = ['approve', 'reject'] as const

/** A decision's optional data, kept with it and given to the approval node's output (`data`). */
const DecisionData = Type.Optional(Type.Unknown({ description: 'kept with the decision: the approval node’s output.data' }))

/** POST /runs/:id/resume (README, Flow). */
export const ResumeRunBody = Type.Object({
  nodeId: Type.String({ minLength: 1, maxLength: 200, description: 'the approval node the run waits at' }),
  decision: Type.Enum(APPROVAL_DECISIONS),
  data: DecisionData
}, { additionalProperties: false })

/** POST /webhook/resume/:token: the decision defaults to approve. */
export const ResumeByTokenBody = Type.Object({
  decision: Type.Enum(APPROVAL_DECISIONS, { default: 'approve' }),
  data: DecisionData
}, { additionalProperties: false })

/** A decision taken: the run goes on from the approval node. */
export const RunResumed = Type.Object({ runId: Type.String(), nodeId: Type.String(), decision: Type.Enum(APPROVAL_DECISIONS) })

export const RunAccepted = Type.Object({ runId: Type.String() })

/** Which definition a replay executes (README, Replay). */
export const ReplayVersion = Type.Enum(['current', 'original'], {
  default: 'current',
  description: 'current: the workflow as it is now; original: the version the retried run executed'
})

export const RetryRunBody = Type.Object({
  version: ReplayVersion,
  fromNodeId: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 100,
    description: 'start at this node with the outputs of the nodes before it (refused when one of them holds a masked credential value)'
  }))
}, { additionalProperties: false })

/** A replay accepted: the new run, and the run it replays. */
export const RunRetried = Type.Object({ runId: Type.String(), retriedFrom: Type.String() })

const instant = (field: string, description: string) =>
  Type.String({ format: 'date-time', maxLength: 64, description, errorMessage: `${field} must be an ISO 8601 date-time` })

export const ListRunsQuery = Type.Object({
  workflowId: Type.Optional(Type.String({ maxLength: 64 })),
  parentRunId: Type.Optional(Type.String({ maxLength: 64, description: 'the children of this run' })),
  status: Type.Optional(RunStatus),
  test: Type.Optional(Type.Boolean({ description: 'true: test runs only; false: no test runs; absent: both' })),
  since: Type.Optional(instant('since', 'runs created at or after this time')),
  until: Type.Optional(instant('until', 'runs created before this time')),
  q: Type.Optional(Type.String({ maxLength: RUN_SEARCH_BOUNDS.queryChars, errorMessage: `q must be at most ${RUN_SEARCH_BOUNDS.queryChars} characters`, description: 'words of the run\'s id, trigger data or error, all of them (README, Finding runs)' })),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: RUN_TAG_BOUNDS.chars, errorMessage: `tag must be 1 to ${RUN_TAG_BOUNDS.chars} characters`, description: 'runs carrying this tag' })),
  ...Pagination
})

/** The longest window the stats cover: a day of one-minute buckets. */
export const RUN_STATS_MAX_MINUTES = 1440

export const RunStatsQuery = Type.Object({
  minutes: Type.Integer({ minimum: 1, maximum: RUN_STATS_MAX_MINUTES, default: 60, description: 'how many minutes, the current one included' }),
  workflowId: Type.Optional(Type.String({ maxLength: 64 }))
})

const StatusCounts = Type.Object(Object.fromEntries(RUN_STATUSES.map((status) => [status, Type.Integer()])) as Record<typeof RUN_STATUSES[number], TInteger>)

/** Runs created per minute over a window, by the status each has now: one bucket per minute, oldest first, empty minutes included. */
export const RunStats = Type.Object({
  since: Timestamp,
  until: Timestamp,
  bucketSeconds: Type.Literal(60),
  buckets: Type.Array(Type.Object({ minute: Timestamp, counts: StatusCounts }))
})

/** `Idempotency-Key` (README, Runs). Node joins a repeated header into one string; only the typing allows an array. */
export function idempotencyKeyOf (headers: Record<string, string | string[] | undefined>): string | undefined {
  const key = headers['idempotency-key']
  return typeof key === 'string' ? key : undefined
}
