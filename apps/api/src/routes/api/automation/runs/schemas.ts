import { Type } from 'typebox'
import { RUN_STATUSES, LOG_LEVELS } from '@switchboard/core/db'
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
  status: RunStatus,
  triggerData: Type.Unknown(),
  result: Type.Record(Type.String(), Type.Unknown()),
  error: Type.Union([Type.String(), Type.Null()]),
  createdAt: Timestamp,
  startedAt: NullableTimestamp,
  completedAt: NullableTimestamp,
  durationMs: Type.Union([Type.Integer(), Type.Null()])
})

/** Spec 2.3. */
export const Run = Type.Object({ ...RunSummary.properties, logs: Type.Array(RunLog) })

export const RunAccepted = Type.Object({ runId: Type.String() })

export const ListRunsQuery = Type.Object({
  workflowId: Type.Optional(Type.String({ maxLength: 64 })),
  status: Type.Optional(RunStatus),
  ...Pagination
})

/** `Idempotency-Key` (contract, Runs). Node joins a repeated header into one string; only the typing allows an array. */
export function idempotencyKeyOf (headers: Record<string, string | string[] | undefined>): string | undefined {
  const key = headers['idempotency-key']
  return typeof key === 'string' ? key : undefined
}
