import { and, asc, desc, eq, gte, lt, sql, type SQL, type SQLWrapper } from 'drizzle-orm'
import { alias } from 'drizzle-orm/pg-core'
import type { DbOrTx } from '../db/client.ts'
import { isAdmin, type Viewer, workflowLimit } from '../users/viewer.ts'
import { runLogs, runs, runSearch, type Run, type RunLog, type RunStatus } from '../db/schema/index.ts'
import type { QueueName } from '../queues/catalog.ts'
import { durationMsSince, textArray } from '../db/sql.ts'
import { cancelDescendants, cancelledEvents } from './cancel.ts'
import { shownFlowControl, type ShownFlowControl } from './flow-control.ts'

/** A run as the API answers it (README, Runs), without the internals (owner, raw body, resume point, attempt). */
const runColumns = {
  id: runs.id,
  workflowId: runs.workflowId,
  workflowVersion: runs.workflowVersion,
  retriedFrom: runs.retriedFrom,
  parentRunId: runs.parentRunId,
  errorOfRunId: runs.errorOfRunId,
  status: runs.status,
  triggerData: runs.triggerData,
  result: runs.result,
  error: runs.error,
  createdAt: runs.createdAt,
  startedAt: runs.startedAt,
  completedAt: runs.completedAt,
  durationMs: runs.durationMs,
  test: runs.test,
  tags: runs.tags,
  flowControl: shownFlowControl.as('flow_control')
}

type RunSummary = Pick<Run, Exclude<keyof typeof runColumns, 'flowControl'>> & { flowControl: ShownFlowControl | null }

/** Log ids leave as strings (README, Conventions); their order is the order of the bigint identity. */
type RunLogView = Omit<RunLog, 'id' | 'runId'> & { id: string }

/** A run's node outputs (its result without triggerData) once it succeeded, else null: what a parent's node and an assistant turn are given. */
export const succeededOutput = sql`case when status = 'SUCCESS' then result - 'triggerData' end`

/** What a run came to: `output` for a success (its node outputs as JSON text), `error` for a failure. */
export interface RunOutcomeView {
  status: RunStatus
  output: string | null
  error: string | null
}

export type RunWithLogs = RunSummary & { childCount: number, logs: RunLogView[] }

interface CancelledRun {
  run: RunWithLogs
  queue: QueueName
  currentNodeId: string | null
  /** The parent of a cancelled child run: woken, so that its node sees the cancel. */
  parent: { runId: string, queue: QueueName } | null
  /** The `workflow.run.cancelled` events written (the run's and its descendants'), to dispatch. */
  eventIds: string[]
  /** The assistant turn a cancelled tool run belongs to: woken, so that it sees the cancel. */
  assistantTurnId: string | null
}

export interface ListRunsFilter {
  workflowId?: string
  /** The children of this run (run_workflow, foreach). */
  parentRunId?: string
  status?: RunStatus
  /** Test runs only (true), or none of them (false). */
  test?: boolean
  /** createdAt at or after this time. */
  since?: Date
  /** createdAt before this time. */
  until?: Date
  /** Words of the run's id, trigger data or error, all of them (README, Finding runs). */
  q?: string
  /** Runs carrying this tag. */
  tag?: string
  limit: number
  offset: number
}

/** How many runs created in one minute have one status now. */
export interface RunsInMinute {
  minute: Date
  status: RunStatus
  count: number
}

/** The newest run_search rows a search checks first, before it asks the words' and tags' indexes (README, Finding runs). */
const RECENT_WINDOW = 5000

/**
 * Matches a search narrows to by ids: beyond this many the words are common, and the list reads
 * run_search newest first, where the matches come soon (README, Finding runs).
 */
const FEW_MATCHES = 5000

/** run_search as the search reads it, aliased `s` (a window of its newest rows is the subquery `w`). */
const searched = alias(runSearch, 's')

/** The rows of run_search a viewer's search may read, with the filters run_search holds too (its copies of the run's owner, workflow and creation time). */
function searchScope (viewer: Viewer, filter: ListRunsFilter): SQL | undefined {
  return and(
    isAdmin(viewer) ? undefined : eq(searched.userId, viewer.id),
    workflowLimit(viewer, searched.workflowId),
    filter.workflowId === undefined ? undefined : eq(searched.workflowId, filter.workflowId),
    filter.since === undefined ? undefined : gte(searched.createdAt, filter.since),
    filter.until === undefined ? undefined : lt(searched.createdAt, filter.until)
  )
}

/**
 * What `?q=` and `?tag=` match of a run_search row's `terms` and `tags` (README, Finding runs): the query's words
 * (split at every character that is no letter or digit, as the run's were, migration 0027_run_search), all of them
 * a run's, as plain text (`plainto_tsquery`: nothing of the query is an operator). Null: a query of no words (only
 * punctuation), which matches nothing.
 */
