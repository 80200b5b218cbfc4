import { createId } from '@paralleldrive/cuid2'
import { sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { LABEL_BOUNDS } from './labels.ts'

/**
 * Who wrote an inbound message, as the platform names them (README, Customers known by username):
 * `phone` "" when it withholds the number, `platformUserId` (BSUID) absent only on deliveries from
 * before the platform sent one.
 */
export interface CustomerIdentity {
  phoneNumberId: string
  phone: string
  platformUserId: string | null
  parentPlatformUserId: string | null
  username: string | null
  /** The profile name; absent on some deliveries, then the stored name stays. */
  name: string | null
}

/** The two records of a number's customer: its conversation and its contact. */
type CustomerTable = 'conversations' | 'chat_contacts'

// A type, not an interface: the driver's rows are records.
type CustomerRow = {
  table: CustomerTable
  id: string
  phone: string
  platformUserId: string | null
  parentPlatformUserId: string | null
  username: string | null
  name: string | null
}

/**
 * The labels of two records as one set, in the order they were added (the kept record's first),
 * at most LABEL_BOUNDS.perRecord.
 */
const UNITED_LABELS = `(select coalesce(array_agg(u.label order by u.position), '{}'::text[]) from (
  select label, min(position) as position from unnest(kept.labels || gone.labels) with ordinality as l(label, position)
  group by label order by min(position) limit ${LABEL_BOUNDS.perRecord}) u)`

/** What the kept record takes of the one joined into it, per table; the kept record's own values win. */
const FOLD = {
  conversations: sql.raw(`name = coalesce(kept.name, gone.name),
    unread_count = kept.unread_count + gone.unread_count,
    pending_approval_count = kept.pending_approval_count + gone.pending_approval_count,
    last_message = case when gone.last_message_at > coalesce(kept.last_message_at, '-infinity') then gone.last_message else kept.last_message end,
    last_message_at = greatest(kept.last_message_at, gone.last_message_at),
    last_incoming_at = greatest(kept.last_incoming_at, gone.last_incoming_at),
    is_pinned = kept.is_pinned or gone.is_pinned,
    is_archived = kept.is_archived and gone.is_archived,
    assigned_agent_id = coalesce(kept.assigned_agent_id, gone.assigned_agent_id),
    assistant_paused = kept.assistant_paused or gone.assistant_paused,
    labels = ${UNITED_LABELS}`),
  // Consent is the one set last, by whoever set it (README, Contacts and consent).
  chat_contacts: sql.raw(`name = coalesce(kept.name, gone.name),
    attributes = gone.attributes || kept.attributes,
    opted_out = case when gone.consent_changed_at > coalesce(kept.consent_changed_at, '-infinity') then gone.opted_out else kept.opted_out end,
    consent_source = case when gone.consent_changed_at > coalesce(kept.consent_changed_at, '-infinity') then gone.consent_source else kept.consent_source end,
    consent_changed_at = greatest(kept.consent_changed_at, gone.consent_changed_at),
    labels = ${UNITED_LABELS}`)
} satisfies Record<CustomerTable, unknown>

/**
 * Joins `gone` into `kept`: a conversation's messages, notes, assistant turns and asks move to the kept
 * one (an open ask of the joined one ends `superseded` when the kept one has its own: one waits per
 * conversation, README, Conversations), and `gone` is deleted.
 */
async function join (tx: DbOrTx, table: CustomerTable, keptId: string, goneId: string): Promise<void> {
  if (table === 'conversations') {
    for (const child of ['messages', 'conversation_notes', 'assistant_turns']) {
      await tx.execute(sql`update ${sql.raw(child)} set conversation_id = ${keptId} where conversation_id = ${goneId}`)
    }
    await tx.execute(sql`update chat_asks set status = 'superseded', updated_at = now()
      where conversation_id = ${goneId} and status in ('waiting', 'answered')
        and exists (select 1 from chat_asks k where k.conversation_id = ${keptId} and k.status in ('waiting', 'answered'))`)
    await tx.execute(sql`update chat_asks set conversation_id = ${keptId} where conversation_id = ${goneId}`)
  }
  await tx.execute(sql`update ${sql.raw(table)} kept set ${FOLD[table]}, updated_at = now()
    from ${sql.raw(table)} gone where kept.id = ${keptId} and gone.id = ${goneId}`)
  await tx.execute(sql`delete from ${sql.raw(table)} where id = ${goneId}`)
}

/** The name a record takes: a conversation shows the profile name the platform last gave; a contact keeps the one staff gave it. */
const nameFor = (table: CustomerTable, stored: string | null, given: string | null): string | null =>
  table === 'conversations' ? given ?? stored : stored ?? given

/**
 * The record of `who` in `table`, made or found among `rows` (the table's records of either identifier,
 * locked), with what the message says of them written onto it. A record is the customer's when it
 * carries their platform user id, or their phone and no other platform user id. A phone that arrives
 * with the platform user id of a record without one joins the two records (the one with the phone is
 * kept, so that what was keyed by it stays); a phone last seen with another platform user id is that
 * customer's no more (the platform gives a number's new owner a new id): it is taken off the old record.
 * A record that the message changes nothing of is not written.
 */
async function recordOf (tx: DbOrTx, table: CustomerTable, rows: CustomerRow[], who: CustomerIdentity): Promise<string> {
  const { phone, platformUserId: userId } = who
  const byUser = userId === null ? undefined : rows.find((row) => row.platformUserId === userId)
  let byPhone = phone === '' ? undefined : rows.find((row) => row.phone === phone && row !== byUser)
  if (byPhone !== undefined && userId !== null && byPhone.platformUserId !== null) {
    await tx.execute(sql`update ${sql.raw(table)} set phone = '', updated_at = now() where id = ${byPhone.id}`)
    byPhone = undefined
  }
  if (byPhone !== undefined && byUser !== undefined) await join(tx, table, byPhone.id, byUser.id)
  const kept = byPhone ?? byUser
  const isContact = table === 'chat_contacts'
  if (kept === undefined) {
    const id = createId()
    await tx.execute(sql`insert into ${sql.raw(table)} (id, phone_number_id, phone, platform_user_id, username, name${isContact ? sql`, parent_platform_user_id` : sql``})
      values (${id}, ${who.phoneNumberId}, ${phone}, ${userId}, ${who.username}, ${who.name}${isContact ? sql`, ${who.parentPlatformUserId}` : sql``})`)
    return id
  }
  const next = {
    phone: phone !== '' ? phone : kept.phone,
    platformUserId: userId ?? kept.platformUserId,
    username: who.username ?? kept.username,
    parentPlatformUserId: isContact ? who.parentPlatformUserId ?? kept.parentPlatformUserId : null,
    name: nameFor(table, kept.name, who.name)
  }
  const joined = byUser !== undefined && byPhone !== undefined
  if (joined || next.phone !== kept.phone || next.platformUserId !== kept.platformUserId || next.username !== kept.username || next.name !== kept.name ||
    (isContact && next.parentPlatformUserId !== kept.parentPlatformUserId)) {
    await tx.execute(sql`update ${sql.raw(table)} set phone = ${next.phone}, platform_user_id = ${next.platformUserId}, username = ${next.username},
        name = ${next.name}${isContact ? sql`, parent_platform_user_id = ${next.parentPlatformUserId}` : sql``}, updated_at = now()
      where id = ${kept.id}`)
  }
  return kept.id
}

/**
 * The conversation and contact of an inbound message's customer, in the caller's transaction, found by
 * phone or platform user id, made when new, joined when the message names both and they were two
 * (README, Customers known by username). Messages of one customer are taken one at a time (a lock per
 * identifier, taken in one order): two of them racing never make two records.
 */
export async function recordCustomer (tx: DbOrTx, who: CustomerIdentity): Promise<{ conversationId: string, contactId: string }> {
  const keys = [
    ...(who.phone !== '' ? [`phone:${who.phone}`] : []),
    ...(who.platformUserId !== null ? [`user:${who.platformUserId}`] : [])
  ].sort().map((key) => sql`pg_advisory_xact_lock(hashtextextended(${`chat-customer:${who.phoneNumberId}:${key}`}, 0))`)
  await tx.execute(sql`select ${sql.join(keys, sql`, `)}`)
  const matches = (alias: string): SQL => sql`${sql.raw(alias)}.phone_number_id = ${who.phoneNumberId} and (
    (${sql.raw(alias)}.phone = ${who.phone} and ${sql.raw(alias)}.phone <> '') or ${sql.raw(alias)}.platform_user_id = ${who.platformUserId}::text)`
  const rows = await tx.execute<CustomerRow>(sql`
    with c as (select id, phone, platform_user_id, username, name from conversations c where ${matches('c')} for update),
      k as (select id, phone, platform_user_id, parent_platform_user_id, username, name from chat_contacts k where ${matches('k')} for update)
    select 'conversations' as "table", id, phone, platform_user_id as "platformUserId", null as "parentPlatformUserId", username, name from c
    union all
    select 'chat_contacts', id, phone, platform_user_id, parent_platform_user_id, username, name from k`)
  const conversationId = await recordOf(tx, 'conversations', rows.filter((row) => row.table === 'conversations'), who)
  const contactId = await recordOf(tx, 'chat_contacts', rows.filter((row) => row.table === 'chat_contacts'), who)
  return { conversationId, contactId }
}
