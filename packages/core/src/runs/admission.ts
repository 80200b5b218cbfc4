import { sql } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { createFairShare, MAX_CACHED_USERS, type Admission, type FairShareOptions } from '../queues/fair-share.ts'
import { effectiveQuotas, type Quotas } from '../users/quotas.ts'

/**
 * Which runs a worker takes on one of its run queues, so that one user cannot starve the others
 * (README, Quotas): the fair share of this worker's slots (queues/fair-share.ts) and the in-flight
 * quota (`runsInFlight`, when set): the owner's runs RUNNING across all workers, plus the runs
 * admitted and not claimed yet (`run_admissions`), counted and reserved under a lock of the owner,
 * so that neither a burst of jobs on one worker nor admissions on several workers at once pass it.
 */
export interface RunAdmissionOptions extends FairShareOptions {
  db: Db
  /** The installation's quotas (USER_QUOTA_*). */
  quotas: Quotas
}

export type RunAdmission = ReturnType<typeof createRunAdmission>

/**
 * Admitted: `release` once the job is done with the run, saying whether the run may go on without
 * another admission (the job is retried after a store error, or taken over after its lock was lost).
 */
type RunAdmitted = { admitted: true, release: (goesOn: boolean) => Promise<void> } | Extract<Admission, { admitted: false }>

/** How long a user's quotas are trusted once read: an admin's change applies within this. */
const QUOTAS_TTL_MS = 5000

/** An admission row counts while its run has not been claimed since (README, Quotas). */
const reserving = sql`r.id = a.run_id and r.claim = a.claim and r.status in ('PENDING', 'WAITING')`

export function createRunAdmission (options: RunAdmissionOptions) {
  const fairShare = createFairShare(options)
  const cached = new Map<string, { quotas: Quotas, until: number }>()

  async function quotasOf (userId: string): Promise<Quotas> {
    const hit = cached.get(userId)
    if (hit !== undefined && hit.until > Date.now()) return hit.quotas
    const [row] = await options.db.execute<{ quotas: unknown }>(sql`select quotas from users where id = ${userId}`)
    const quotas = effectiveQuotas(options.quotas, row?.quotas)
    if (cached.size >= MAX_CACHED_USERS) cached.clear()
    cached.set(userId, { quotas, until: Date.now() + QUOTAS_TTL_MS })
    return quotas
  }

  /**
   * Whether `runId` fits in its owner's in-flight quota, reserving its place when it does. The
   * count is a statement after the owner's lock: its snapshot sees every admission before it. A
   * run that is gone is admitted (its execution finds nothing to do).
   */
  async function reserve (userId: string, runId: string, quota: number): Promise<boolean> {
    return await options.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`runs-in-flight:${userId}`}, 0))`)
      const [row] = await tx.execute<{ admitted: boolean }>(sql`
        with cleaned as (
          delete from run_admissions a using runs r
          where a.user_id = ${userId} and a.run_id <> ${runId} and r.id = a.run_id and not (${reserving})
        ), counted as (
          select (select count(*) from runs where user_id = ${userId} and status = 'RUNNING' and id <> ${runId})
            + (select count(*) from run_admissions a join runs r on ${reserving} where a.user_id = ${userId} and a.run_id <> ${runId}) as in_flight
        ), reserved as (
          insert into run_admissions (run_id, user_id, claim)
          select r.id, ${userId}, r.claim from runs r, counted where r.id = ${runId} and counted.in_flight < ${quota}
          on conflict (run_id) do update set claim = excluded.claim
        )
        select in_flight < ${quota} as admitted from counted`)
      return row?.admitted === true
    })
  }

  return {
    /**
     * Whether the run job `jobId` of `userId`'s run `runId` may execute now. Admitted: `release`
     * when the job is done with it. Held: the caller delays the job by `retryInMs`.
     */
    async admit (userId: string, jobId: string, runId: string): Promise<RunAdmitted> {
      let reserved = false
      const admission = await fairShare.admit(userId, jobId, async () => {
        const { runsInFlight } = await quotasOf(userId)
        if (runsInFlight === 0) return true
        reserved = await reserve(userId, runId, runsInFlight)
        return reserved
      })
      if (!admission.admitted) return admission
      return {
        admitted: true,
        release: async (goesOn) => {
          // A run left PENDING or WAITING under the same claim (held for a slot of its workflow, a resume
          // that found nothing to do) would count until it is next claimed. A row whose delete fails counts
          // until then, as if the run were executing: the quota is never passed for it.
          if (reserved && !goesOn) await options.db.execute(sql`delete from run_admissions where run_id = ${runId}`).catch(() => {})
          admission.release()
        }
      }
    }
  }
}
