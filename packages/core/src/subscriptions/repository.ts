import { sql, type SQL } from 'drizzle-orm'
import { auditInsert, recordAudit, type AuditContext } from '../audit/log.ts'
import type { EventSubscriptionsConfig } from '../config.ts'
import type { Db, DbOrTx } from '../db/client.ts'
import type { DeliveryStatus } from '../db/schema/index.ts'
import { jsonb, textArray } from '../db/sql.ts'
import { storableText } from '../db/storable.ts'
import { encryptSecret, type Keyring } from '../encryption.ts'
import { blockedHostReason } from '../engine/nodes/http-client.ts'
import { DomainError } from '../errors.ts'
import { EVENT_CATALOGUE } from '../events/outbox.ts'
import { createId } from '../ids.ts'
import { EVENT_DELIVERY_JOB, type EventDeliveryJobData, type Queues } from '../queues/catalog.ts'
import { ensureJob } from '../queues/ensure-job.ts'
import { noteOwners } from '../queues/fair-share.ts'
import { isAdmin, type Viewer } from '../users/viewer.ts'
import { generateSecret, secretProblem } from './signing.ts'

/** The longest subscription URL (README, Event subscriptions). */
export const SUBSCRIPTION_URL_MAX = 2048
/** Attempts a delivery's answer lists, newest first. */
const ATTEMPTS_SHOWN = 100

export const subscriptionNotFound = (): DomainError => new DomainError('SUBSCRIPTION_NOT_FOUND', 'Subscription not found')
export const deliveryNotFound = (): DomainError => new DomainError('DELIVERY_NOT_FOUND', 'Delivery not found')
const invalid = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)

export interface Subscription {
  id: string
  userId: string
  url: string
  events: string[]
  enabled: boolean
  disabledReason: string | null
  consecutiveFailures: number
  createdAt: Date
  updatedAt: Date
}

export interface Delivery {
  id: string
  subscriptionId: string
  eventId: string
  eventName: string
  payload: unknown
  status: DeliveryStatus
  attempts: number
  nextAttemptAt: Date | null
  createdAt: Date
  completedAt: Date | null
}

export interface DeliveryAttempt {
  id: string
  at: Date
  statusCode: number | null
  latencyMs: number
  responseExcerpt: string | null
  error: string | null
}

interface SubscriptionInput {
  url: string
  events: string[]
  secret?: string
}

interface SubscriptionChange {
  url?: string
  events?: string[]
  enabled?: boolean
}

/**
 * Why `url` cannot be a subscription's: not http(s), too long, a user or password in it (the
 * secret signs; a URL is shown in every answer), or a host the SSRF guard of http_request refuses
 * by what it is (engine/nodes/http-client.ts; HTTP_REQUEST_ALLOW_PRIVATE lets private addresses
 * through, never metadata). A name is checked on each address it resolves to at every delivery.
 */
function urlProblem (url: string, allowPrivate: boolean): string | undefined {
  if (url.length > SUBSCRIPTION_URL_MAX) return `url must be at most ${SUBSCRIPTION_URL_MAX} characters`
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return 'url must be an absolute http or https URL'
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'url must be an absolute http or https URL'
  if (parsed.username !== '' || parsed.password !== '') return 'url must not carry a user or password: deliveries are signed with the secret'
  const blocked = blockedHostReason(parsed.hostname, allowPrivate)
  return blocked === undefined ? undefined : `url refused: ${blocked}`
}

/** The names, each once, in the catalogue's order; an unknown one is refused by name. */
function eventNames (events: readonly string[]): string[] {
  if (events.length === 0) throw invalid('events must name at least one event')
  const unknown = events.find((name) => !(EVENT_CATALOGUE as readonly string[]).includes(name))
  if (unknown !== undefined) throw invalid(`Unknown event ${JSON.stringify(unknown)}: events are ${EVENT_CATALOGUE.join(', ')}`)
  return EVENT_CATALOGUE.filter((name) => events.includes(name))
}

const SUBSCRIPTION_COLUMNS = sql`id, user_id as "userId", url, events, enabled, disabled_reason as "disabledReason",
  consecutive_failures as "consecutiveFailures", created_at as "createdAt", updated_at as "updatedAt"`
const DELIVERY_COLUMNS = sql`d.id, d.subscription_id as "subscriptionId", d.event_id as "eventId", d.event_name as "eventName", d.payload,
  d.status, d.attempts, d.next_attempt_at as "nextAttemptAt", d.created_at as "createdAt", d.completed_at as "completedAt"`

const dates = <T extends object>(row: T, ...keys: Array<keyof T>): T => {
  for (const key of keys) if (typeof row[key] === 'string') (row as Record<keyof T, unknown>)[key] = new Date(row[key] as string)
  return row
}
const subscriptionOf = (row: Subscription): Subscription => dates(row, 'createdAt', 'updatedAt')
const deliveryOf = (row: Delivery): Delivery => dates(row, 'createdAt', 'nextAttemptAt', 'completedAt')

