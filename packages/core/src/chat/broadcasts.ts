import { and, desc, eq, sql } from 'drizzle-orm'
import { createId } from '../ids.ts'
import { recordAudit, type AuditContext } from '../audit/log.ts'
import type { DbOrTx } from '../db/client.ts'
import { BROADCAST_COUNT_STATUSES } from '../db/values.ts'
import { jsonb, textArray } from '../db/sql.ts'
import { chatBroadcasts, type BroadcastStatus, type ChatBroadcast, type ChatMessageError } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import { BROADCAST_JOB, type BroadcastJobData, type Queues } from '../queues/catalog.ts'
import { isAdmin, type Viewer } from '../users/viewer.ts'
import type { UsableChatAccount } from './accounts.ts'
import { CANCELLED } from './broadcast-sender.ts'
import { addressColumn, normalizeAddress } from './phone.ts'
import { checkBroadcastComponents } from './template-components.ts'

/** Bounds of a broadcast (README, Broadcasts): recipients or contact ids in one request, and contacts one label may reach. */
export const MAX_BROADCAST_RECIPIENTS = 10_000
const MAX_BROADCAST_AUDIENCE = 100_000
export const MAX_BROADCAST_RATE = 1000
/** The platform's standard throughput is 80 messages a second per number; the default stays under it. */
export const DEFAULT_BROADCAST_RATE = 20

type CountStatus = typeof BROADCAST_COUNT_STATUSES[number]

/** Who a broadcast goes to: recipients listed in the request, or the account's contacts by label or by id. */
export type BroadcastAudience =
  | { recipients: ReadonlyArray<{ to: string, components?: unknown[] }> }
  | { label: string, components?: unknown[] }
  | { contactIds: readonly string[], components?: unknown[] }

export type BroadcastInput = BroadcastAudience & {
  templateName: string
  lang: string
  ratePerSecond: number
  sendAt?: Date
}

export interface BroadcastView extends ChatBroadcast {
  counts: Record<CountStatus, number>
}

export interface BroadcastRecipientView {
  position: number
  phone: string
  status: CountStatus
  attempts: number
  wamid: string | null
  error: ChatMessageError | null
  sentAt: Date | null
}

const broadcastNotFound = (): DomainError => new DomainError('BROADCAST_NOT_FOUND', 'Broadcast not found')

/** A recipient's status as the API shows it: a sent one follows its message (delivered, read, failed). */
const recipientStatus = sql`case
  when r.status in ('queued', 'sending') then 'queued'
  when r.status = 'sent' and m.status in ('delivered', 'read', 'failed') then m.status
  else r.status end`

/** The job that sends a broadcast: one per broadcast at a time (one more kept while it is active), delayed to its sendAt. */
async function enqueueBroadcast (queues: Queues, broadcastId: string, delayMs = 0): Promise<void> {
  const data: BroadcastJobData = { broadcastId }
  await queues['chat-broadcasts'].add(BROADCAST_JOB, data, { delay: Math.max(0, delayMs), deduplication: { id: `broadcast:${broadcastId}`, keepLastIfActive: true } })
}

/**
 * For the reconciler: a broadcast still to send whose job Redis lost (a restart emptied it) is
 * queued again. Returns how many were.
 */
export function broadcastRequeue ({ db, queues }: { db: DbOrTx, queues: Queues }): () => Promise<number> {
  return async function requeueBroadcasts (): Promise<number> {
    const open = await db.select({ id: chatBroadcasts.id, sendAt: chatBroadcasts.sendAt }).from(chatBroadcasts)
      .where(sql`${chatBroadcasts.status} in ('scheduled', 'sending')`).limit(1000)
    let count = 0
    for (const broadcast of open) {
      if (await queues['chat-broadcasts'].getDeduplicationJobId(`broadcast:${broadcast.id}`) !== null) continue
      await enqueueBroadcast(queues, broadcast.id, broadcast.sendAt.getTime() - Date.now())
      count++
    }
    return count
  }
}

/**
 * Writes a broadcast's recipients, in one statement whatever their number, and returns how many. A
 * number listed twice is sent once, at its first place; contacts go in the order of their phones.
 * Components are checked here and kept as written: their contact placeholders are rendered at each send.
 */
