import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import type { CancelOn, FlowControl } from '../db/schema/workflows.ts'
import { jsonb, textArray } from '../db/sql.ts'
import { DomainError } from '../errors.ts'
import { CHAT_MESSAGE_RECEIVED, markDispatched, someoneWaits, takeUndispatched, type Undispatched } from '../events/outbox.ts'
import { createId } from '../ids.ts'
import type { Logger } from '../logger.ts'
import { wakeRuns } from '../engine/children.ts'
import { matchListens } from '../engine/event-waits.ts'
import { cancelDescendants } from '../runs/cancel.ts'
import { enqueueRuns, insertRuns, type CreatedRun, type RunServiceDeps } from '../runs/start.ts'
import { enqueueDeliveries } from '../subscriptions/delivery.ts'
import { insertDeliveries } from '../subscriptions/repository.ts'
import { isLimitedToWorkflows, workflowLimit, type Viewer } from '../users/viewer.ts'
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
  return await db.execute<{ id: string, userId: string, runTags: string | null, flowControl: FlowControl | null, cancelOn: CancelOn[] | null }>(sql`
    select id, user_id as "userId", run_tags as "runTags", flow_control as "flowControl", cancel_on as "cancelOn" from workflows
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
 * An event of a viewer is also stored, in the same transaction, when a run of theirs waits for it
 * or is cancelled by it (README, Events and waits), and dispatched to those after the commit (not
 * awaited: the reconciler dispatches what this does not); an API key limited to workflows reaches
 * only its workflows' EVENT triggers.
 */
export async function emitEvent (deps: EmitEventDeps & { logger: Pick<Logger, 'warn'> }, input: EmitEventInput): Promise<string[]> {
  const [userIds, viewer] = 'viewer' in input ? [[input.viewer.id], input.viewer] : [input.userIds]
  if (userIds.length === 0) return []
  const targets = await listeners(deps.db, userIds, input.name, deps.eventFanoutMax + 1, viewer)
  if (targets.length > deps.eventFanoutMax) throw tooManyListeners(deps.eventFanoutMax)
  const storedFor = viewer === undefined || isLimitedToWorkflows(viewer) ? undefined : viewer.id
  const { created, started, eventIds } = await deps.db.transaction(async (tx) => {
    const eventIds = storedFor === undefined
      ? []
      : await tx.execute<{ id: string }>(sql`
      insert into events (id, name, user_id, payload, started_by_writer)
      select ${createId()}, ${input.name}, ${storedFor}, ${jsonb(input.payload)}, true
      where ${someoneWaits(input.name, sql`${storedFor}::text`)}
      returning id`)
    const inserted = await insertRuns(tx, {
      runs: targets.map((target) => ({ workflow: { id: target.id, userId: target.userId, triggerType: 'EVENT', runTags: target.runTags, flowControl: target.flowControl, cancelOn: target.cancelOn } })),
      triggerData: input.payload
    })
    return { ...inserted, eventIds: eventIds.map(({ id }) => id) }
  })
  await enqueueRuns(deps, created)
  if (eventIds.length > 0) {
    dispatchEvents(deps, { ids: eventIds }).catch((err: unknown) => { deps.logger.warn({ err, eventIds }, 'posted event not dispatched to its waits yet: the reconciler will') })
  }
  return started.map(({ runId }) => runId)
}

/** Events one dispatch transaction takes at most. */
const DISPATCH_BATCH = 100
/** Runs one statement of a dispatch cancels at most (cancelOn rules an event reached). */
const CANCEL_BATCH = 1000

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
  const { created, deliveries, dispatched, woken, cancelled } = await deps.db.transaction(async (tx) => {
    const taken = await takeUndispatched(tx, which, DISPATCH_BATCH)
    const created: CreatedRun[] = []
    // Events of one user and name reach the same workflows: looked up once per dispatch.
    const listening = new Map<string, Awaited<ReturnType<typeof listeners>>>()
    for (const event of taken) {
      // Its workflows start with the message's KEYWORD runs (triggers/keyword.ts): the outbox has it for subscriptions
      // and waits; a posted event's were started by the route that stored it.
      if (event.name === CHAT_MESSAGE_RECEIVED || event.startedByWriter) continue
      const key = JSON.stringify([event.userId, event.name])
      const targets = listening.get(key) ?? await listeners(tx, [event.userId], event.name, deps.eventFanoutMax + 1)
      listening.set(key, targets)
      if (targets.length > deps.eventFanoutMax) {
        deps.logger.warn({ eventId: event.id, event: event.name, eventFanoutMax: deps.eventFanoutMax }, 'event reached more workflows than EVENT_FANOUT_MAX: the newest were not started')
      }
      const inserted = await insertRuns(tx, {
        runs: targets.slice(0, deps.eventFanoutMax).map((target) => ({ workflow: { id: target.id, userId: target.userId, triggerType: 'EVENT', runTags: target.runTags, flowControl: target.flowControl, cancelOn: target.cancelOn } })),
        triggerData: event.payload
      })
      created.push(...inserted.created)
    }
    created.push(...await insertErrorRuns(tx, taken, deps.logger))
    const ids = taken.map(({ id }) => id)
    const deliveries = await insertDeliveries(tx, ids)
    const reached = await matchListens(tx, ids)
    const cancelIds = reached.filter(({ kind }) => kind === 'cancel').map(({ runId }) => runId)
    const cancelled: Array<{ id: string, eventId: string | null }> = []
    for (let start = 0; start < cancelIds.length; start += CANCEL_BATCH) {
      cancelled.push(...await tx.execute<{ id: string, eventId: string | null }>(cancelDescendants(sql`select unnest(${textArray(cancelIds.slice(start, start + CANCEL_BATCH))}) as id`)))
    }
    await markDispatched(tx, ids)
    return { created, deliveries, dispatched: taken.length, woken: reached.filter(({ kind }) => kind === 'wait'), cancelled }
  })
  await enqueueRuns(deps, created)
  await enqueueDeliveries(deps.queues, deliveries, deps.logger)
  // Lost, these are the reconciler's: a wait that took its event and a cancel's events.
  await wakeRuns(deps.queues, woken).catch((err: unknown) => { deps.logger.warn({ err, runs: woken.length }, 'runs whose wait took an event not woken yet: the reconciler will') })
  const cancelledEvents = cancelled.flatMap(({ eventId }) => eventId === null ? [] : [eventId])
  if (cancelledEvents.length > 0) await dispatchEvents(deps, { ids: cancelledEvents })
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
