import { sql } from 'drizzle-orm'
import { textArray } from '../db/sql.ts'
import { DomainError } from '../errors.ts'
import { startRuns, type RunServiceDeps } from '../runs/start.ts'

/** Who an emission reaches, and how far. */
export interface EmitEventDeps extends RunServiceDeps {
  /** EVENT_FANOUT_MAX: the most runs one emission may start. */
  eventFanoutMax: number
}

/** The users whose EVENT workflows listen: one owner, or everyone who can use a chat account. */
type EmitEventInput = ({ userId: string } | { userIds: readonly string[] }) & {
  name: string
  payload: unknown
}

const tooManyListeners = (max: number): DomainError =>
  new DomainError('TOO_MANY_LISTENERS', `Too many workflows listen to this event (max ${max})`)

/**
 * Starts every active EVENT workflow of these users whose triggerConfig.eventName is
 * `name`, and returns the run ids in the workflows' creation order. More listeners
 * than `eventFanoutMax` start nothing: 400 `Too many workflows listen to this event`.
 */
export async function emitEvent (deps: EmitEventDeps, input: EmitEventInput): Promise<string[]> {
  const listeners = 'userId' in input ? [input.userId] : input.userIds
  if (listeners.length === 0) return []
  // The predicate matches the partial expression index workflows_event_name_idx.
  const targets = await deps.db.execute<{ id: string, userId: string }>(sql`
    select id, user_id as "userId" from workflows
    where trigger_type = 'EVENT' and is_active and (trigger_config->>'eventName') = ${input.name}
      and user_id = any(${textArray(listeners)})
    order by created_at, id
    limit ${deps.eventFanoutMax + 1}
  `)
  if (targets.length > deps.eventFanoutMax) throw tooManyListeners(deps.eventFanoutMax)
  const started = await startRuns(deps, {
    runs: targets.map((target) => ({ workflow: { id: target.id, userId: target.userId, triggerType: 'EVENT' } })),
    triggerData: input.payload
  })
  return started.map(({ runId }) => runId)
}