/** The viewer's own, or anyone's for an admin (users/viewer.ts). */
const ownedBy = (viewer: Viewer, column: SQL): SQL => isAdmin(viewer) ? sql`true` : sql`${column} = ${viewer.id}`

interface SubscriptionsDeps {
  db: Db
  keyring: Keyring
  queues: Queues
  config: Pick<EventSubscriptionsConfig, 'maxPerUser'>
  /** HTTP_REQUEST_ALLOW_PRIVATE: the setting the http_request node's guard reads. */
  allowPrivate: boolean
}

/**
 * Event subscriptions and their deliveries (README, Event subscriptions), scoped by owner like
 * workflows: members see their own, admins everyone's; another user's is not found.
 */
export function subscriptionsRepository ({ db, keyring, queues, config, allowPrivate }: SubscriptionsDeps) {
  const checkedUrl = (url: string): string => {
    const problem = urlProblem(url, allowPrivate)
    if (problem !== undefined) throw invalid(problem)
    return url
  }

  async function find (viewer: Viewer, id: string): Promise<Subscription | null> {
    const [row] = await db.execute<Subscription & Record<string, unknown>>(sql`
      select ${SUBSCRIPTION_COLUMNS} from event_subscriptions where id = ${id} and ${ownedBy(viewer, sql`user_id`)}`)
    return row === undefined ? null : subscriptionOf(row)
  }

  return {
    find,

    /** A new subscription, and its secret: the only answer that carries it. Each write records `audit` (who acts) in its transaction. */
    async create (viewer: Viewer, input: SubscriptionInput, audit?: AuditContext): Promise<Subscription & { secret: string }> {
      const url = checkedUrl(input.url)
      const events = eventNames(input.events)
      if (input.secret !== undefined) {
        const problem = secretProblem(input.secret)
        if (problem !== undefined) throw invalid(problem)
      }
      const secret = input.secret ?? generateSecret()
      const created = await db.transaction(async (tx) => {
        // The owner's row, locked: two creates at once count each other.
        const [count] = await tx.execute<{ count: number }>(sql`
          select (select count(*)::int from event_subscriptions where user_id = ${viewer.id}) as count
          from users where id = ${viewer.id} for update`)
        if ((count?.count ?? 0) >= config.maxPerUser) {
          throw new DomainError('QUOTA_EXCEEDED', `Too many subscriptions (max ${config.maxPerUser})`)
        }
        const [row] = await tx.execute<Subscription & Record<string, unknown>>(sql`
          insert into event_subscriptions (id, user_id, url, events, secret_encrypted)
          values (${createId()}, ${viewer.id}, ${storableText(url)}, ${textArray(events)}, ${encryptSecret(keyring, secret)})
          returning ${SUBSCRIPTION_COLUMNS}`)
        // The host, not the URL: a URL may carry a token in its query.
        if (audit !== undefined) await recordAudit(tx, audit, { action: 'subscription.created', targetType: 'subscription', targetId: row!.id, details: { host: new URL(url).host, events } })
        return subscriptionOf(row!)
      })
      return { ...created, secret }
    },

    async list (viewer: Viewer, page: { limit: number, offset: number }): Promise<Subscription[]> {
      const rows = await db.execute<Subscription & Record<string, unknown>>(sql`
        select ${SUBSCRIPTION_COLUMNS} from event_subscriptions where ${ownedBy(viewer, sql`user_id`)}
        order by created_at, id limit ${page.limit} offset ${page.offset}`)
      return rows.map(subscriptionOf)
    },

    /** Changes what is given; enabling clears why it was disabled and its count of failures. */
    async update (viewer: Viewer, id: string, change: SubscriptionChange, audit?: AuditContext): Promise<Subscription> {
      const sets: SQL[] = [sql`updated_at = now()`]
      if (change.url !== undefined) sets.push(sql`url = ${storableText(checkedUrl(change.url))}`)
      if (change.events !== undefined) sets.push(sql`events = ${textArray(eventNames(change.events))}`)
      if (change.enabled === true) sets.push(sql`enabled = true, disabled_reason = null, consecutive_failures = 0`)
      if (change.enabled === false) sets.push(sql`enabled = false`)
      const details = { changed: Object.keys(change).sort(), ...(change.enabled !== undefined && { enabled: change.enabled }) }
      const [row] = await db.execute<Subscription & Record<string, unknown>>(sql`
        with updated as (
          update event_subscriptions set ${sql.join(sets, sql`, `)}
          where id = ${id} and ${ownedBy(viewer, sql`user_id`)}
          returning ${SUBSCRIPTION_COLUMNS}
        )${audit === undefined ? sql`` : sql`, audited as (${auditInsert(audit, { action: 'subscription.updated', targetType: 'subscription' }, { cte: sql`updated`, targetId: sql`updated.id`, details: jsonb(details) })})`}
        select * from updated`)
      if (row === undefined) throw subscriptionNotFound()
      return subscriptionOf(row)
    },

    /** Deletes it with its deliveries and their attempts. */
    async delete (viewer: Viewer, id: string, audit?: AuditContext): Promise<void> {
      const rows = await db.execute(sql`
        with deleted as (
          delete from event_subscriptions where id = ${id} and ${ownedBy(viewer, sql`user_id`)} returning id, events
        )${audit === undefined ? sql`` : sql`, audited as (${auditInsert(audit, { action: 'subscription.deleted', targetType: 'subscription' }, { cte: sql`deleted`, targetId: sql`deleted.id`, details: sql`jsonb_build_object('events', deleted.events)` })})`}
        select id from deleted`)
      if (rows.length === 0) throw subscriptionNotFound()
    },

    /** A subscription's deliveries, newest first. */
    async deliveries (viewer: Viewer, subscriptionId: string, query: { status?: DeliveryStatus, limit: number, offset: number }): Promise<Delivery[]> {
      if (await find(viewer, subscriptionId) === null) throw subscriptionNotFound()
      const rows = await db.execute<Delivery & Record<string, unknown>>(sql`
        select ${DELIVERY_COLUMNS} from event_deliveries d
        where d.subscription_id = ${subscriptionId} ${query.status === undefined ? sql`` : sql`and d.status = ${query.status}`}
        order by d.created_at desc, d.id desc limit ${query.limit} offset ${query.offset}`)
      return rows.map(deliveryOf)
    },

    /** A delivery with its latest attempts, newest first. */
    async delivery (viewer: Viewer, id: string): Promise<Delivery & { attempts: number, attemptLog: DeliveryAttempt[] }> {
      const [row] = await db.execute<Delivery & Record<string, unknown>>(sql`
        select ${DELIVERY_COLUMNS} from event_deliveries d join event_subscriptions s on s.id = d.subscription_id
        where d.id = ${id} and ${ownedBy(viewer, sql`s.user_id`)}`)
      if (row === undefined) throw deliveryNotFound()
      const attempts = await db.execute<DeliveryAttempt & Record<string, unknown>>(sql`
        select id, created_at as at, status_code as "statusCode", latency_ms as "latencyMs", response_excerpt as "responseExcerpt", error
        from event_delivery_attempts where delivery_id = ${id} order by created_at desc, id desc limit ${ATTEMPTS_SHOWN}`)
      return { ...deliveryOf(row), attemptLog: attempts.map((attempt) => dates(attempt, 'at')) }
    },

    /**
     * Sends a finished delivery again, under the same webhook-id, with a new round of attempts
     * (its retry window starts again); one still pending is refused (409).
     */
    async replay (viewer: Viewer, id: string): Promise<Delivery> {
      const [row] = await db.execute<Delivery & { found: boolean, ownerId: string } & Record<string, unknown>>(sql`
        with target as (
          select d.id, d.status, s.user_id from event_deliveries d join event_subscriptions s on s.id = d.subscription_id
          where d.id = ${id} and ${ownedBy(viewer, sql`s.user_id`)}
        ), replayed as (
          update event_deliveries d set status = 'pending', attempts = 0, next_attempt_at = now(), completed_at = null
          from target where d.id = target.id and target.status <> 'pending'
          returning ${DELIVERY_COLUMNS}
        )
        select exists (select 1 from target) as found, (select user_id from target) as "ownerId", replayed.* from (select 1) one left join replayed on true`)
      if (row?.found !== true) throw deliveryNotFound()
      if (row.id === null) throw new DomainError('DELIVERY_PENDING', 'Delivery is still pending')
      const { found, ownerId, ...delivery } = row
      // Its job may be finished and kept a while (JOB_OPTIONS): replaced, not skipped as a duplicate.
      const data: EventDeliveryJobData = { deliveryId: id, userId: ownerId }
      await ensureJob(queues['event-deliveries'], EVENT_DELIVERY_JOB, data, id)
      await noteOwners(queues['event-deliveries'], [ownerId])
      return deliveryOf(delivery)
    }
  }
}