function searchWords (filter: Pick<ListRunsFilter, 'q' | 'tag'>): ((row: { terms: SQLWrapper, tags: SQLWrapper }) => SQL) | null {
  const q = filter.q?.replace(/[^\p{L}\p{N}]+/gu, ' ').trim()
  if (q === '') return null
  return (row) => and(
    q === undefined ? undefined : sql`${row.terms} @@ plainto_tsquery('simple', ${q})`,
    filter.tag === undefined ? undefined : sql`${row.tags} @> array[${filter.tag}]::text[]`
  ) ?? sql`true`
}

/**
 * Of a search's matches (their run_search rows), the runs its page can hold: when no filter only `runs` holds
 * applies (status, test, parentRunId), the matches no older than the page's last one by run_search's copy of the
 * creation time (ties kept: `runs` orders them), so that only those are read; else all of them.
 */
function pageCandidates<Match extends { createdAt: Date }> (matches: Match[], filter: ListRunsFilter): Match[] {
  if (filter.status !== undefined || filter.test !== undefined || filter.parentRunId !== undefined) return matches
  const last = matches.map(({ createdAt }) => createdAt.getTime()).sort((a, b) => b - a)[filter.offset + filter.limit - 1]
  return last === undefined ? matches : matches.filter(({ createdAt }) => createdAt.getTime() >= last)
}

