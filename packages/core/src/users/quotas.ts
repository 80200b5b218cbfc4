import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { DomainError } from '../errors.ts'

/**
 * Per-user quotas (README, Quotas): what one user's runs and saved things may take of a shared
 * installation. The installation's defaults come from the configuration (USER_QUOTA_*); an
 * admin may set any of them for one user (`PATCH /api/users/:id {quotas}`, stored in
 * `users.quotas`), and `null` there gives the default back.
 */
export const QUOTA_NAMES = ['runsPerMinute', 'runsInFlight', 'waitingRuns', 'workflows', 'credentials', 'cronWorkflows', 'eventListeners', 'knowledgeSources'] as const

export type QuotaName = typeof QUOTA_NAMES[number]

export type Quotas = Record<QuotaName, number>

/** The largest value a quota takes. */
export const MAX_QUOTA = 100_000_000

/** A user's quotas: the defaults, with their own settings over them (anything but a number in range is ignored). */
export function effectiveQuotas (defaults: Quotas, overrides: unknown): Quotas {
  const quotas = { ...defaults }
  if (overrides === null || typeof overrides !== 'object') return quotas
  for (const name of QUOTA_NAMES) {
    const value = (overrides as Record<string, unknown>)[name]
    if (Number.isInteger(value) && (value as number) >= 0 && (value as number) <= MAX_QUOTA) quotas[name] = value as number
  }
  return quotas
}

/** The saved things a quota counts, with what a refusal says. */
const SAVED: Record<'workflows' | 'credentials' | 'cronWorkflows' | 'eventListeners' | 'knowledgeSources', { what: string, count: (userId: string) => ReturnType<typeof sql> }> = {
  workflows: { what: 'workflows', count: (userId) => sql`select count(*)::int from workflows where user_id = ${userId}` },
  credentials: { what: 'credentials', count: (userId) => sql`select count(*)::int from credentials where user_id = ${userId}` },
  cronWorkflows: {
    what: 'active CRON workflows',
    count: (userId) => sql`select count(*)::int from workflows where user_id = ${userId} and is_active and trigger_type = 'CRON'`
  },
  eventListeners: {
    what: 'active EVENT workflows',
    count: (userId) => sql`select count(*)::int from workflows where user_id = ${userId} and is_active and trigger_type = 'EVENT'`
  },
  knowledgeSources: { what: 'knowledge sources', count: (userId) => sql`select count(*)::int from knowledge_sources where user_id = ${userId}` }
}

export type SavedQuota = keyof typeof SAVED

/**
 * Inside the transaction that just saved something of `userId`: refuses (400, rolled back)
 * when the user now holds more of each of `names` than their quota allows. The user's row is
 * locked first, so two saves of one user take turns and cannot both pass the last place. The
 * lock is FOR NO KEY UPDATE: the insert's foreign key already holds FOR KEY SHARE on the row,
 * which FOR UPDATE conflicts with, so two saves each waited for the other's (a deadlock, 500).
 * Called only by saves that add to a count, so a user already over a quota an admin lowered
 * can still edit, deactivate and delete.
 */
export async function checkSavedQuotas (tx: DbOrTx, userId: string, defaults: Quotas, names: readonly SavedQuota[]): Promise<void> {
  if (names.length === 0) return
  const [user] = await tx.execute<{ quotas: unknown }>(sql`select quotas from users where id = ${userId} for no key update`)
  const quotas = effectiveQuotas(defaults, user?.quotas)
  for (const name of names) {
    const [row] = await tx.execute<{ count: number }>(SAVED[name].count(userId))
    if ((row?.count ?? 0) > quotas[name]) throw new DomainError('QUOTA_EXCEEDED', `Too many ${SAVED[name].what} (max ${quotas[name]})`)
  }
}
