import type { Queue } from 'bullmq'
import { connectionOf } from './connections.ts'

/**
 * The fair share of a worker's slots per owner (README, Quotas: Fair scheduling), for the run
 * queues (runs/admission.ts) and `event-deliveries`; the code sandbox keeps the same rule for its
 * threads (engine/sandbox/pool.ts). BullMQ's open-source edition has no per-group limits, so the
 * worker holds a job back (moves it to delayed) when it is not admitted, and its slot goes to the
 * next job.
 *
 * An owner's jobs may hold at most `share` of this worker's slots on the queue while other owners
 * use the queue too (another owner queued jobs on it in the last OWNER_RECENT_MS: `noteOwners`),
 * so that slots stay free for them when their jobs come; an owner alone on the queue may take
 * every slot, so one owner's backlog is not held back for nothing. Counted in this process, so it
 * holds on every worker without a shared counter. A held job is woken when a job of the same
 * owner ends on this worker, or else comes back on its own after a delay that grows with the
 * owner's held jobs here.
 */
export interface FairShareOptions {
  /** The queue's slots in this worker. */
  concurrency: number
  /** WORKER_USER_SHARE. */
  share: number
  /** Whether owners other than `userId` use the queue lately (`othersActive`). */
  othersActive: (userId: string) => Promise<boolean>
  /** Runs a held job now (promotes it); a job that is no longer delayed is left alone. */
  wake: (jobId: string) => Promise<void>
}

export type Admission =
  | { admitted: true, release: () => void }
  | { admitted: false, retryInMs: number }

/** How long an owner who queued jobs counts as using the queue (or the sandbox), for the others' fair share. */
export const OWNER_RECENT_MS = 5 * 60_000

/** Users whose answers a worker remembers at most. */
export const MAX_CACHED_USERS = 10_000
/** Held jobs per owner a worker remembers to wake; beyond, they come back on their own. */
const MAX_HELD_PER_USER = 1000
/** A held job comes back after this, times the owner's held jobs here (at most MAX_HOLD_MS). */
const HOLD_STEP_MS = 250
const MAX_HOLD_MS = 5000
/** How long whether others use the queue is trusted once asked, per owner. */
const OTHERS_TTL_MS = 250

/** The slots of `slots` one owner may hold while others use them: `share` of them, at least one. */
export const ownerCap = (slots: number, share: number): number => Math.max(1, Math.floor(share * slots))

/** The owners of the jobs just queued on `queue`, for the fair share (a sorted set: owner → when). */
export async function noteOwners (queue: Queue, userIds: Iterable<string>): Promise<void> {
  const now = Date.now()
  const members = [...new Set(userIds)].flatMap((userId) => [now, userId])
  if (members.length > 0) await connectionOf(queue).zadd(queue.toKey('owners'), ...members)
}

/** Whether an owner other than `userId` queued jobs on `queue` lately. */
async function othersActive (queue: Queue, userId: string): Promise<boolean> {
  const client = connectionOf(queue)
  const key = queue.toKey('owners')
  const since = Date.now() - OWNER_RECENT_MS
  await client.zremrangebyscore(key, '-inf', `(${since}`)
  const owners = await client.zrangebyscore(key, since, '+inf', 'LIMIT', 0, 2)
  return owners.some((owner: string) => owner !== userId)
}

/** Who else uses `queue`, and how its held jobs are woken: the fair share's options for a BullMQ queue. */
export const fairShareOn = (queue: Queue): Pick<FairShareOptions, 'othersActive' | 'wake'> => ({
  othersActive: async (userId) => await othersActive(queue, userId),
  wake: async (jobId) => { await (await queue.getJob(jobId))?.promote() }
})

export function createFairShare (options: FairShareOptions) {
  const cap = ownerCap(options.concurrency, options.share)
  const active = new Map<string, number>()
  const held = new Map<string, string[]>()
  const others = new Map<string, { active: boolean, until: number }>()

  async function othersActive (userId: string): Promise<boolean> {
    const hit = others.get(userId)
    if (hit !== undefined && hit.until > Date.now()) return hit.active
    const active = await options.othersActive(userId)
    if (others.size >= MAX_CACHED_USERS) others.clear()
    others.set(userId, { active, until: Date.now() + OTHERS_TTL_MS })
    return active
  }

  const adjust = (userId: string, by: number): void => {
    const count = (active.get(userId) ?? 0) + by
    if (count > 0) active.set(userId, count)
    else active.delete(userId)
  }

  return {
    /**
     * Whether the job `jobId` of `userId` may take one of this worker's slots now: within the
     * owner's share, and admitted by `gate` too when the caller has a rule of its own (a quota).
     * Admitted: `release` when the job is done here. Held: the caller delays the job by `retryInMs`.
     */
    async admit (userId: string, jobId: string, gate?: () => Promise<boolean>): Promise<Admission> {
      // Counted before the checks, so that the owner's jobs starting at the same time see each other.
      adjust(userId, 1)
      let over: boolean
      try {
        over = (active.get(userId)! > cap && await othersActive(userId)) || (gate !== undefined && !await gate())
      } catch (err) {
        adjust(userId, -1)
        throw err
      }
      if (over) {
        adjust(userId, -1)
        const jobs = held.get(userId) ?? []
        if (jobs.length < MAX_HELD_PER_USER && !jobs.includes(jobId)) jobs.push(jobId)
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
