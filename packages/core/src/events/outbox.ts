import { sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { textArray } from '../db/sql.ts'

/**
 * The outbox (docs/decisions.md, "Events in an outbox"): each event the service emits is a row
 * of `events`, written by the statement of the change it describes, so it exists exactly when
 * the change does. It is dispatched by whoever wrote it, right after the commit, and by the
 * reconciler when that did not happen (a crash, a store away): at least once, and its
 * listeners started once, since a dispatch takes its events locked and marks them in the
 * transaction that starts their runs.
 */

/**
 * The event a failed run emits to its owner's EVENT workflows (README, Event subscriptions): `{runId, workflowId, error}`.
 * Its dispatch also starts the run's error workflow (README, Error workflows).
 */
export const RUN_FAILED_EVENT = 'workflow.run.failed'
/**
 * The event a run waiting at an approval node emits to its owner's EVENT workflows (README,
 * Event subscriptions): `{runId, workflowId, nodeId, message, expiresAt, resumePath}`, so that a workflow
 * can send the approver the link.
 */
export const RUN_WAITING_EVENT = 'workflow.run.waiting'

/**
 * The event an outbound message the platform failed emits to the users who can use its number
 * (README, Event subscriptions): `{messageId, conversationId, wamid, phone, phoneNumberId, error: {code, title, details}}`.
 */
export const CHAT_MESSAGE_FAILED = 'chat.message.failed'

/** A run that ended SUCCESS (README, Event subscriptions): `{runId, workflowId, durationMs}`. */
export const RUN_SUCCEEDED_EVENT = 'workflow.run.succeeded'
/** A run cancelled, by a user or with its parent (README, Event subscriptions): `{runId, workflowId}`. */
export const RUN_CANCELLED_EVENT = 'workflow.run.cancelled'
/**
 * A customer message stored, to the users who can use its number (README, Event subscriptions):
 * `{phone, name, text, type, messageId, wamid, conversationId, phoneNumberId, interactive?, media?}`. Also what
 * `chat.message.received` EVENT workflows start with (triggers/keyword.ts).
 */
export const CHAT_MESSAGE_RECEIVED = 'chat.message.received'
/**
 * A platform status moved an outbound message forward (`sent`, `delivered`, `read`), to the users
 * who can use its number (README, Event subscriptions): `{messageId, conversationId, wamid, phone, phoneNumberId, status}`.
 */
export const CHAT_MESSAGE_STATUS = 'chat.message.status'

/**
 * A template's stored status or reason changed by the platform's review (README, Chat: templates), to the
 * users who can use an account of its business account: `{businessAccountId, name, language, status, reason}`.
 */
export const CHAT_TEMPLATE_STATUS = 'chat.template.status'

/** The one catalogue of events (README, Event subscriptions): what EVENT triggers and subscriptions name. */
export const EVENT_CATALOGUE = [
  RUN_SUCCEEDED_EVENT, RUN_FAILED_EVENT, RUN_CANCELLED_EVENT, RUN_WAITING_EVENT,
  CHAT_MESSAGE_RECEIVED, CHAT_MESSAGE_STATUS, CHAT_MESSAGE_FAILED, CHAT_TEMPLATE_STATUS
] as const

/**
 * Whether anyone listens to `name` for the user `userId` (a column or value): an enabled
 * subscription of theirs, a run of theirs waiting for it or cancelled by it (README, Events and
 * waits: an open `event_listens` row, or a workflow whose definition or cancelOn names it, so that
 * a run about to wait has its event stored) or, per `workflows`, an active EVENT workflow of theirs
 * (`any`), one other than `except` (a workflow is not told of its own runs, so that they cannot
 * loop), or none (`none`: the event's workflows are started elsewhere). The events of the hottest
 * writes (a run's success, a message's status) are written only then: a probe of a few indexes
 * (event_subscriptions_user_idx, event_listens_open_idx, workflows_listening_idx,
 * workflows_event_name_idx) inside the statement of the change, no round trip of their own.
 */
export function someoneListens (name: string, userId: SQL, workflows: { except: SQL } | 'any' | 'none'): SQL {
  const subscribed = sql`exists (select 1 from event_subscriptions s where s.user_id = ${userId} and s.enabled and ${name}::text = any(s.events))`
  const waiting = someoneWaits(name, userId)
  if (workflows === 'none') return sql`(${subscribed} or ${waiting})`
  const other = workflows === 'any' ? sql`` : sql`and w.id <> ${workflows.except}`
  // The predicate matches the partial expression index workflows_event_name_idx.
  return sql`(${subscribed} or ${waiting} or exists (select 1 from workflows w where w.trigger_type = 'EVENT' and w.is_active
    and (w.trigger_config->>'eventName') = ${name}::text and w.user_id = ${userId} ${other}))`
}

/** Whether a run of `userId` waits for `name` or is cancelled by it, or a workflow of theirs may make one (see someoneListens). */
export const someoneWaits = (name: string, userId: SQL): SQL => sql`(exists (select 1 from event_listens l
    where l.user_id = ${userId} and l.event_name = ${name}::text and l.event is null and l.closed_at is null)
  or exists (select 1 from workflows lw where lw.user_id = ${userId} and lw.listens_to <> '{}' and lw.listens_to @> array[${name}::text]))`

export interface OutboxEvent {
  id: string
  name: string
  userId: string
  payload: unknown
  /** Its EVENT workflows were started by its writer: its dispatch only reaches its waits and cancelOn rules. */
  startedByWriter: boolean
}

/** Which events a dispatch takes: those just written, or those left undispatched longer than the reconciler's grace. */
export type Undispatched = { ids: readonly string[] } | { olderThanMs: number }

/**
 * Takes undispatched events, oldest first, `limit` at most, locked until `tx` ends; events
 * another dispatch holds are skipped, not waited for.
 */
export async function takeUndispatched (tx: DbOrTx, which: Undispatched, limit: number): Promise<OutboxEvent[]> {
  const filter = 'ids' in which
    ? sql`id = any(${textArray(which.ids)})`
    : sql`created_at < now() - ${`${which.olderThanMs} milliseconds`}::interval`
  return await tx.execute<OutboxEvent & Record<string, unknown>>(sql`
    select id, name, user_id as "userId", payload, started_by_writer as "startedByWriter" from events
    where dispatched_at is null and ${filter}
    order by created_at limit ${limit}
    for update skip locked
  `)
}

export async function markDispatched (tx: DbOrTx, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  await tx.execute(sql`update events set dispatched_at = now() where id = any(${textArray(ids)})`)
}
