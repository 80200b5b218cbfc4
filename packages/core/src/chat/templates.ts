import { createId } from '@paralleldrive/cuid2'
import { and, asc, eq, sql } from 'drizzle-orm'
import type { Config } from '../config.ts'
import type { DbOrTx } from '../db/client.ts'
import { chatTemplates } from '../db/schema/index.ts'
import { jsonb, textArray } from '../db/sql.ts'
import { TEMPLATE_CATEGORIES, TEMPLATE_QUALITIES, TEMPLATE_STATUSES } from '../db/values.ts'
import { DomainError } from '../errors.ts'
import { CHAT_TEMPLATE_STATUS } from '../events/outbox.ts'
import { chatAccountResolver, type UsableChatAccount } from './accounts.ts'
import { ChatPlatformError, type ChatClient } from './client.ts'
import { platformFailure } from './platform-errors.ts'
import { checkTemplate, isTemplateName } from './template-rules.ts'

type TemplateStatus = typeof TEMPLATE_STATUSES[number]
type TemplateQuality = typeof TEMPLATE_QUALITIES[number]

/** A stored template as the API gives it: `id` is the platform's, as in the live list. */
interface StoredTemplate {
  id: string
  name: string
  language: string
  category: typeof TEMPLATE_CATEGORIES[number]
  components: unknown[]
  status: TemplateStatus
  reason: string | null
  quality: TemplateQuality | null
  createdAt: Date
  updatedAt: Date
}

const storedColumns = {
  id: chatTemplates.templateId,
  name: chatTemplates.name,
  language: chatTemplates.language,
  category: chatTemplates.category,
  components: chatTemplates.components,
  status: chatTemplates.status,
  reason: chatTemplates.reason,
  quality: chatTemplates.quality,
  createdAt: chatTemplates.createdAt,
  updatedAt: chatTemplates.updatedAt
}

/**
 * The statuses of ours each event of the platform's `message_template_status_update` webhook sets.
 * REINSTATED: no longer flagged or disabled, sendable again. Its other events (FLAGGED, LOCKED,
 * ARCHIVED, IN_APPEAL, LIMIT_EXCEEDED…) say nothing of whether the template can be sent: they change nothing.
 */
const STATUS_OF_EVENT: Record<string, TemplateStatus> = {
  APPROVED: 'APPROVED',
  REINSTATED: 'APPROVED',
  PENDING: 'PENDING',
  REJECTED: 'REJECTED',
  PAUSED: 'PAUSED',
  DISABLED: 'DISABLED'
}

/** The events of a template the platform no longer has: its row goes. */
const DELETION_EVENTS = new Set(['DELETED', 'PENDING_DELETION'])

/** The platform's answer to a delete of a name it does not have (code 100, subcode 2593002 `Message template not found`). */
const TEMPLATE_NOT_FOUND_SUBCODE = 2593002

const templateNotFound = (): DomainError => new DomainError('TEMPLATE_NOT_FOUND', 'Template not found')

/** Which template a webhook's value names: the platform keys templates by name and language within a business account. */
interface TemplateKey {
  businessAccountId: string
  name: string
  language: string
}

function keyOf (businessAccountId: unknown, value: Record<string, any>): TemplateKey | undefined {
  const { message_template_name: name, message_template_language: language } = value
  return typeof businessAccountId === 'string' && typeof name === 'string' && typeof language === 'string'
    ? { businessAccountId, name, language }
    : undefined
}

/**
 * Why the platform set the status: its `reason` (`INVALID_FORMAT`, `SCAM`…), else, for a pause, the
 * explanation of `other_info`; `NONE` (an approval) is no reason.
 */
function reasonOf (value: Record<string, any>): string | null {
  if (typeof value.reason === 'string' && value.reason !== '' && value.reason !== 'NONE') return value.reason
  const description = value.other_info?.description
  return typeof description === 'string' && description !== '' ? description : null
}

const sameKey = (key: TemplateKey) => and(
  eq(chatTemplates.businessAccountId, key.businessAccountId), eq(chatTemplates.name, key.name), eq(chatTemplates.language, key.language))