async function insertRecipients (tx: DbOrTx, broadcastId: string, phoneNumberId: string, audience: BroadcastAudience): Promise<number> {
  if ('recipients' in audience) {
    const seen = new Set<string>()
    const recipients = audience.recipients.flatMap((recipient, index) => {
      let phone: string
      try {
        phone = normalizeAddress(recipient.to)
      } catch {
        throw new DomainError('VALIDATION_ERROR', `recipients[${index}].to must be a phone number in international format`)
      }
      if (seen.has(phone)) return []
      seen.add(phone)
      if (recipient.components !== undefined) checkBroadcastComponents(recipient.components, `recipients[${index}].components`)
      return [{ phone, components: recipient.components ?? null }]
    })
    await tx.execute(sql`
      insert into chat_broadcast_recipients (broadcast_id, position, phone, components)
      select ${broadcastId}, r.ordinality - 1, r.value->>'phone', nullif(r.value->'components', 'null'::jsonb)
      from jsonb_array_elements(${jsonb(recipients)}) with ordinality as r`)
    return recipients.length
  }
  if (audience.components !== undefined) checkBroadcastComponents(audience.components, 'components')
  const components = audience.components === undefined ? null : jsonb(audience.components)
  if ('label' in audience) {
    const [{ count }] = await tx.execute<{ count: number }>(sql`
      select count(*)::int as count from chat_contacts where phone_number_id = ${phoneNumberId} and ${audience.label} = any(labels)`)
    if (count > MAX_BROADCAST_AUDIENCE) throw new DomainError('VALIDATION_ERROR', `label reaches ${count} contacts, more than ${MAX_BROADCAST_AUDIENCE}`)
    const inserted = await tx.execute(sql`
      insert into chat_broadcast_recipients (broadcast_id, position, phone, components)
      select ${broadcastId}, (row_number() over (order by phone, platform_user_id)) - 1, ${addressColumn('chat_contacts')}, ${components}
      from chat_contacts where phone_number_id = ${phoneNumberId} and ${audience.label} = any(labels)`)
    return inserted.count
  }
  const ids = [...new Set(audience.contactIds)]
  const inserted = await tx.execute(sql`
    insert into chat_broadcast_recipients (broadcast_id, position, phone, components)
    select ${broadcastId}, (row_number() over (order by phone, platform_user_id)) - 1, ${addressColumn('chat_contacts')}, ${components}
    from chat_contacts where phone_number_id = ${phoneNumberId} and id = any(${textArray(ids)})`)
  if (inserted.count !== ids.length) throw new DomainError('VALIDATION_ERROR', `contactIds: ${ids.length - inserted.count} of them are not contacts of this account`)
  return inserted.count
}

/**
 * Broadcasts as the API sees them (README, Broadcasts): created with their recipients in one
 * transaction and queued; read with counts by status and per-recipient results; paused, resumed
 * and cancelled by guarded status changes the sender reads between sends. The owner and admins
 * see a broadcast; others get a 404.
 */