export type SubscriptionsRepository = ReturnType<typeof subscriptionsRepository>

/**
 * In the dispatch transaction of `eventIds` (triggers/event.ts): one delivery for each enabled
 * subscription of the event's owner listening to its name, with a copy of its payload. Its id is
 * derived from (subscription, event), and a dispatch repeated after a crash inserts nothing
 * twice. Returns the new deliveries and their owners, to be queued after the commit.
 */
export async function insertDeliveries (tx: DbOrTx, eventIds: readonly string[]): Promise<EventDeliveryJobData[]> {
  if (eventIds.length === 0) return []
  const rows = await tx.execute<{ deliveryId: string, userId: string }>(sql`
    with inserted as (
      insert into event_deliveries (id, subscription_id, event_id, event_name, payload, next_attempt_at, created_at)
      select 'd' || substr(md5(s.id || ':' || e.id), 1, 24), s.id, e.id, e.name, e.payload, now(), e.created_at
      from events e join event_subscriptions s on s.user_id = e.user_id and s.enabled and e.name = any(s.events)
      where e.id = any(${textArray(eventIds)})
      on conflict do nothing
      returning id, event_id
    )
    select inserted.id as "deliveryId", e.user_id as "userId" from inserted join events e on e.id = inserted.event_id`)
  return rows.map(({ deliveryId, userId }) => ({ deliveryId, userId }))
}
