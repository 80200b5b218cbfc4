import { and, arrayContains, desc, eq, getTableColumns, sql, type SQL } from 'drizzle-orm'
import { exactCounters } from './counters.ts'
import { listensToOf } from './listens-to.ts'
import { armTestCaptureValues, testCaptureColumns, type TestCapture } from './test-capture.ts'
import { isAdmin, type Viewer, workflowLimit } from '../users/viewer.ts'
import type { DbOrTx } from '../db/client.ts'
import {
  runs,
  workflows,
  workflowSchedules,
  type Domain,
  type NewWorkflow,
  type RunStatus,
  type TriggerType,
  type Workflow,
  type WorkflowSchedule
} from '../db/schema/index.ts'

/** The fields a client may set; ids, owner, counters and timestamps are the server's. */
export const EDITABLE_WORKFLOW_FIELDS = [
  'name', 'description', 'triggerType', 'triggerConfig', 'nodes', 'edges', 'isActive', 'domain', 'tags',
  'maxConcurrentRuns', 'webhookRateLimit', 'runTags', 'flowControl', 'cancelOn', 'errorWorkflowId', 'pinnedData'
] as const satisfies ReadonlyArray<keyof NewWorkflow>

export type WorkflowInput = Pick<NewWorkflow, typeof EDITABLE_WORKFLOW_FIELDS[number]>
export type WorkflowChanges = Partial<WorkflowInput>

export interface RecentRun {
  id: string
  status: RunStatus
  durationMs: number | null
  startedAt: Date | null
  completedAt: Date | null
  createdAt: Date
}

/** GET one: the workflow with its latest runs (newest first) and its schedules (README, Workflows). */
export interface WorkflowDetail extends Workflow {
  runs: RecentRun[]
  schedules: WorkflowSchedule[]
}

/** The summary fields of the list (README, Workflows). */
const summaryColumns = {
  id: workflows.id,
  name: workflows.name,
  description: workflows.description,
  triggerType: workflows.triggerType,
  triggerConfig: workflows.triggerConfig,
  isActive: workflows.isActive,
  ...exactCounters,
  domain: workflows.domain,
  tags: workflows.tags,
  maxConcurrentRuns: workflows.maxConcurrentRuns,
  webhookRateLimit: workflows.webhookRateLimit,
  runTags: workflows.runTags,
  flowControl: workflows.flowControl,
  cancelOn: workflows.cancelOn,
  errorWorkflowId: workflows.errorWorkflowId,
  updatedAt: workflows.updatedAt
}

type WorkflowSummary = { [K in keyof typeof summaryColumns]: Workflow[K] }

/** Every column, with the counters as the API gives them: exact, deltas not yet folded included. */
const workflowColumns = { ...getTableColumns(workflows), ...exactCounters }

interface WorkflowFilters {
  domain?: Domain
  triggerType?: TriggerType
  isActive?: boolean
  tag?: string
  limit: number
  offset: number
}

/** A deleted workflow, and whether it had a schedule (its scheduler in Redis must go too). */
export interface DeletedWorkflow {
  id: string
  userId: string
  name: string
  hadSchedule: boolean
}

const RECENT_RUNS_LIMIT = 10

const toDate = (value: string | null): Date | null => value === null ? null : new Date(value)

const parseJson = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T

/*
 * Correlated subqueries name their tables explicitly: Drizzle renders a column of
 * a single-table select unqualified, which inside a subquery would bind to the inner table.
 * json_agg renders timestamps as text; they are turned back into Dates below.
 */
const recentRunsJson = sql`coalesce((
  select json_agg(json_build_object(
    'id', r.id, 'status', r.status, 'durationMs', r.duration_ms,
    'startedAt', r.started_at, 'completedAt', r.completed_at, 'createdAt', r.created_at
  ) order by r.created_at desc, r.id desc)
  from (
    select * from ${runs} where ${runs}.workflow_id = ${workflows}.id
    order by ${runs}.created_at desc, ${runs}.id desc limit ${sql.raw(String(RECENT_RUNS_LIMIT))}
  ) r
), '[]'::json)`

