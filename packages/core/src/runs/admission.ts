import type { Queue } from 'bullmq'
import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { connectionOf } from '../queues/connections.ts'
import { effectiveQuotas, type Quotas } from '../users/quotas.ts'

/**
 * Which runs a worker takes on one of its run queues, so that one user cannot starve the others
 * (README, Quotas): fair scheduling and the in-flight quota. BullMQ's open-source edition has no
 * per-group limits, so the worker holds a job back (moves it to delayed) when it is not admitted,
 * and its slot goes to the next job.
 *
 * - Fair share: a user's runs may hold at most WORKER_USER_SHARE of this worker's slots on the
 *   queue while other users use the queue too (another user queued runs on it in the last
 *   OWNER_RECENT_MS: `noteOwners`), so that slots stay free for them when their runs come; a
 *   user alone on the queue may take every slot, so one user's backlog is not held back for
 *   nothing. Counted in this process, so it holds on every worker without a shared counter.
 * - In-flight quota (`runsInFlight`, when set): the user's RUNNING runs across all workers,
 *   counted in Postgres (runs_user_active_idx). Concurrent admissions may pass it by a few.
 *
 * A held job is woken when a run of the same user ends on this worker, or else comes back on its
 * own after a delay that grows with the user's held jobs here.
 */
export interface RunAdmissionOptions {
  db: DbOrTx
  /** The queue's slots in this worker (WORKER_CONCURRENCY). */
  concurrency: number
  /** WORKER_USER_SHARE. */
  share: number
  /** The installation's quotas (USER_QUOTA_*). */
  quotas: Quotas
  /** Whether users other than `userId` use the queue lately (`othersActive`). */
  othersActive: (userId: string) => Promise<boolean>
  /** Runs a held job now (promotes it); a job that is no longer delayed is left alone. */
  wake: (jobId: string) => Promise<void>
}

export type Admission =
  | { admitted: true, release: () => void }
  | { admitted: false, retryInMs: number }

/** How long a user's quotas are trusted once read: an admin's change applies within this. */
const QUOTAS_TTL_MS = 5000
/** Users whose quotas a worker remembers at most. */
const MAX_CACHED_USERS = 10_000
/** Held jobs per user a worker remembers to wake; beyond, they come back on their own. */
const MAX_HELD_PER_USER = 1000
/** A held job comes back after this, times the user's held jobs here (at most MAX_HOLD_MS). */
const HOLD_STEP_MS = 250
const MAX_HOLD_MS = 5000
/** How long whether others use the queue is trusted once asked, per user. */
const OTHERS_TTL_MS = 250

/** How long a user who queued runs counts as using the queue, for the others' fair share. */
const OWNER_RECENT_MS = 5 * 60_000

/** The owners of the runs just queued on `queue`, for the fair share (a sorted set: owner → when). */
export async function noteOwners (queue: Queue, userIds: Iterable<string>): Promise<void> {
  const now = Date.now()
  const members = [...new Set(userIds)].flatMap((userId) => [now, userId])
  if (members.length > 0) await connectionOf(queue).zadd(queue.toKey('owners'), ...members)
}

/** Whether a user other than `userId` queued runs on `queue` lately. */
export async function othersActive (queue: Queue, userId: string): Promise<boolean> {
  const client = connectionOf(queue)
  const key = queue.toKey('owners')
  const since = Date.now() - OWNER_RECENT_MS
  await client.zremrangebyscore(key, '-inf', `(${since}`)
  const owners = await client.zrangebyscore(key, since, '+inf', 'LIMIT', 0, 2)
  return owners.some((owner: string) => owner !== userId)
}

export function createRunAdmission (options: RunAdmissionOptions) {
  const cap = Math.max(1, Math.floor(options.share * options.concurrency))
  const active = new Map<string, number>()
  const held = new Map<string, string[]>()
  const cached = new Map<string, { quotas: Quotas, until: number }>()
  const others = new Map<string, { active: boolean, until: number }>()

  async function othersActive (userId: string): Promise<boolean> {
    const hit = others.get(userId)
    if (hit !== undefined && hit.until > Date.now()) return hit.active
    const active = await options.othersActive(userId)
    if (others.size >= MAX_CACHED_USERS) others.clear()
    others.set(userId, { active, until: Date.now() + OTHERS_TTL_MS })
    return active
  }

  async function quotasOf (userId: string): Promise<Quotas> {
    const hit = cached.get(userId)
    if (hit !== undefined && hit.until > Date.now()) return hit.quotas
    const [row] = await options.db.execute<{ quotas: unknown }>(sql`select quotas from users where id = ${userId}`)
    const quotas = effectiveQuotas(options.quotas, row?.quotas)
    if (cached.size >= MAX_CACHED_USERS) cached.clear()
    cached.set(userId, { quotas, until: Date.now() + QUOTAS_TTL_MS })
    return quotas
  }

  async function running (userId: string): Promise<number> {
    const [row] = await options.db.execute<{ count: number }>(sql`select count(*)::int as count from runs where user_id = ${userId} and status = 'RUNNING'`)
    return row?.count ?? 0
  }

  const adjust = (userId: string, by: number): void => {
    const count = (active.get(userId) ?? 0) + by
    if (count > 0) active.set(userId, count)
    else active.delete(userId)
  }

  async function overLimits (userId: string, mine: number): Promise<boolean> {
    if (mine > cap && await othersActive(userId)) return true
    const { runsInFlight } = await quotasOf(userId)
    return runsInFlight > 0 && await running(userId) >= runsInFlight
  }

  return {
    /**
     * Whether the run job `jobId` of `userId` may execute now. Admitted: `release` when the run
     * is done here. Held: the caller delays the job by `retryInMs`.
     */
    async admit (userId: string, jobId: string): Promise<Admission> {
      // Counted before the checks, so that the user's jobs starting at the same time see each other.
      adjust(userId, 1)
      let over: boolean
      try {
        over = await overLimits(userId, active.get(userId)!)
      } catch (err) {
        adjust(userId, -1)
        throw err
      }
      if (over) {
        adjust(userId, -1)
        const jobs = held.get(userId) ?? []
        if (jobs.length < MAX_HELD_PER_USER) jobs.push(jobId)
        held.set(userId, jobs)
        return { admitted: false, retryInMs: Math.min(MAX_HOLD_MS, HOLD_STEP_MS * jobs.length) }
      }
      const waiting = held.get(userId)
      if (waiting?.includes(jobId) === true) {
        waiting.splice(waiting.indexOf(jobId), 1)
        if (waiting.length === 0) held.delete(userId)
      }
      let released = false
      return {
        admitted: true,
        release: () => {
          if (released) return
          released = true
          adjust(userId, -1)
          const next = held.get(userId)?.shift()
          if (held.get(userId)?.length === 0) held.delete(userId)
          if (next !== undefined) options.wake(next).catch(() => {})
        }
      }
    }
  }
}

export type RunAdmission = ReturnType<typeof createRunAdmission>
