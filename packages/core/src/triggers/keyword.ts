import { sql } from 'drizzle-orm'
import { textArray } from '../db/sql.ts'
import type { CancelOn, FlowControl } from '../db/schema/workflows.ts'
import { CHAT_MESSAGE_RECEIVED } from '../events/outbox.ts'
import { startRuns, type StartRunsInput } from '../runs/start.ts'
import type { EmitEventDeps } from './event.ts'
import { DEFAULT_ACCOUNT_ID } from '../chat/accounts.ts'
import type { InboundChatMessage } from '../chat/inbound.ts'
import { kindFields } from '../chat/conversations.ts'

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
// A keyword is a whole word: letters, digits or underscore may not touch it (any script).
const WORD = '[\\p{L}\\p{N}_]'

/**
 * The first of `keywords` the text matches (README, Triggers): case-insensitive,
 * whole words; `contains` anywhere, `startsWith` at the beginning, `exact` the whole text.
 * A tap on a button or list row also matches a keyword equal to its whole id (`tapId`), whatever
 * `match` says: ids are what a workflow offered, titles what the customer read.
 */
function matchKeyword (text: string, keywords: unknown, match: unknown = 'contains', tapId?: string): string | null {
  if (!Array.isArray(keywords)) return null
  const normalized = text.trim().replace(/\s+/g, ' ')
  const tap = tapId?.trim().toLowerCase()
  for (const keyword of keywords) {
    if (typeof keyword !== 'string' || keyword.trim() === '') continue
    if (tap !== undefined && keyword.trim().toLowerCase() === tap) return keyword
    const pattern = escapeRegExp(keyword.trim().replace(/\s+/g, ' '))
    const regexp = match === 'exact'
      ? new RegExp(`^${pattern}$`, 'iu')
      : match === 'startsWith'
        ? new RegExp(`^${pattern}(?!${WORD})`, 'iu')
        : new RegExp(`(?<!${WORD})${pattern}(?!${WORD})`, 'iu')
    if (regexp.test(normalized)) return keyword
  }
  return null
}

/**
 * What a customer message starts: the `chat.message.received` event for the
 * users who can use the receiving account, and their active KEYWORD workflows
 * whose keywords match it, all in one batch (chunked however many listen). Each
 * run is started with the idempotency key `chat:<wamid>`, so calling this again
 * for the same message (a delivery retried after a crash) starts nothing twice;
 * only the runs created by this call are returned. A message is not a request
 * that can be refused: beyond `eventFanoutMax` runs the oldest workflows start
 * and `skipped` counts the others. `keywordMatched`: a KEYWORD workflow matched, started now or
 * before (the assistant answers only when none did).
 */
export async function reactToInboundMessage (deps: EmitEventDeps, message: InboundChatMessage): Promise<{ eventRunIds: string[], keywordRunIds: string[], skipped: number, keywordMatched: boolean }> {
  if (message.userIds.length === 0) return { eventRunIds: [], keywordRunIds: [], skipped: 0, keywordMatched: false }
  const base = {
    phone: message.phone,
    ...(message.platformUserId !== null && { platformUserId: message.platformUserId }),
    ...(message.username !== null && { username: message.username }),
    contactId: message.contactId,
    name: message.name,
    text: message.text,
    type: message.type,
    messageId: message.messageId,
    wamid: message.wamid,
    conversationId: message.conversationId,
    ...(message.interactive !== undefined && { interactive: message.interactive }),
    ...(message.media !== undefined && { media: message.media }),
    ...kindFields(message.details)
  }

  const userIds = textArray(message.userIds)
  // Listeners and keyword candidates in one query; a KEYWORD workflow gets its owner's own
  // account for the receiving number (none means the owner uses the default account).
  const candidates = await deps.db.execute<{ id: string, userId: string, triggerType: 'EVENT' | 'KEYWORD', triggerConfig: Record<string, unknown>, accountId: string | null, runTags: string | null, flowControl: FlowControl | null, cancelOn: CancelOn[] | null }>(sql`
    select w.id, w.user_id as "userId", w.trigger_type as "triggerType", w.trigger_config as "triggerConfig", a.id as "accountId", w.run_tags as "runTags", w.flow_control as "flowControl", w.cancel_on as "cancelOn"
    from workflows w
    left join chat_accounts a on w.trigger_type = 'KEYWORD' and a.user_id = w.user_id and a.phone_number_id = ${message.phoneNumberId}
    where w.is_active and w.user_id = any(${userIds})
      and (w.trigger_type = 'KEYWORD' or (w.trigger_type = 'EVENT' and (w.trigger_config->>'eventName') = ${CHAT_MESSAGE_RECEIVED}))
    order by w.created_at, w.id`)

  const matched = candidates.flatMap((workflow): StartRunsInput['runs'] => {
    const target = { workflow: { id: workflow.id, userId: workflow.userId, triggerType: workflow.triggerType, runTags: workflow.runTags, flowControl: workflow.flowControl, cancelOn: workflow.cancelOn } }
    if (workflow.triggerType === 'EVENT') return [{ ...target, triggerData: { ...base, phoneNumberId: message.phoneNumberId } }]
    const keyword = matchKeyword(message.text, workflow.triggerConfig.keywords, workflow.triggerConfig.match, message.interactive?.id)
    return keyword === null ? [] : [{ ...target, triggerData: { ...base, accountId: workflow.accountId ?? DEFAULT_ACCOUNT_ID, keyword } }]
  })
  const runs = matched.slice(0, deps.eventFanoutMax)
  const started = await startRuns(deps, { runs, idempotencyKey: `chat:${message.wamid}` })
  const created = (triggerType: 'EVENT' | 'KEYWORD'): string[] =>
    started.flatMap((run, i) => run.created && runs[i]!.workflow.triggerType === triggerType ? [run.runId] : [])
  return {
    eventRunIds: created('EVENT'),
    keywordRunIds: created('KEYWORD'),
    skipped: matched.length - runs.length,
    keywordMatched: matched.some((run) => run.workflow.triggerType === 'KEYWORD')
  }
}