export function runsRepository (db: DbOrTx) {
  const ownedBy = (viewer: Viewer): SQL | undefined => and(isAdmin(viewer) ? undefined : eq(runs.userId, viewer.id), workflowLimit(viewer, runs.workflowId))

  async function get (id: string, viewer: Viewer): Promise<RunWithLogs | null> {
    // The logs after the run, never beside it: read in parallel, a run seen ended could come with
    // the lines of a moment before its end, since its last lines commit with its status.
    const childCount = sql<number>`(select count(*)::int from runs as children where children.parent_run_id = "runs"."id")`
    const [run] = await db.select({ ...runColumns, childCount }).from(runs).where(and(eq(runs.id, id), ownedBy(viewer))).limit(1)
    if (run === undefined) return null
    const logs = await db.select({ id: runLogs.id, nodeId: runLogs.nodeId, level: runLogs.level, message: runLogs.message, createdAt: runLogs.createdAt })
      .from(runLogs).where(eq(runLogs.runId, id)).orderBy(asc(runLogs.id))
    return { ...run, logs: logs.map((log) => ({ ...log, id: String(log.id) })) }
  }

  return {
    get,

    /**
     * Newest first, without logs. A search (`q`, `tag`, README, Finding runs) is answered in at most
     * three ways, tried in turn, the first two bounded: the newest RECENT_WINDOW rows of run_search the viewer may read, their
     * words checked in the rows themselves, answer a common word's first pages; when they fill no page, the
     * words' and tags' indexes name the matches (at most FEW_MATCHES: a rarer word's); beyond that, run_search
     * is read newest first until the page is full. Each reads run_search in the order of its creation index,
     * and `runs` only for the matches.
     */
    async list (viewer: Viewer, filter: ListRunsFilter): Promise<RunSummary[]> {
      const filters = and(
        ownedBy(viewer),
        filter.workflowId === undefined ? undefined : eq(runs.workflowId, filter.workflowId),
        filter.parentRunId === undefined ? undefined : eq(runs.parentRunId, filter.parentRunId),
        filter.status === undefined ? undefined : eq(runs.status, filter.status),
        filter.test === undefined ? undefined : eq(runs.test, filter.test),
        filter.since === undefined ? undefined : gte(runs.createdAt, filter.since),
        filter.until === undefined ? undefined : lt(runs.createdAt, filter.until)
      )
      if (filter.q === undefined && filter.tag === undefined) {
        return db.select(runColumns).from(runs).where(filters).orderBy(desc(runs.createdAt), desc(runs.id)).limit(filter.limit).offset(filter.offset)
      }
      const words = searchWords(filter)
      if (words === null) return []
      const scope = searchScope(viewer, filter)
      // The window's words are checked above its limit, so that it is the newest rows, not the newest matches.
      const inOrder = async (window?: number): Promise<RunSummary[]> => {
        const rows = db.select({ runId: searched.runId, createdAt: searched.createdAt, terms: searched.terms, tags: searched.tags })
          .from(searched).where(scope).orderBy(desc(searched.createdAt), desc(searched.runId))
        const newest = (window === undefined ? rows : rows.limit(window)).as('w')
        return db.select(runColumns).from(newest).innerJoin(runs, eq(runs.id, newest.runId)).where(and(words(newest), filters))
          .orderBy(desc(newest.createdAt), desc(newest.runId)).limit(filter.limit).offset(filter.offset)
      }
      const inWindow = await inOrder(RECENT_WINDOW)
      if (inWindow.length === filter.limit) return inWindow
      const few = await db.select({ runId: searched.runId, createdAt: searched.createdAt }).from(searched).where(and(scope, words(searched))).limit(FEW_MATCHES + 1)
      if (few.length > FEW_MATCHES) return inOrder()
      return db.select(runColumns).from(runs).where(and(filters, sql`${runs.id} = any(${textArray(pageCandidates(few, filter).map(({ runId }) => runId))})`))
        .orderBy(desc(runs.createdAt), desc(runs.id)).limit(filter.limit).offset(filter.offset)
    },

    /** The status of each of `runIds`, with a successful run's node outputs as JSON text (its triggerData left out) or the error of a failed one. */
    async outcomes (runIds: readonly string[]): Promise<Map<string, RunOutcomeView>> {
      const rows = await db.execute<RunOutcomeView & { id: string } & Record<string, unknown>>(sql`
        select id, status, (${succeededOutput})::text as output, error
        from runs where id = any(${textArray(runIds)})`)
      return new Map(rows.map(({ id, ...outcome }) => [id, outcome]))
    },

    /**
     * Runs created since `since`, counted by the minute they were created in and the status
     * they have now; minutes without runs are absent. A range read of the created-at indexes
     * (per owner, per workflow, or every run for admins), so it costs the runs of the window only.
     */
    async perMinute (viewer: Viewer, filter: { since: Date, workflowId?: string }): Promise<RunsInMinute[]> {
      const minute = sql<Date>`date_trunc('minute', ${runs.createdAt})`.mapWith(runs.createdAt)
      return db.select({ minute, status: runs.status, count: sql<number>`count(*)::int` })
        .from(runs)
        .where(and(
          ownedBy(viewer),
          filter.workflowId === undefined ? undefined : eq(runs.workflowId, filter.workflowId),
          gte(runs.createdAt, filter.since)
        ))
        .groupBy(minute, runs.status)
    },

    /**
     * Ends a PENDING, RUNNING or WAITING run as CANCELLED with a guarded update, so a
     * run that finished meanwhile keeps its terminal status, then its unfinished child runs
     * and theirs. Returns the run with what locates its jobs (the queue recorded on the run, a
     * waiting run's current node names its resume job) and its parent, `finished`, or null
     * when the viewer has no such run.
     */
    async cancel (id: string, viewer: Viewer): Promise<CancelledRun | 'finished' | null> {
      const owner = sql`${viewer.role === 'admin' ? sql`` : sql`and user_id = ${viewer.id}`} and ${workflowLimit(viewer, sql`workflow_id`)}`
      const [cancelled] = await db.execute<{ queue: QueueName, currentNodeId: string | null, parentRunId: string | null, parentQueue: QueueName | null, assistantTurnId: string | null, eventId: string | null }>(sql`
        with cancelled as (
          update runs set
            status = 'CANCELLED',
            completed_at = now(),
            duration_ms = ${durationMsSince(sql`started_at`)}
          where id = ${id} ${owner} and status in ('PENDING', 'RUNNING', 'WAITING')
          returning id, queue, current_node_id, parent_run_id, workflow_id, user_id, assistant_turn_id
        ), logged as (
          insert into run_logs (run_id, level, message) select id, 'INFO', 'Run cancelled' from cancelled
        ), emitted as (${cancelledEvents(sql`cancelled`)})
        select queue, current_node_id as "currentNodeId", parent_run_id as "parentRunId", assistant_turn_id as "assistantTurnId",
          (select parent.queue from runs as parent where parent.id = cancelled.parent_run_id) as "parentQueue",
          (select id from emitted) as "eventId"
        from cancelled
      `)
      if (cancelled === undefined) {
        const [existing] = await db.select({ id: runs.id }).from(runs).where(and(eq(runs.id, id), ownedBy(viewer))).limit(1)
        return existing === undefined ? null : 'finished'
      }
      const descendants = await db.execute<{ eventId: string | null }>(cancelDescendants(sql`select id from runs where parent_run_id = ${id}`))
      const eventIds = [cancelled.eventId, ...descendants.map(({ eventId }) => eventId)].filter((eventId) => eventId !== null)
      const run = await get(id, viewer)
      const parent = cancelled.parentRunId === null || cancelled.parentQueue === null ? null : { runId: cancelled.parentRunId, queue: cancelled.parentQueue }
      return run === null ? null : { run, queue: cancelled.queue, currentNodeId: cancelled.currentNodeId, parent, eventIds, assistantTurnId: cancelled.assistantTurnId }
    }
  }
}
