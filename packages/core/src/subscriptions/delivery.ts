import { performance } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import { request, type Dispatcher } from 'undici'
import type { EventSubscriptionsConfig } from '../config.ts'
import type { Db } from '../db/client.ts'
import { storableText } from '../db/storable.ts'
import { decryptSecret, type Keyring } from '../encryption.ts'
import { BlockedAddressError } from '../engine/nodes/http-client.ts'
import { createId } from '../ids.ts'
import type { Logger } from '../logger.ts'
import { EVENT_DELIVERY_JOB, type EventDeliveryJobData, type Queues } from '../queues/catalog.ts'
import { ensureJobs } from '../queues/ensure-job.ts'
import { noteOwners } from '../queues/fair-share.ts'
import { nextRetryDelayMs } from './backoff.ts'
import { deliveryBody, signedHeaders } from './signing.ts'

/** The most of an answer an attempt keeps (README, Event subscriptions); the rest is not read. */
const RESPONSE_EXCERPT_BYTES = 1024

/** What one delivery job ended with: the counter's label (observability/metrics.ts). */
export type DeliveryOutcome = 'succeeded' | 'retrying' | 'failed' | 'skipped'

/** One attempt's answer, or why there was none. */
interface AttemptResult {
  statusCode: number | null
  latencyMs: number
  responseExcerpt: string | null
  error: string | null
}

interface DelivererDeps {
  db: Db
  keyring: Keyring
  /** The SSRF-guarded dispatcher of http_request (engine/nodes/http-client.ts). */
  dispatcher: Dispatcher
  config: EventSubscriptionsConfig
  logger: Pick<Logger, 'warn'>
}

interface DueDelivery {
  id: string
  subscriptionId: string
  eventName: string
  payload: unknown
  status: string
  attempts: number
  dueInMs: number
  createdAt: string | Date
  url: string
  secretEncrypted: string
  enabled: boolean
}

/** At most `max` bytes of `body`, as text; the rest is left unread and the stream destroyed. */
async function excerptOf (body: Dispatcher.ResponseData['body'], max: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk)
    size += chunk.length
    if (size >= max) break
  }
  body.destroy()
  // A multi-byte character cut at the bound becomes U+FFFD.
  return storableText(Buffer.concat(chunks).subarray(0, max).toString('utf8'))
}

/** Why a request ended without an answer, in words for the delivery's owner. */
function failureOf (err: unknown, timeoutMs: number): string {
  if (err instanceof BlockedAddressError) return err.message
  const error = err as { name?: string, code?: string, message?: string }
  if (error.name === 'TimeoutError' || error.name === 'AbortError' || error.code === 'UND_ERR_HEADERS_TIMEOUT' || error.code === 'UND_ERR_BODY_TIMEOUT') {
    return `No answer within ${timeoutMs} ms (EVENT_DELIVERY_TIMEOUT_MS)`
  }
  return storableText(`${error.code ?? error.name ?? 'Error'}: ${error.message ?? String(err)}`).slice(0, RESPONSE_EXCERPT_BYTES)
}

/**
 * One POST, within `timeoutMs` from connecting to the end of the excerpt. Redirects are never
 * followed (README, Event subscriptions): a 3xx is a failed attempt, so that no redirect can
 * take a delivery where its URL was not allowed to point.
 */
async function post (dispatcher: Dispatcher, url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<AttemptResult> {
  const started = performance.now()
  const latency = (): number => Math.round(performance.now() - started)
  try {
    const answer = await request(url, {
      method: 'POST',
      dispatcher,
      headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'Switchboard-Webhooks/1' },
      body,
      signal: AbortSignal.timeout(timeoutMs),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs
    })
    const responseExcerpt = await excerptOf(answer.body, RESPONSE_EXCERPT_BYTES)
    const status = answer.statusCode
    const error = status >= 200 && status < 300
      ? null
      : status >= 300 && status < 400 ? `Redirect (${status}) not followed: a delivery's URL must answer 2xx itself` : `HTTP ${status}`
    return { statusCode: status, latencyMs: latency(), responseExcerpt, error }
  } catch (err) {
    return { statusCode: null, latencyMs: latency(), responseExcerpt: null, error: failureOf(err, timeoutMs) }
  }
}

/**
 * The worker's deliveries (README, Event subscriptions): each job makes one attempt of one
 * delivery, records it, and says when the next is due; the job waits for it delayed, holding no
 * slot. A delivery's retries are this schedule, not BullMQ's attempts (those only retry a job
 * that threw: a store away).
 */