/** What one template webhook did: `unknown`, a template not made here (ignored); `changed`, the stored row moved. */
export type TemplateUpdate = { outcome: 'unknown' | 'unchanged' | 'ignored' } | { outcome: 'changed', eventIds: string[] }

/**
 * Templates made here (README, Chat: templates): checked against the platform's rules, submitted,
 * stored with the status the platform gives them and then keeps current through its webhooks.
 */
export function chatTemplatesRepository (options: { db: DbOrTx, config: Config }) {
  const { db } = options
  const accounts = chatAccountResolver(options)

  return {
    async list (businessAccountId: string, status: TemplateStatus | 'all', page: { limit: number, offset: number }): Promise<StoredTemplate[]> {
      return db.select(storedColumns).from(chatTemplates)
        .where(and(eq(chatTemplates.businessAccountId, businessAccountId), status === 'all' ? undefined : eq(chatTemplates.status, status)))
        .orderBy(asc(chatTemplates.name), asc(chatTemplates.language))
        .limit(page.limit).offset(page.offset)
    },

    /** The stored status of one template, null when it was not made here. */
    async statusOf (key: TemplateKey): Promise<TemplateStatus | null> {
      const [row] = await db.select({ status: chatTemplates.status }).from(chatTemplates).where(sameKey(key)).limit(1)
      return row?.status ?? null
    },

    /** A template the platform accepted; one of the same name and language stored before (deleted elsewhere since) is replaced. */
    async store (template: Omit<typeof chatTemplates.$inferInsert, 'createdAt' | 'updatedAt' | 'reason' | 'quality'>): Promise<StoredTemplate> {
      const values = { ...template, components: jsonb(template.components) }
      const [row] = await db.insert(chatTemplates).values(values)
        .onConflictDoUpdate({
          target: [chatTemplates.businessAccountId, chatTemplates.name, chatTemplates.language],
          set: { ...values, reason: null, quality: null, createdAt: new Date(), updatedAt: new Date() }
        })
        .returning(storedColumns)
      return row!
    },

    /** Removes every language of `name`; returns how many rows went. */
    async delete (businessAccountId: string, name: string): Promise<number> {
      const deleted = await db.delete(chatTemplates)
        .where(and(eq(chatTemplates.businessAccountId, businessAccountId), eq(chatTemplates.name, name)))
        .returning({ name: chatTemplates.name })
      return deleted.length
    },

    /**
     * The platform's `message_template_status_update` for business account `businessAccountId`: the
     * stored status and reason, when they change, with `chat.template.status` to every user of the
     * business account in the same statement (the outbox, events/outbox.ts). The same update again
     * changes nothing and emits nothing, so a delivery processed twice tells its listeners once.
     */
    async applyStatusUpdate (businessAccountId: unknown, value: Record<string, any>): Promise<TemplateUpdate> {
      const key = keyOf(businessAccountId, value)
      if (key === undefined) return { outcome: 'ignored' }
      const event = String(value.event)
      if (DELETION_EVENTS.has(event)) {
        const deleted = await db.delete(chatTemplates).where(sameKey(key)).returning({ name: chatTemplates.name })
        return deleted.length > 0 ? { outcome: 'changed', eventIds: [] } : { outcome: 'unknown' }
      }
      const status = STATUS_OF_EVENT[event]
      if (status === undefined) return { outcome: 'ignored' }
      const reason = reasonOf(value)
      const userIds = await accounts.userIdsForBusinessAccount(key.businessAccountId)
      const changeId = createId()
      const [row] = await db.execute<{ known: boolean, changed: boolean, eventIds: string[] | null }>(sql`
        with changed as (
          update chat_templates set status = ${status}, reason = ${reason}, updated_at = now()
          where business_account_id = ${key.businessAccountId} and name = ${key.name} and language = ${key.language}
            and (status <> ${status} or reason is distinct from ${reason})
          returning business_account_id, name, language, status, reason
        ), emitted as (
          insert into events (id, name, user_id, payload)
          select 'template:' || ${changeId}::text || ':' || u.id, ${CHAT_TEMPLATE_STATUS}, u.id,
            jsonb_build_object('businessAccountId', c.business_account_id, 'name', c.name, 'language', c.language, 'status', c.status, 'reason', c.reason)
          from changed c, unnest(${textArray(userIds)}) as u(id)
          returning id
        )
        select exists (select 1 from chat_templates where business_account_id = ${key.businessAccountId} and name = ${key.name} and language = ${key.language}) as known,
          exists (select 1 from changed) as changed, (select array_agg(id) from emitted) as "eventIds"`)
      if (row?.known !== true) return { outcome: 'unknown' }
      return row.changed ? { outcome: 'changed', eventIds: row.eventIds ?? [] } : { outcome: 'unchanged' }
    },

    /** The platform's `message_template_quality_update`: the stored quality score. */
    async applyQualityUpdate (businessAccountId: unknown, value: Record<string, any>): Promise<TemplateUpdate> {
      const key = keyOf(businessAccountId, value)
      const quality = TEMPLATE_QUALITIES.find((candidate) => candidate === value.new_quality_score)
      if (key === undefined || quality === undefined) return { outcome: 'ignored' }
      const updated = await db.update(chatTemplates).set({ quality, updatedAt: new Date() }).where(sameKey(key)).returning({ name: chatTemplates.name })
      return updated.length > 0 ? { outcome: 'changed', eventIds: [] } : { outcome: 'unknown' }
    }
  }
}

