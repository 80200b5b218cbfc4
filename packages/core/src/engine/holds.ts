import type { Db } from '../db/client.ts'
import type { Logger } from '../logger.ts'
import type { Queues } from '../queues/catalog.ts'
import { wakeWaitingRuns } from './slots.ts'
import { releaseKey, wakeKeyLine, type FlowHold } from './flow-control.ts'
import { HELD_RECHECK_MS } from '../runs/flow-control.ts'
import { redis } from './execution.ts'

/** Holds a job until `until` (ms since the epoch): BullMQ's `moveToDelayed`, then `DelayedError`. */
export type Hold = (until: number) => Promise<void>

/**
 * A wake that finds its run RUNNING tries again after this: usually the parent is writing the
 * suspension its children ended before (they start before it is written), a few ms away.
 */
const WAKE_RETRY_MS = 25

export interface HoldOptions {
  db: Db
  queues: Queues
  logger: Logger
}

/**
 * Jobs that cannot execute their run now and are held (engine/README.md, "Claims"): a run waiting
 * for a slot of its workflow's maxConcurrentRuns (slots.ts) or held by its flow control
 * (flow-control.ts), and a wake that found its run driven by another execution.
 */
export function createHolds ({ db, queues, logger }: HoldOptions) {
  /**
   * Gives the slots of a workflow with a maxConcurrentRuns that are free to its oldest waiting
   * runs. A failure is logged, not thrown: the reconciler's next pass wakes them.
   */
  async function wakeWaiting (workflowId: string): Promise<void> {
    try {
      await wakeWaitingRuns({ db, queues }, workflowId)
    } catch (err) {
      logger.warn({ err, workflowId }, 'runs waiting for a slot not woken: the reconciler will')
    }
  }

  /** Gives the free slots of a concurrency key to its first waiting runs; a failure is logged, as above. */
  async function wakeKey (workflowId: string, key: string): Promise<void> {
    try {
      await wakeKeyLine({ db, queues }, workflowId, key)
    } catch (err) {
      logger.warn({ err, workflowId, key }, 'runs waiting for a slot of a key not woken: the reconciler will')
    }
  }

  return {
    wakeWaiting,

    /**
     * The run waits: its job is held first (until the time its flow control gave, else until a wake),
     * then the slots are checked again, so that one freed while this run was refused (its end's wake
     * found the job still running) goes to the first waiting run, perhaps this one.
     */
    async forStart (held: { workflowId: string, flow?: FlowHold }, hold: Hold | undefined): Promise<'HELD'> {
      const { workflowId, flow } = held
      if (hold !== undefined) await redis(hold(flow?.until ?? Date.now() + HELD_RECHECK_MS))
      if (flow === undefined) await wakeWaiting(workflowId)
      else if (flow.waitingFor === 'concurrency') await wakeKey(workflowId, flow.key)
      return 'HELD'
    },

    /** A run that held a slot of its concurrency key ended: the key's next runs are woken. A failure is logged: the reconciler wakes them. */
    async freeKey (runId: string): Promise<void> {
      try {
        await releaseKey({ db, queues }, runId)
      } catch (err) {
        logger.warn({ err, runId }, 'runs waiting for a slot of a key not woken: the reconciler will')
      }
    },

    /** A wake found its run RUNNING: it runs again shortly, once that execution suspended or ended. */
    async wakeLater (hold: Hold | undefined): Promise<'HELD' | 'SKIPPED'> {
      if (hold === undefined) return 'SKIPPED'
      await redis(hold(Date.now() + WAKE_RETRY_MS))
      return 'HELD'
    }
  }
}