const schedulesJson = sql`coalesce((
  select json_agg(json_build_object(
    'id', s.id, 'workflowId', s.workflow_id, 'cronExpression', s.cron_expression, 'timezone', s.timezone,
    'nextRunAt', s.next_run_at, 'lastRunAt', s.last_run_at, 'createdAt', s.created_at
  ) order by s.created_at)
  from ${workflowSchedules} s where s.workflow_id = ${workflows}.id
), '[]'::json)`

/** Rows of a json_agg: `createdAt` and the nullable timestamp columns `dates` become Dates again. */
function rowsWithDates<T> (value: unknown, dates: ReadonlyArray<keyof T & string>): T[] {
  return parseJson<Array<Record<string, string | null>>>(value).map((row) => {
    const converted: Record<string, unknown> = { ...row, createdAt: new Date(row.createdAt!) }
    for (const key of dates) converted[key] = toDate(row[key] ?? null)
    return converted as T
  })
}

const mapRuns = (value: unknown): RecentRun[] => rowsWithDates<RecentRun>(value, ['startedAt', 'completedAt'])
const mapSchedules = (value: unknown): WorkflowSchedule[] => rowsWithDates<WorkflowSchedule>(value, ['nextRunAt', 'lastRunAt'])

/** Only the client-editable keys of `input`: a defence against mass assignment whatever the caller passes. */
function editableFields<T extends WorkflowChanges> (input: T): WorkflowChanges {
  const picked: Record<string, unknown> = {}
  for (const field of EDITABLE_WORKFLOW_FIELDS) {
    if (input[field] !== undefined) picked[field] = input[field]
  }
  return picked as WorkflowChanges
}

/**
 * Workflow definitions. Every read and write is scoped by owner. Ids are not checked here:
 * the api answers a malformed one before any query (apps/api/src/schemas/ids.ts).
 */