export function broadcastsService ({ db, queues }: { db: DbOrTx, queues: Queues }) {
  const visible = (viewer: Viewer, id: string) => isAdmin(viewer) ? eq(chatBroadcasts.id, id) : and(eq(chatBroadcasts.id, id), eq(chatBroadcasts.userId, viewer.id))

  async function counts (broadcastIds: readonly string[]): Promise<Map<string, Record<CountStatus, number>>> {
    const byBroadcast = new Map(broadcastIds.map((id) => [id, Object.fromEntries(BROADCAST_COUNT_STATUSES.map((status) => [status, 0])) as Record<CountStatus, number>]))
    if (broadcastIds.length === 0) return byBroadcast
    const rows = await db.execute<{ broadcastId: string, status: CountStatus, count: number }>(sql`
      select r.broadcast_id as "broadcastId", ${recipientStatus} as status, count(*)::int as count
      from chat_broadcast_recipients r left join messages m on m.wamid = r.wamid
      where r.broadcast_id = any(${textArray(broadcastIds)})
      group by 1, 2`)
    for (const row of rows) byBroadcast.get(row.broadcastId)![row.status] = row.count
    return byBroadcast
  }

  async function view (viewer: Viewer, id: string): Promise<BroadcastView> {
    const [broadcast] = await db.select().from(chatBroadcasts).where(visible(viewer, id)).limit(1)
    if (broadcast === undefined) throw broadcastNotFound()
    return { ...broadcast, counts: (await counts([id])).get(id)! }
  }

  /** Moves a visible broadcast from one of `from` to `to`; a 409 naming its status when it is in none of them. */
  async function move (viewer: Viewer, id: string, action: 'paused' | 'resumed' | 'cancelled', from: readonly BroadcastStatus[], to: (sendAt: Date) => BroadcastStatus): Promise<ChatBroadcast> {
    for (;;) {
      const current = await view(viewer, id)
      if (!from.includes(current.status)) throw new DomainError('BROADCAST_STATE', `Broadcast is ${current.status}: it cannot be ${action}`)
      const [moved] = await db.update(chatBroadcasts).set({ status: to(current.sendAt), updatedAt: new Date() })
        .where(and(eq(chatBroadcasts.id, id), eq(chatBroadcasts.status, current.status))).returning()
      // Changed in between (the sender finished it): look again.
      if (moved !== undefined) return moved
    }
  }

  return {
    /** `audit`: who creates it, recorded in its transaction ('broadcast.created'). */
    async create (viewer: Viewer, account: UsableChatAccount, input: BroadcastInput, audit?: AuditContext): Promise<BroadcastView> {
      if (account.isSandbox) throw new DomainError('CHAT_ACCOUNT_SANDBOX', 'Broadcasts cannot be sent from a sandbox number: its customers are played')
      const id = createId()
      const sendAt = input.sendAt ?? new Date()
      await db.transaction(async (tx) => {
        await tx.insert(chatBroadcasts).values({
          id,
          userId: viewer.id,
          accountId: account.id,
          phoneNumberId: account.phoneNumberId,
          templateName: input.templateName,
          lang: input.lang,
          ratePerSecond: input.ratePerSecond,
          sendAt,
          total: 0
        })
        const total = await insertRecipients(tx, id, account.phoneNumberId, input)
        if (total === 0) throw new DomainError('VALIDATION_ERROR', 'The broadcast has no recipients')
        await tx.update(chatBroadcasts).set({ total }).where(eq(chatBroadcasts.id, id))
        if (audit !== undefined) {
          await recordAudit(tx, audit, {
            action: 'broadcast.created',
            targetType: 'broadcast',
            targetId: id,
            details: { accountId: account.id, templateName: input.templateName, lang: input.lang, recipients: total, sendAt: sendAt.toISOString() }
          })
        }
      })
      await enqueueBroadcast(queues, id, sendAt.getTime() - Date.now())
      return view(viewer, id)
    },

    async list (viewer: Viewer, page: { limit: number, offset: number }): Promise<BroadcastView[]> {
      const rows = await db.select().from(chatBroadcasts)
        .where(isAdmin(viewer) ? undefined : eq(chatBroadcasts.userId, viewer.id))
        .orderBy(desc(chatBroadcasts.createdAt), desc(chatBroadcasts.id)).limit(page.limit).offset(page.offset)
      const byBroadcast = await counts(rows.map((row) => row.id))
      return rows.map((row) => ({ ...row, counts: byBroadcast.get(row.id)! }))
    },

    get: view,

    async recipients (viewer: Viewer, id: string, query: { status?: CountStatus, limit: number, offset: number }): Promise<BroadcastRecipientView[]> {
      await view(viewer, id)
      return db.execute<BroadcastRecipientView & Record<string, unknown>>(sql`
        select * from (
          select r.position, r.phone, ${recipientStatus} as status, r.attempts, r.wamid,
            coalesce(r.error, case when m.status = 'failed' then m.error_details end) as error, r.sent_at as "sentAt"
          from chat_broadcast_recipients r left join messages m on m.wamid = r.wamid
          where r.broadcast_id = ${id}
        ) v
        where ${query.status === undefined ? sql`true` : sql`v.status = ${query.status}`}
        order by v.position limit ${query.limit} offset ${query.offset}`)
    },

    /** Stops sending after the sends in flight; nothing is skipped. */
    async pause (viewer: Viewer, id: string): Promise<BroadcastView> {
      await move(viewer, id, 'paused', ['scheduled', 'sending'], () => 'paused')
      return view(viewer, id)
    },

    async resume (viewer: Viewer, id: string): Promise<BroadcastView> {
      const resumed = await move(viewer, id, 'resumed', ['paused'], (sendAt) => sendAt.getTime() > Date.now() ? 'scheduled' : 'sending')
      await enqueueBroadcast(queues, id, resumed.sendAt.getTime() - Date.now())
      return view(viewer, id)
    },

    /**
     * Ends it: the recipients not sent yet are skipped (`error.title` "Cancelled"); a send in flight
     * finishes, one waiting for the rate is skipped by its sender.
     */
    async cancel (viewer: Viewer, id: string): Promise<BroadcastView> {
      await move(viewer, id, 'cancelled', ['scheduled', 'sending', 'paused'], () => 'cancelled')
      await db.execute(sql`
        update chat_broadcast_recipients set status = 'skipped', error = ${jsonb(CANCELLED)}, lease_until = null
        where broadcast_id = ${id} and (status = 'queued' or (status = 'sending' and lease_until < now()))`)
      await db.update(chatBroadcasts).set({ finishedAt: new Date() }).where(eq(chatBroadcasts.id, id))
      return view(viewer, id)
    }
  }
}

export type BroadcastsService = ReturnType<typeof broadcastsService>