export function eventDeliverer ({ db, keyring, dispatcher, config, logger }: DelivererDeps) {
  /** The delivery fails: its subscription counts it, and is disabled with the reason past EVENT_SUBSCRIPTION_DISABLE_AFTER. */
  const failed = (error: string) => sql`
    update event_subscriptions s set consecutive_failures = s.consecutive_failures + 1,
      enabled = s.enabled and s.consecutive_failures + 1 < ${config.disableAfter},
      disabled_reason = case when s.enabled and s.consecutive_failures + 1 >= ${config.disableAfter}
        then ${`Disabled after ${config.disableAfter} failed deliveries in a row; the last: ${error}`} else s.disabled_reason end,
      updated_at = now()
    from done where s.id = done.subscription_id`

  return {
    /**
     * Makes the attempt due for delivery `deliveryId`, if any. Returns how long its job should
     * wait before it runs again, or undefined when the delivery is finished (or gone).
     */
    async deliver (deliveryId: string): Promise<{ outcome: DeliveryOutcome, delayMs?: number }> {
      const [delivery] = await db.execute<DueDelivery & Record<string, unknown>>(sql`
        select d.id, d.subscription_id as "subscriptionId", d.event_name as "eventName", d.payload, d.status, d.attempts,
          greatest(0, extract(epoch from (d.next_attempt_at - now())) * 1000)::int as "dueInMs", d.created_at as "createdAt",
          s.url, s.secret_encrypted as "secretEncrypted", s.enabled
        from event_deliveries d join event_subscriptions s on s.id = d.subscription_id
        where d.id = ${deliveryId}`)
      if (delivery?.status !== 'pending') return { outcome: 'skipped' }
      if (!delivery.enabled) {
        // Disabled since it was queued: not sent; a replay sends it once the owner enables the subscription again.
        await db.execute(sql`update event_deliveries set status = 'failed', completed_at = now(), next_attempt_at = null where id = ${deliveryId} and status = 'pending'`)
        return { outcome: 'failed' }
      }
      if (delivery.dueInMs > 0) return { outcome: 'skipped', delayMs: delivery.dueInMs }

      const body = deliveryBody(delivery.eventName, new Date(delivery.createdAt), delivery.payload)
      const headers = signedHeaders(decryptSecret(keyring, delivery.secretEncrypted), delivery.id, body)
      const result = await post(dispatcher, delivery.url, headers, body, config.timeoutMs)
      const attempts = delivery.attempts + 1
      const retryInMs = result.error === null ? null : nextRetryDelayMs(attempts, config)
      const outcome: DeliveryOutcome = result.error === null ? 'succeeded' : retryInMs === null ? 'failed' : 'retrying'
      const status = outcome === 'retrying' ? 'pending' : outcome
      // The attempt, the delivery's new state and its subscription's count, in one statement; fenced
      // by the attempts seen, so an attempt repeated by a second job of the same delivery records nothing twice.
      await db.execute(sql`
        with done as (
          update event_deliveries set attempts = ${attempts}, status = ${status},
            next_attempt_at = ${retryInMs === null ? null : sql`now() + ${`${retryInMs} milliseconds`}::interval`},
            completed_at = ${status === 'pending' ? null : sql`now()`}
          where id = ${deliveryId} and status = 'pending' and attempts = ${delivery.attempts}
          returning id, subscription_id
        ), attempt as (
          insert into event_delivery_attempts (id, delivery_id, status_code, latency_ms, response_excerpt, error)
          select ${createId()}, id, ${result.statusCode}, ${result.latencyMs}, ${result.responseExcerpt}, ${result.error} from done
        ), counted as (
          ${outcome === 'succeeded'
            ? sql`update event_subscriptions s set consecutive_failures = 0 from done where s.id = done.subscription_id and s.consecutive_failures <> 0`
            : outcome === 'failed' ? failed(result.error ?? '') : sql`select 1`}
        )
        select 1`)
      if (outcome === 'failed') logger.warn({ deliveryId, subscriptionId: delivery.subscriptionId, error: result.error }, 'event delivery failed after its retries')
      return retryInMs === null ? { outcome } : { outcome, delayMs: retryInMs }
    }
  }
}

export type EventDeliverer = ReturnType<typeof eventDeliverer>

/**
 * Queues deliveries just committed (job id = delivery id: queued once), and notes their owners for
 * the fair share of the workers' delivery slots. A failure is left to the reconciler (`deliveryRequeue`).
 */
export async function enqueueDeliveries (queues: Queues, deliveries: readonly EventDeliveryJobData[], logger: Pick<Logger, 'warn'>): Promise<void> {
  if (deliveries.length === 0) return
  const queue = queues['event-deliveries']
  try {
    await queue.addBulk(deliveries.map((data) => ({ name: EVENT_DELIVERY_JOB, data, opts: { jobId: data.deliveryId } })))
    await noteOwners(queue, deliveries.flatMap(({ userId }) => userId ?? []))
  } catch (err) {
    logger.warn({ err, deliveries: deliveries.length }, 'event deliveries not queued: the reconciler will queue them')
  }
}

/** Pending deliveries one reconciler pass looks at. */
const REQUEUE_BATCH = 1000

/**
 * For the reconciler: pending deliveries due for `graceMs` whose job is gone (Redis lost it, the
 * enqueue after the commit failed, BullMQ gave up on a job that threw) get it back.
 */
export function deliveryRequeue ({ db, queues, graceMs }: { db: Db, queues: Queues, graceMs: number }): () => Promise<number> {
  return async function requeueDeliveries (): Promise<number> {
    // The predicate and order match the partial index event_deliveries_pending_idx.
    const due = await db.execute<{ id: string, userId: string }>(sql`
      select d.id, s.user_id as "userId" from (
        select id, subscription_id from event_deliveries
        where status = 'pending' and next_attempt_at < now() - ${`${graceMs} milliseconds`}::interval
        order by next_attempt_at limit ${REQUEUE_BATCH}
      ) d join event_subscriptions s on s.id = d.subscription_id`)
    return await ensureJobs(queues['event-deliveries'], EVENT_DELIVERY_JOB, due.map(({ id, userId }) => ({ jobId: id, data: { deliveryId: id, userId } })))
  }
}