/** The business account whose templates an account makes and deletes. */
function businessAccountOf (account: UsableChatAccount): string {
  if (account.businessAccountId === null) {
    throw new DomainError('CHAT_ACCOUNT_NO_BUSINESS_ID', 'The chat account has no businessAccountId: it has no templates')
  }
  return account.businessAccountId
}

/** Creating and deleting templates: the platform first, then the stored rows. */
export function templatesService (options: { db: DbOrTx, config: Config, client: ChatClient }) {
  const { client } = options
  const repository = chatTemplatesRepository(options)

  return {
    async list (account: UsableChatAccount, status: TemplateStatus | 'all', page: { limit: number, offset: number }): Promise<StoredTemplate[]> {
      return repository.list(businessAccountOf(account), status, page)
    },

    /**
     * Refused (400) over any of the platform's rules before the platform is called; then submitted,
     * and stored with the status and category the platform answered. Its refusals are relayed as
     * every platform error is (README, Chat), the platform's own words in `details`.
     */
    async create (account: UsableChatAccount, input: Record<string, unknown>): Promise<StoredTemplate> {
      const businessAccountId = businessAccountOf(account)
      const template = checkTemplate(input)
      let created
      try {
        created = await client.createTemplate(businessAccountId, account.accessToken, { ...template })
      } catch (err) {
        throw platformFailure(err)
      }
      // The platform may answer with another category than the one asked for (it re-categorises).
      const status = TEMPLATE_STATUSES.find((candidate) => candidate === created.status) ?? 'PENDING'
      const category = TEMPLATE_CATEGORIES.find((candidate) => candidate === created.category) ?? template.category
      return repository.store({ businessAccountId, templateId: String(created.id), name: template.name, language: template.language, category, components: template.components, status })
    },

    /** Every language of `name`, on the platform and here; 404 when the platform has no template of that name. */
    async delete (account: UsableChatAccount, name: string): Promise<void> {
      const businessAccountId = businessAccountOf(account)
      // No template can have another name: the platform is not asked.
      if (!isTemplateName(name)) throw templateNotFound()
      try {
        await client.deleteTemplate(businessAccountId, account.accessToken, name)
      } catch (err) {
        if (err instanceof ChatPlatformError && err.code === 100 && err.subcode === TEMPLATE_NOT_FOUND_SUBCODE) {
          // Rows of a template deleted elsewhere would go on showing it.
          await repository.delete(businessAccountId, name)
          throw templateNotFound()
        }
        throw platformFailure(err)
      }
      await repository.delete(businessAccountId, name)
    }
  }
}

export type TemplatesService = ReturnType<typeof templatesService>
