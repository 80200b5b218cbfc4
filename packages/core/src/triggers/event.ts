import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import type { FlowControl } from '../db/schema/workflows.ts'
import { textArray } from '../db/sql.ts'
import { DomainError } from '../errors.ts'
import { CHAT_MESSAGE_RECEIVED, markDispatched, takeUndispatched, type Undispatched } from '../events/outbox.ts'
import type { Logger } from '../logger.ts'
import { enqueueRuns, insertRuns, startRuns, type CreatedRun, type RunServiceDeps } from '../runs/start.ts'
import { enqueueDeliveries } from '../subscriptions/delivery.ts'
import { insertDeliveries } from '../subscriptions/repository.ts'
import { workflowLimit, type Viewer } from '../users/viewer.ts'
import { insertErrorRuns } from './error-workflows.ts'

/** Who an emission reaches, and how far. */
export interface EmitEventDeps extends RunServiceDeps {
  /** EVENT_FANOUT_MAX: the most runs one emission may start. */
  eventFanoutMax: number
}

/**
 * The users whose EVENT workflows listen: the viewer's own (within an API key's workflowIds,
 * README API keys), or those of everyone who can use a chat account.
 */
export type EmitEventInput = ({ viewer: Viewer } | { userIds: readonly string[] }) & {
  name: string
  payload: unknown
}

const tooManyListeners = (max: number): DomainError =>
  new DomainError('TOO_MANY_LISTENERS', `Too many workflows listen to this event (max ${max})`)

/** The active EVENT workflows of `userIds` listening to `name` (those `viewer` may use), oldest first, `limit` at most. */
async function listeners (db: DbOrTx, userIds: readonly string[], name: string, limit: number, viewer?: Viewer) {
  // The predicate matches the partial expression index workflows_event_name_idx.
  return await db.execute<{ id: string, userId: string, runTags: string | null, flowControl: FlowControl | null }>(sql`
    select id, user_id as "userId", run_tags as "runTags", flow_control as "flowControl" from workflows
    where trigger_type = 'EVENT' and is_active and (trigger_config->>'eventName') = ${name}
      and user_id = any(${textArray(userIds)}) ${viewer === undefined ? sql`` : sql`and ${workflowLimit(viewer, sql`id`)}`}
    order by created_at, id
    limit ${limit}
  `)
}

/**
 * Starts every active EVENT workflow of these users whose triggerConfig.eventName is
 * `name`, and returns the run ids in the workflows' creation order. More listeners
 * than `eventFanoutMax` start nothing: 400 `Too many workflows listen to this event`.
 */
export async function emitEvent (deps: EmitEventDeps, input: EmitEventInput): Promise<string[]> {
  const [userIds, viewer] = 'viewer' in input ? [[input.viewer.id], input.viewer] : [input.userIds]
  if (userIds.length === 0) return []
  const targets = await listeners(deps.db, userIds, input.name, deps.eventFanoutMax + 1, viewer)
  if (targets.length > deps.eventFanoutMax) throw tooManyListeners(deps.eventFanoutMax)
  const started = await startRuns(deps, {
    runs: targets.map((target) => ({ workflow: { id: target.id, userId: target.userId, triggerType: 'EVENT', runTags: target.runTags, flowControl: target.flowControl } })),
    triggerData: input.payload
  })
  return started.map(({ runId }) => runId)
}

/** Events one dispatch transaction takes at most. */
const DISPATCH_BATCH = 100

/**
 * Dispatches events of the outbox (events/outbox.ts): for each, starts the active EVENT
 * workflows of its user listening to its name, with its payload as triggerData, writes a
 * delivery for each enabled subscription of its user listening to it (subscriptions/), starts the
 * error workflow of a failed run (error-workflows.ts), and marks it dispatched in the same
 * transaction; the jobs are queued after the commit. An event is not a request that can be
 * refused: beyond `eventFanoutMax` listeners the oldest workflows start and the rest is logged.
 * Returns how many events were dispatched.
 */
export async function dispatchEvents (deps: EmitEventDeps & { logger: Pick<Logger, 'warn'> }, which: Undispatched): Promise<number> {
  const { created, deliveries, dispatched } = await deps.db.transaction(async (tx) => {
    const taken = await takeUndispatched(tx, which, DISPATCH_BATCH)
    const created: CreatedRun[] = []
    // Events of one user and name reach the same workflows: looked up once per dispatch.
    const listening = new Map<string, Awaited<ReturnType<typeof listeners>>>()
    for (const event of taken) {
      // Its workflows start with the message's KEYWORD runs (triggers/keyword.ts): the outbox has it for subscriptions.
      if (event.name === CHAT_MESSAGE_RECEIVED) continue
      const key = JSON.stringify([event.userId, event.name])
      const targets = listening.get(key) ?? await listeners(tx, [event.userId], event.name, deps.eventFanoutMax + 1)
      listening.set(key, targets)
      if (targets.length > deps.eventFanoutMax) {
        deps.logger.warn({ eventId: event.id, event: event.name, eventFanoutMax: deps.eventFanoutMax }, 'event reached more workflows than EVENT_FANOUT_MAX: the newest were not started')
      }
      const inserted = await insertRuns(tx, {
        runs: targets.slice(0, deps.eventFanoutMax).map((target) => ({ workflow: { id: target.id, userId: target.userId, triggerType: 'EVENT', runTags: target.runTags, flowControl: target.flowControl } })),
        triggerData: event.payload
      })
      created.push(...inserted.created)
    }
    created.push(...await insertErrorRuns(tx, taken, deps.logger))
    const ids = taken.map(({ id }) => id)
    const deliveries = await insertDeliveries(tx, ids)
    await markDispatched(tx, ids)
    return { created, deliveries, dispatched: taken.length }
  })
  await enqueueRuns(deps, created)
  await enqueueDeliveries(deps.queues, deliveries, deps.logger)
  return dispatched
}

/** For the reconciler: dispatches the events left undispatched for `graceMs` (their writer crashed, or a store was away). */
export function lostEventsDispatch (deps: EmitEventDeps & { logger: Pick<Logger, 'warn'> }, graceMs: number): () => Promise<number> {
  return async function dispatchLostEvents (): Promise<number> {
    let dispatched = 0
    for (;;) {
      const count = await dispatchEvents(deps, { olderThanMs: graceMs })
      dispatched += count
      if (count < DISPATCH_BATCH) return dispatched
    }
  }
}