export function workflowsRepository (db: DbOrTx) {
  const byId = (viewer: Viewer, id: string): SQL | undefined =>
    and(eq(workflows.id, id), isAdmin(viewer) ? undefined : eq(workflows.userId, viewer.id), workflowLimit(viewer, workflows.id))

  return {
    async create (userId: string, input: WorkflowInput): Promise<Workflow> {
      const [workflow] = await db.insert(workflows)
        .values({ ...(editableFields(input) as WorkflowInput), userId, listensTo: listensToOf(input.nodes ?? [], input.cancelOn) })
        .returning()
      return workflow!
    },

    /** Newest `updatedAt` first; each filter narrows the list (README, Workflows). */
    async list (viewer: Viewer, filters: WorkflowFilters): Promise<WorkflowSummary[]> {
      return db.select(summaryColumns).from(workflows)
        .where(and(
          isAdmin(viewer) ? undefined : eq(workflows.userId, viewer.id),
          workflowLimit(viewer, workflows.id),
          filters.domain === undefined ? undefined : eq(workflows.domain, filters.domain),
          filters.triggerType === undefined ? undefined : eq(workflows.triggerType, filters.triggerType),
          filters.isActive === undefined ? undefined : eq(workflows.isActive, filters.isActive),
          // `@>` so that the GIN index on tags serves it.
          filters.tag === undefined ? undefined : arrayContains(workflows.tags, [filters.tag])
        ))
        .orderBy(desc(workflows.updatedAt), desc(workflows.id))
        .limit(filters.limit)
        .offset(filters.offset)
    },

    /** The stored workflow; `forUpdate` locks its row until the transaction ends. */
    async findById (viewer: Viewer, id: string, options: { forUpdate?: boolean } = {}): Promise<Workflow | null> {
      const query = db.select().from(workflows).where(byId(viewer, id)).limit(1)
      const [workflow] = options.forUpdate === true ? await query.for('update') : await query
      return workflow ?? null
    },

    /** Whether the viewer can see the workflow. */
    async isVisible (viewer: Viewer, id: string): Promise<boolean> {
      const [found] = await db.select({ id: workflows.id }).from(workflows).where(byId(viewer, id)).limit(1)
      return found !== undefined
    },

    /** The workflow with its recent runs and schedules, in one query. */
    async findDetail (viewer: Viewer, id: string): Promise<WorkflowDetail | null> {
      const [row] = await db.select({ workflow: workflowColumns, runs: recentRunsJson, schedules: schedulesJson })
        .from(workflows).where(byId(viewer, id)).limit(1)
      if (row === undefined) return null
      return { ...row.workflow, runs: mapRuns(row.runs), schedules: mapSchedules(row.schedules) }
    },

    /**
     * `version`: the number of the definition the change makes current, when it makes a new one;
     * `listensTo`: the merged definition's (listens-to.ts), when its nodes or cancelOn change.
     */
    async update (viewer: Viewer, id: string, changes: WorkflowChanges, version?: number, listensTo?: string[]): Promise<Workflow | null> {
      const [workflow] = await db.update(workflows).set({ ...editableFields(changes), ...(version !== undefined && { version }), ...(listensTo !== undefined && { listensTo }) })
        .where(byId(viewer, id)).returning(workflowColumns)
      return workflow ?? null
    },

    /** Its test capture (test-capture.ts) with the pinned data, or null when the viewer cannot see it. */
    async findTestCapture (viewer: Viewer, id: string): Promise<(TestCapture & { pinnedData: unknown }) | null> {
      const [found] = await db.select({ ...testCaptureColumns, pinnedData: workflows.pinnedData }).from(workflows).where(byId(viewer, id)).limit(1)
      return found ?? null
    },

    /** Arms its test capture if it is a WEBHOOK workflow the viewer can see; null otherwise. */
    async armTestCapture (viewer: Viewer, id: string): Promise<TestCapture | null> {
      const [armed] = await db.update(workflows).set(armTestCaptureValues())
        .where(and(byId(viewer, id), eq(workflows.triggerType, 'WEBHOOK'))).returning(testCaptureColumns)
      return armed ?? null
    },

    /**
     * Its runs, logs, idempotency keys and schedules go with it (foreign keys cascade).
     * `hadSchedule` is read in the statement's snapshot, before the cascade.
     */
    async delete (viewer: Viewer, id: string): Promise<DeletedWorkflow | null> {
      const [deleted] = await db.delete(workflows).where(byId(viewer, id)).returning({
        id: workflows.id,
        userId: workflows.userId,
        name: workflows.name,
        hadSchedule: sql<boolean>`exists (select 1 from ${workflowSchedules} s where s.workflow_id = ${workflows}.id)`
      })
      return deleted ?? null
    },

    /**
     * The trigger type of workflow `id` of `ownerId`, as an errorWorkflowId may name it (README, Error
     * workflows), locked against a delete until the transaction ends; null when the owner has none.
     */
    async errorWorkflowTarget (ownerId: string, id: string): Promise<{ triggerType: TriggerType } | null> {
      const [found] = await db.select({ triggerType: workflows.triggerType }).from(workflows)
        .where(and(eq(workflows.id, id), eq(workflows.userId, ownerId))).limit(1).for('share')
      return found ?? null
    },

    /** The owner's workflows naming the deleted workflow `id` as their error workflow name none any more (README, Error workflows). */
    async forgetErrorWorkflow (ownerId: string, id: string): Promise<void> {
      await db.execute(sql`update ${workflows} set error_workflow_id = null where user_id = ${ownerId} and error_workflow_id = ${id}`)
    }
  }
}

export type WorkflowsRepository = ReturnType<typeof workflowsRepository>
