import { sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import type { EventMatch, ReceivedEvent } from '../db/schema/event-listens.ts'
import { jsonb, textArray } from '../db/sql.ts'
import type { QueueName } from '../queues/catalog.ts'

/**
 * Runs listening for events (README, Events and waits): a `wait_for_event` node's wait and a
 * workflow's `cancelOn` rules, rows of `event_listens`. A wait takes the first matching event
 * committed since its node started: the dispatch of a later one (`matchListens`), or, for an event
 * committed before the wait was written, the wait's own look at the stored events when it opens.
 * Each is one guarded update of the row (its event still null, not timed out), so the dispatch,
 * the opening and the timeout race on the row and exactly one wins.
 */

/** A wait as its node reads it. */
export interface EventWait {
  event: ReceivedEvent | null
  timedOut: boolean
  expiresAt: Date
}

/** A listener's payload test: every path's value, as text, equals the rendered one. */
const matches = (payload: SQL, match: SQL): SQL => sql`not exists (
  select 1 from jsonb_array_elements(${match}) m
  where (${payload} #>> array(select jsonb_array_elements_text(m->'path'))) is distinct from m->>'value')`

const receivedEvent = (event: SQL): SQL => sql`jsonb_build_object('id', ${event}.id, 'name', ${event}.name, 'payload', ${event}.payload,
  'receivedAt', to_char(${event}.created_at at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`

export interface OpenEventWait {
  runId: string
  nodeId: string
  userId: string
  event: string
  match: EventMatch[]
  /** When the node started: events committed from then on count. */
  since: Date
  expiresAt: Date
}

export function eventWaits (db: DbOrTx) {
  async function get (runId: string, nodeId: string): Promise<EventWait | undefined> {
    const [row] = await db.execute<{ event: ReceivedEvent | null, timedOut: boolean, expiresAt: string }>(sql`
      select event, closed_at is not null and event is null as "timedOut", expires_at as "expiresAt"
      from event_listens where run_id = ${runId} and listener = ${nodeId}`)
    return row === undefined ? undefined : { event: row.event, timedOut: row.timedOut, expiresAt: new Date(row.expiresAt) }
  }

  return {
    get,

    /**
     * Writes the wait (a node run again after a crash finds the one it wrote), then takes the
     * first matching event already committed since `since`, if the wait has none yet: an event
     * committed while the wait was being written is seen either here or by its dispatch.
     */
    async open (wait: OpenEventWait): Promise<EventWait> {
      await db.execute(sql`
        insert into event_listens (run_id, listener, kind, user_id, event_name, match, since, expires_at)
        values (${wait.runId}, ${wait.nodeId}, 'wait', ${wait.userId}, ${wait.event}, ${jsonb(wait.match)},
          ${wait.since.toISOString()}::timestamptz, ${wait.expiresAt.toISOString()}::timestamptz)
        on conflict (run_id, listener) do nothing`)
      await db.execute(sql`
        update event_listens l set event = found.event
        from (
          select ${receivedEvent(sql`e`)} as event from event_listens w
          join events e on e.user_id = w.user_id and e.name = w.event_name and e.created_at >= w.since and ${matches(sql`e.payload`, sql`w.match`)}
          where w.run_id = ${wait.runId} and w.listener = ${wait.nodeId}
          order by e.created_at, e.id limit 1
        ) found
        where l.run_id = ${wait.runId} and l.listener = ${wait.nodeId} and l.event is null and l.closed_at is null`)
      const opened = await get(wait.runId, wait.nodeId)
      if (opened === undefined) throw new Error('event wait not written')
      return opened
    },

    /** Ends a wait past its time without an event; the wait as it is then (an event that came first wins). */
    async timeOut (runId: string, nodeId: string): Promise<EventWait | undefined> {
      await db.execute(sql`
        update event_listens set closed_at = now()
        where run_id = ${runId} and listener = ${nodeId} and event is null and closed_at is null and expires_at <= now()`)
      return await get(runId, nodeId)
    }
  }
}

export type EventWaits = ReturnType<typeof eventWaits>

/** A listener an event reached: a wait's run to wake, or a cancelOn rule's run to cancel. */
export interface ReachedListener {
  runId: string
  kind: 'wait' | 'cancel'
  queue: QueueName
}

/** Listeners one statement takes at most: an event reaching more takes several, in the dispatch's transaction. */
const MATCH_BATCH = 1000

/**
 * The listeners of live runs the events `eventIds` reach, in `tx` (the dispatch's): each wait
 * takes the oldest of them it matches (its event set once); each rule is marked by the event that
 * cancels its run. Taken `MATCH_BATCH` at a time, so that an event reaching 10,000 waiting runs is
 * several bounded statements.
 */
export async function matchListens (tx: DbOrTx, eventIds: readonly string[]): Promise<ReachedListener[]> {
  if (eventIds.length === 0) return []
  const reached: ReachedListener[] = []
  for (;;) {
    const rows = await tx.execute<ReachedListener & Record<string, unknown>>(sql`
      with hit as (
        select distinct on (l.run_id, l.listener) l.run_id, l.listener, r.queue, ${receivedEvent(sql`e`)} as event
        from events e
        join event_listens l on l.user_id = e.user_id and l.event_name = e.name and l.event is null and l.closed_at is null
          and l.since <= e.created_at
        join runs r on r.id = l.run_id and r.status in ('PENDING', 'RUNNING', 'WAITING')
        where e.id = any(${textArray(eventIds)}) and ${matches(sql`e.payload`, sql`l.match`)}
        order by l.run_id, l.listener, e.created_at, e.id
        limit ${MATCH_BATCH}
      )
      update event_listens l set event = hit.event
      from hit where l.run_id = hit.run_id and l.listener = hit.listener and l.event is null and l.closed_at is null
      returning l.run_id as "runId", l.kind, hit.queue`)
    reached.push(...rows)
    if (rows.length < MATCH_BATCH) return reached
  }
}

/**
 * Closes the listeners of runs that ended (the reconciler's pass): a rule of a finished run
 * matches nothing any more, and the open index stays the size of the live runs'.
 */
export async function closeEndedListens (db: DbOrTx, limit: number): Promise<number> {
  const rows = await db.execute(sql`
    update event_listens l set closed_at = now()
    from (select l2.run_id, l2.listener from event_listens l2 join runs r on r.id = l2.run_id
      where l2.event is null and l2.closed_at is null and r.status not in ('PENDING', 'RUNNING', 'WAITING')
      limit ${limit} for update of l2 skip locked) ended
    where l.run_id = ended.run_id and l.listener = ended.listener
    returning l.run_id`)
  return rows.length
}
