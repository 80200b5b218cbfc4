import { eq, sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { jsonb } from '../db/sql.ts'
import { chatBroadcasts, type ChatBroadcast, type ChatMessageError } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import type { UsableChatAccount } from './accounts.ts'
import { ChatPlatformError } from './client.ts'
import { isTransientChatFailure } from './platform-errors.ts'
import type { ChatService } from './sending.ts'
import { customerIs } from './phone.ts'
import type { SendRate } from './send-rate.ts'
import { renderForContact } from './template-components.ts'

/** A claimed send is another worker's to take over after this (its worker died mid-send). */
const SEND_LEASE_MS = 15_000
/** Sends of one broadcast in flight at once (never more than its rate a second). */
const MAX_LANES = 16
/** How often a lane reads the broadcast's status between sends (a pause or a cancel). */
const STATUS_EVERY_MS = 250
/** Attempts of one recipient whose sends the platform answered "not now" (rate limits, unavailable). */
const MAX_ATTEMPTS = 6

/** Why a recipient a cancel caught was not sent (broadcasts.ts skips the others with it too). */
export const CANCELLED: ChatMessageError = { code: null, title: 'Cancelled', details: null }

/** The platform's pair limit of one customer (131056). */
const PAIR_RATE_LIMIT = 131056
/** The pair limit lets a number message one customer about once every six seconds. */
const PAIR_INTERVAL_MS = 6000

interface Claimed {
  position: number
  phone: string
  components: unknown[] | null
  attempts: number
  /** It was claimed before by a worker that did not finish it: its send may have gone. */
  taken_over: boolean
}

export interface BroadcastSenderOptions {
  db: DbOrTx
  chat: ChatService
  sendRate: SendRate
  logger: Pick<Logger, 'info' | 'warn'>
}

/**
 * What a "not now" answer (the one classification every chat send uses, `isTransientChatFailure`)
 * waits before the recipient is tried again; undefined for a final refusal.
 */
function backoffMs (err: unknown, attempts: number): number | undefined {
  if (!isTransientChatFailure(err)) return undefined
  const platform = err instanceof DomainError ? err.cause : err
  if (platform instanceof ChatPlatformError && platform.code === PAIR_RATE_LIMIT) return Math.min(60_000, PAIR_INTERVAL_MS * attempts)
  return Math.min(30_000, 1000 * 2 ** (attempts - 1))
}

function errorOf (err: unknown): ChatMessageError {
  const platform = err instanceof DomainError ? err.cause : err
  if (platform instanceof ChatPlatformError) return { code: platform.code, title: platform.message.slice(0, 200), details: platform.details?.slice(0, 1000) ?? null }
  return { code: null, title: (err instanceof Error ? err.message : String(err)).slice(0, 200), details: null }
}

/**
 * The sends of a broadcast (README, Broadcasts), worked by its job on `chat-broadcasts`: lanes
 * claim recipients in order under a lease, each send admitted by the number's rate limit shared by
 * every worker (send-rate.ts), its components rendered from its contact (template-components.ts),
 * then sent as a template and stored as the conversation's message.
 * A "not now" answer puts the recipient back with a wait; a pause or a cancel stops the lanes
 * between sends. A recipient whose claim outlived its worker is sent again and counted in
 * `repeated`: no other recipient is sent twice, and none is skipped.
 */
export function broadcastSender ({ db, chat, sendRate, logger }: BroadcastSenderOptions) {
  async function broadcastOf (id: string): Promise<ChatBroadcast | undefined> {
    const [broadcast] = await db.select().from(chatBroadcasts).where(eq(chatBroadcasts.id, id)).limit(1)
    return broadcast
  }

  async function claim (broadcastId: string): Promise<Claimed | undefined> {
    const [row] = await db.execute<Claimed & Record<string, unknown>>(sql`
      with next as (
        select position, status = 'sending' as taken_over from chat_broadcast_recipients
        where broadcast_id = ${broadcastId}
          and ((status = 'queued' and (not_before is null or not_before <= now())) or (status = 'sending' and lease_until < now()))
        order by position limit 1
        for update skip locked
      )
      update chat_broadcast_recipients r set status = 'sending', attempts = r.attempts + 1,
        lease_until = now() + make_interval(secs => ${SEND_LEASE_MS / 1000})
      from next where r.broadcast_id = ${broadcastId} and r.position = next.position
      returning r.position, r.phone, r.components, r.attempts, next.taken_over`)
    return row
  }

  async function finish (broadcastId: string, position: number, changes: { status: 'sent' | 'failed' | 'skipped', wamid?: string | null, error?: ChatMessageError }): Promise<void> {
    await db.execute(sql`
      update chat_broadcast_recipients set status = ${changes.status}, lease_until = null,
        wamid = coalesce(${changes.wamid ?? null}, wamid),
        error = ${changes.error === undefined ? null : jsonb(changes.error)},
        sent_at = case when ${changes.status} = 'sent' then now() else sent_at end, not_before = null
      where broadcast_id = ${broadcastId} and position = ${position}`)
  }

  /**
   * Gives a claimed recipient back unsent: queued again (after `retry.waitMs`, with its error, when
   * the platform said "not now"; else as if never claimed), or skipped as "Cancelled" when its
   * broadcast is. The broadcast's row is read under a share lock, so a cancel either waits for this
   * statement or is seen by it: `cancel` skips the queued recipients after its status change, and
   * no recipient of a cancelled broadcast is left queued.
   */
  async function giveBack (broadcastId: string, position: number, retry?: { error: ChatMessageError, waitMs: number }): Promise<void> {
    await db.execute(sql`
      with broadcast as (select status = 'cancelled' as cancelled from chat_broadcasts where id = ${broadcastId} for share)
      update chat_broadcast_recipients r set lease_until = null,
        status = case when broadcast.cancelled then 'skipped' else 'queued' end,
        error = case when broadcast.cancelled then ${jsonb(CANCELLED)} else ${retry === undefined ? sql`r.error` : jsonb(retry.error)} end,
        attempts = case when broadcast.cancelled or ${retry !== undefined} then r.attempts else r.attempts - 1 end,
        not_before = case when broadcast.cancelled or ${retry === undefined} then r.not_before else now() + make_interval(secs => ${(retry?.waitMs ?? 0) / 1000}) end
      from broadcast
      where r.broadcast_id = ${broadcastId} and r.position = ${position} and r.status = 'sending'`)
  }

  /**
   * The recipient's contact, read once per send: its consent (README, Contacts and consent: an
   * opted-out customer is skipped) and what its components' placeholders read.
   */
  async function contactOf (phoneNumberId: string, address: string): Promise<{ optedOut: boolean, name: string | null, attributes: Record<string, string> } | undefined> {
    const [row] = await db.execute<{ optedOut: boolean, name: string | null, attributes: Record<string, string> }>(sql`
      select opted_out as "optedOut", name, attributes from chat_contacts k where phone_number_id = ${phoneNumberId} and ${customerIs('k', address)}`)
    return row
  }

  /** One lane: sends until nothing is left to claim now, or the broadcast stops. */
  async function lane (broadcast: ChatBroadcast, account: UsableChatAccount, signal?: AbortSignal): Promise<void> {
    let statusReadAt = Date.now()
    for (;;) {
      if (Date.now() - statusReadAt > STATUS_EVERY_MS) {
        statusReadAt = Date.now()
        if ((await broadcastOf(broadcast.id))?.status !== 'sending') return
      }
      if (signal?.aborted === true) return
      const recipient = await claim(broadcast.id)
      if (recipient === undefined) return
      if (recipient.taken_over) {
        await db.update(chatBroadcasts).set({ repeated: sql`${chatBroadcasts.repeated} + 1` }).where(eq(chatBroadcasts.id, broadcast.id))
        logger.warn({ broadcastId: broadcast.id, position: recipient.position }, 'broadcast send taken over from a worker that stopped during it: it may reach its customer twice')
      }
      const contact = await contactOf(broadcast.phoneNumberId, recipient.phone)
      if (contact?.optedOut === true) {
        await finish(broadcast.id, recipient.position, { status: 'skipped', error: { code: null, title: 'Opted out', details: null } })
        continue
      }
      // Rendered before the rate is asked: a recipient whose contact lacks a value fails without taking a send's place.
      const rendered = recipient.components === null
        ? undefined
        : renderForContact(recipient.components, { phone: recipient.phone, name: contact?.name ?? null, attributes: contact?.attributes ?? {} })
      if (rendered !== undefined && 'problem' in rendered) {
        await finish(broadcast.id, recipient.position, { status: 'failed', error: { code: null, title: rendered.problem.slice(0, 200), details: null } })
        continue
      }
      await sendRate.admit(broadcast.phoneNumberId, broadcast.ratePerSecond, `${broadcast.id}:${recipient.position}:${recipient.attempts}`, signal)
      // The wait for the rate may be long: a pause in the meantime gives the recipient back unsent, a cancel skips it.
      if ((await broadcastOf(broadcast.id))?.status !== 'sending') {
        await giveBack(broadcast.id, recipient.position)
        return
      }
      statusReadAt = Date.now()
      try {
        const result = await chat.sendTemplate(account, {
          to: recipient.phone,
          templateName: broadcast.templateName,
          lang: broadcast.lang,
          ...(rendered !== undefined && { components: rendered.components }),
          sender: { type: 'broadcast', id: broadcast.id }
        }, { signal })
        await finish(broadcast.id, recipient.position, { status: 'sent', wamid: result.messages?.[0]?.id ?? null })
      } catch (err) {
        const waitMs = backoffMs(err, recipient.attempts)
        if (waitMs !== undefined && recipient.attempts < MAX_ATTEMPTS) {
          await giveBack(broadcast.id, recipient.position, { error: errorOf(err), waitMs })
        } else {
          await finish(broadcast.id, recipient.position, { status: 'failed', error: errorOf(err) })
        }
      }
    }
  }

  return {
    /**
     * Works the broadcast until nothing is left to send now. Returns how long until it should be
     * looked at again (its sendAt, a recipient's backoff, another worker's claim), or undefined when
     * it is done, paused or cancelled.
     */
    async run (broadcastId: string, signal?: AbortSignal): Promise<{ delayMs: number } | undefined> {
      let broadcast = await broadcastOf(broadcastId)
      if (broadcast === undefined || !['scheduled', 'sending'].includes(broadcast.status)) return undefined
      const untilStart = broadcast.sendAt.getTime() - Date.now()
      if (untilStart > 0) return { delayMs: untilStart }
      if (broadcast.status === 'scheduled') {
        const [started] = await db.update(chatBroadcasts).set({ status: 'sending', updatedAt: new Date() })
          .where(sql`${chatBroadcasts.id} = ${broadcastId} and ${chatBroadcasts.status} = 'scheduled'`).returning()
        if (started === undefined) return undefined
        broadcast = started
      }
      const account = await chat.accounts.byId(broadcast.accountId, broadcast.phoneNumberId)
      if (account === null) {
        logger.warn({ broadcastId }, 'broadcast stopped: its chat account is gone')
        await db.update(chatBroadcasts).set({ status: 'paused', updatedAt: new Date() }).where(eq(chatBroadcasts.id, broadcastId))
        return undefined
      }
      const lanes = Math.min(MAX_LANES, broadcast.ratePerSecond)
      await Promise.all(Array.from({ length: lanes }, async () => { await lane(broadcast!, account, signal) }))

      const [left] = await db.execute<{ waitMs: number | null, open: number }>(sql`
        select count(*)::int as open,
          extract(epoch from min(case when status = 'queued' then coalesce(not_before, now()) else lease_until end) - now()) * 1000 as "waitMs"
        from chat_broadcast_recipients where broadcast_id = ${broadcastId} and status in ('queued', 'sending')`)
      if ((await broadcastOf(broadcastId))?.status !== 'sending') return undefined
      if (left!.open > 0) return { delayMs: Math.max(50, Math.ceil(left!.waitMs ?? 0)) }
      const [done] = await db.update(chatBroadcasts).set({ status: 'done', finishedAt: new Date(), updatedAt: new Date() })
        .where(sql`${chatBroadcasts.id} = ${broadcastId} and ${chatBroadcasts.status} = 'sending'`).returning({ id: chatBroadcasts.id })
      if (done !== undefined) logger.info({ broadcastId, total: broadcast.total }, 'broadcast done')
      return undefined
    }
  }
}
