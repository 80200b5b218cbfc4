import { createHash } from 'node:crypto'
import { createId } from '@paralleldrive/cuid2'
import { sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { storableJson } from '../db/storable.ts'
import type { Workflow } from '../db/schema/index.ts'
import { withTimeout } from '../timeout.ts'
import { runJobId, runQueueFor, type QueueName, type Queues, type RunJobData } from '../queues.ts'

export interface RunServiceDeps {
  db: DbOrTx
  queues: Queues
}

/** What starting a run needs to know about its workflow: never its nodes, so the cost does not grow with its size. */
export type RunTarget = Pick<Workflow, 'id' | 'userId' | 'triggerType'>

export interface StartRunInput {
  workflow: RunTarget
  triggerData: unknown
  /** The exact bytes of an inbound webhook, for verify_signature. */
  rawBody?: Buffer
  /** Same key for the same workflow within 24 hours: the first run is returned and nothing is created. */
  idempotencyKey?: string
}

export interface StartedRun {
  runId: string
  /** False when an idempotency key matched an earlier run. */
  created: boolean
}

/** How long an idempotency key holds (contract: 24 hours); older keys are taken over, and purged by the worker's reconciler. */
export const IDEMPOTENCY_WINDOW = sql.raw('interval \'24 hours\'')

/**
 * BullMQ waits for a Redis connection that may never come back; the caller gets its
 * error (webhook: 500, so the sender retries) instead of hanging.
 */
const ENQUEUE_TIMEOUT_MS = 3000

/** Keys are client-chosen: a long one is stored as its digest so that any header value works. */
const MAX_STORED_KEY_LENGTH = 255

function storedKey (key: string | undefined): string | undefined {
  if (key === undefined || key === '') return undefined
  return key.length <= MAX_STORED_KEY_LENGTH ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`
}

/** Payloads come from outside: characters jsonb cannot hold become U+FFFD rather than failing the start. */
const jsonb = (value: unknown): SQL => sql`${storableJson(value)}::jsonb`

/**
 * Starts one run: the PENDING row, the workflow's runCount and lastRunAt and the
 * idempotency key are written by a single statement, then the job is enqueued.
 */
export async function startRun (deps: RunServiceDeps, input: StartRunInput): Promise<StartedRun> {
  const { workflow } = input
  const idempotencyKey = storedKey(input.idempotencyKey)
  if (idempotencyKey === undefined) {
    const [runId] = await startRuns(deps, [input])
    return { runId: runId!, created: true }
  }

  const runId = createId()
  const queue = runQueueFor(workflow.triggerType)
  // The key is claimed before the run is inserted so that concurrent requests with one key
  // create one run: the loser's ON CONFLICT waits for the winner and returns the winner's
  // run id. An expired key is taken over. The foreign key is checked at the end of the statement.
  const [row] = await deps.db.execute<{ runId: string, created: boolean }>(sql`
    with claim as (
      insert into idempotency_keys (workflow_id, key, run_id)
      values (${workflow.id}, ${idempotencyKey}, ${runId})
      on conflict (workflow_id, key) do update set
        run_id = case when idempotency_keys.created_at > now() - ${IDEMPOTENCY_WINDOW}
          then idempotency_keys.run_id else excluded.run_id end,
        created_at = case when idempotency_keys.created_at > now() - ${IDEMPOTENCY_WINDOW}
          then idempotency_keys.created_at else excluded.created_at end
      returning run_id
    ), new_run as (
      insert into runs (id, workflow_id, user_id, queue, trigger_data, raw_body)
      select ${runId}, ${workflow.id}, ${workflow.userId}, ${queue}, ${jsonb(input.triggerData)}, ${input.rawBody ?? null}::bytea
      where (select run_id from claim) = ${runId}
      returning workflow_id
    ), counted as (
      update workflows set run_count = run_count + 1, last_run_at = now()
      where id in (select workflow_id from new_run)
    )
    select (select run_id from claim) as "runId", exists (select 1 from new_run) as created
  `)
  if (row === undefined) throw new Error('run insert returned no row')
  if (row.created) await enqueueOrDiscard(deps, [{ runId, queue }])
  return { runId: row.runId, created: row.created }
}

/**
 * Starts one run per item with one statement (rows and counters) and one enqueue per
 * queue: event fan-out and keyword matches start several workflows at once.
 */
export async function startRuns (deps: RunServiceDeps, items: Array<Omit<StartRunInput, 'idempotencyKey'>>): Promise<string[]> {
  if (items.length === 0) return []
  const planned = items.map((item) => ({ ...item, runId: createId(), queue: runQueueFor(item.workflow.triggerType) }))
  const values = planned.map(({ runId, workflow, queue, triggerData, rawBody }) =>
    sql`(${runId}, ${workflow.id}, ${workflow.userId}, ${queue}, ${jsonb(triggerData)}, ${rawBody ?? null}::bytea)`)
  await deps.db.execute(sql`
    with new_runs as (
      insert into runs (id, workflow_id, user_id, queue, trigger_data, raw_body)
      values ${sql.join(values, sql`, `)}
      returning workflow_id
    ), per_workflow as (
      select workflow_id, count(*)::int as created from new_runs group by workflow_id
    )
    update workflows set run_count = run_count + per_workflow.created, last_run_at = now()
    from per_workflow where workflows.id = per_workflow.workflow_id
  `)
  await enqueueOrDiscard(deps, planned)
  return planned.map(({ runId }) => runId)
}

/**
 * A run whose job could not be enqueued is taken back so that the caller's error
 * (and the sender's retry) does not leave a duplicate behind. If taking it back
 * fails too, the run stays PENDING and the worker's reconciler enqueues it later.
 * A job that reaches Redis after its run was taken back finds no run and does nothing.
 */
async function enqueueOrDiscard (deps: RunServiceDeps, started: Array<{ runId: string, queue: QueueName }>): Promise<void> {
  const byQueue = new Map<QueueName, string[]>()
  for (const { runId, queue } of started) {
    byQueue.set(queue, [...(byQueue.get(queue) ?? []), runId])
  }
  try {
    await Promise.all([...byQueue].map(async ([name, runIds]) => {
      const jobs = runIds.map((runId) => ({ name: 'run', data: { runId } satisfies RunJobData, opts: { jobId: runJobId(runId) } }))
      await withTimeout(deps.queues[name].addBulk(jobs), ENQUEUE_TIMEOUT_MS, `enqueue on ${name}`)
    }))
  } catch (err) {
    await discardPendingRuns(deps.db, started.map(({ runId }) => runId)).catch(() => {})
    throw err
  }
}

async function discardPendingRuns (db: DbOrTx, runIds: string[]): Promise<void> {
  const ids = sql`array[${sql.join(runIds.map((id) => sql`${id}`), sql`, `)}]::text[]`
  await db.execute(sql`
    with discarded as (
      delete from runs where id = any(${ids}) and status = 'PENDING' returning workflow_id
    ), per_workflow as (
      select workflow_id, count(*)::int as discarded from discarded group by workflow_id
    )
    update workflows set
      run_count = run_count - per_workflow.discarded,
      last_run_at = (select max(created_at) from runs where runs.workflow_id = workflows.id and runs.id <> all(${ids}))
    from per_workflow where workflows.id = per_workflow.workflow_id
  `)
}

/** The users whose EVENT workflows listen: one owner, or everyone who can use a chat account. */
export type EmitEventInput = ({ userId: string } | { userIds: readonly string[] }) & {
  name: string
  payload: unknown
}

/** Starts every active EVENT workflow of these users whose triggerConfig.eventName is `name`; returns the run ids. */
export async function emitEvent (deps: RunServiceDeps, input: EmitEventInput): Promise<string[]> {
  const listeners = 'userId' in input ? [input.userId] : input.userIds
  if (listeners.length === 0) return []
  const userIds = sql`array[${sql.join(listeners.map((id) => sql`${id}`), sql`, `)}]::text[]`
  // The predicate matches the partial expression index workflows_event_name_idx.
  const targets = await deps.db.execute<{ id: string, userId: string }>(sql`
    select id, user_id as "userId" from workflows
    where trigger_type = 'EVENT' and is_active and (trigger_config->>'eventName') = ${input.name}
      and user_id = any(${userIds})
    order by created_at, id
  `)
  return startRuns(deps, targets.map((target) => ({
    workflow: { id: target.id, userId: target.userId, triggerType: 'EVENT' },
    triggerData: input.payload
  })))
}
