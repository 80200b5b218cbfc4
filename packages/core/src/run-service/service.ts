import { wakeTurn } from '../assistant/turn-jobs.ts'
import { runWaits, type Decided, type Decider, type PendingApproval } from '../engine/waits.ts'
import { wakeRun } from '../engine/children.ts'
import { wakeWaitingRuns } from '../engine/slots.ts'
import { releaseKey, wakeFlowHeldRuns } from '../engine/flow-control.ts'
import { DomainError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import { resumeJobId, runJobId, type Queues } from '../queues/catalog.ts'
import { createGroupStarter, type RequestStart } from '../runs/group-start.ts'
import { runsRepository, type RunWithLogs } from '../runs/repository.ts'
import type { DbOrTx } from '../db/client.ts'
import type { Deadline } from '../timeout.ts'
import { dispatchEvents } from '../triggers/event.ts'
import { planReplay, replayRuns, type Replayed, type ReplayRunInput, type ReplayRunsInput } from '../triggers/replay.ts'
import type { Viewer } from '../users/viewer.ts'

/** Where a call reports what it left to the reconciler: the request's logger. */
type CallLog = Pick<Logger, 'warn' | 'debug'>

export interface RunServiceOptions {
  db: DbOrTx
  queues: Queues
  logger: Pick<Logger, 'warn'>
  /** EVENT_FANOUT_MAX: the most listeners an event a cancel writes starts. */
  eventFanoutMax: number
}

/**
 * What the api does to runs (README, Runs): start, cancel, replay, decide an approval, wake the
 * runs waiting for a slot. Each writes first and then does the queue work best effort: what a
 * lost Redis call leaves undone, the reconciler does (engine/README.md).
 */
export function runService ({ db, queues, logger, eventFanoutMax }: RunServiceOptions) {
  const repository = runsRepository(db)
  const waits = runWaits(db)
  const deps = { db, queues, logger }
  const starter = createGroupStarter(deps)

  return {
    list: repository.list,
    get: repository.get,
    perMinute: repository.perMinute,
    /** What runs came to (status, a success's node outputs, a failure's error), unscoped: for runs the caller started itself (the MCP server's tool calls). */
    outcomes: repository.outcomes,
    approvals: async (viewer: Viewer, limit: number, offset: number): Promise<PendingApproval[]> => await waits.pending(viewer, limit, offset),

    /**
     * Starts a run for a request that is answered by `deadline`: resolves once the run is
     * committed (its job is queued after), or fails SERVICE_UNAVAILABLE (README, Guarantees).
     * Starts that arrive together share one transaction (group commit, `createGroupStarter`).
     */
    start: async (input: Omit<RequestStart, 'deadline'>, deadline: Deadline): Promise<{ runId: string }> => await starter.start({ ...input, deadline }),

    /** Replays a finished run (POST /runs/:id/retry), answered by `deadline` like a start. */
    async retry ({ requestId, ...input }: ReplayRunInput & { requestId: string }, deadline: Deadline): Promise<Replayed> {
      const replay = await deadline.race(planReplay(db, input), 'find the run')
      const { runId } = await starter.start({ ...replay, requestId, deadline })
      return { runId, retriedFrom: replay.retriedFrom }
    },

    /** Replays the runs of a workflow in a time range (POST /workflows/:id/runs/retry), like an event's fan-out: no request deadline. */
    retryMany: async (input: ReplayRunsInput): Promise<{ runs: Replayed[], more: boolean }> => await replayRuns(deps, input),

    /** The cancelled run, `finished` when it had already ended, or null when the viewer has no such run. */
    async cancel (id: string, viewer: Viewer, log: CallLog): Promise<RunWithLogs | 'finished' | null> {
      const outcome = await repository.cancel(id, viewer)
      if (outcome === null || outcome === 'finished') return outcome
      // Committed with the cancel (the outbox): not awaited, and what this does not dispatch the reconciler does.
      if (outcome.eventIds.length > 0) {
        dispatchEvents({ ...deps, eventFanoutMax }, { ids: outcome.eventIds })
          .catch((err: unknown) => { log.warn({ err, runId: id }, 'events of a cancelled run not dispatched yet: the reconciler will') })
      }
      // A cancelled child: the node that waits for it sees it now, not at its next recheck.
      if (outcome.parent !== null) {
        const { runId: parentRunId, queue } = outcome.parent
        wakeRun(queues, queue, parentRunId).catch((err: unknown) => { log.warn({ err, runId: parentRunId }, 'parent of a cancelled run not woken: its recheck will') })
      }
      // A cancelled tool run: its assistant turn answers the model now, not at its time limit.
      if (outcome.assistantTurnId !== null) {
        const turnId = outcome.assistantTurnId
        wakeTurn(deps, turnId).catch((err: unknown) => { log.warn({ err, runId: id, turnId }, 'assistant turn of a cancelled tool run not woken: its recheck will') })
      }
      // A run that held a slot of its concurrency key gives it to the key's next run now (README, Flow control).
      releaseKey(deps, id).catch((err: unknown) => { log.warn({ err, runId: id }, 'runs waiting for a slot of a key not woken: the reconciler will') })
      // Best effort, not awaited: a removed job saves the worker a pointless pick-up; a job
      // that is running (locked, so not removable) finds the run CANCELLED and stops by itself.
      const queue = queues[outcome.queue]
      const jobIds = [runJobId(id), ...(outcome.currentNodeId === null ? [] : [resumeJobId(id, outcome.currentNodeId)])]
      for (const jobId of jobIds) {
        queue.remove(jobId).catch((err: unknown) => { log.debug({ err, runId: id, jobId }, 'job of a cancelled run not removed') })
      }
      return outcome.run
    },

    /**
     * Decides the approval a run waits for at a node (as a viewer, or with the public token) and
     * wakes the run: 404 for a run the viewer cannot see or an unknown token, 409 when the run does
     * not wait at that node now (README, Flow).
     */
    async resume (decider: Decider, decision: Decided['decision'], data: unknown, log: CallLog): Promise<Decided> {
      const decided = await waits.decide(decider, decision, data)
      if (decided === 'missing') {
        throw 'token' in decider ? new DomainError('RESUME_TOKEN_NOT_FOUND', 'Resume token not found') : new DomainError('RUN_NOT_FOUND', 'Run not found')
      }
      if (decided === 'not-waiting') throw new DomainError('RUN_NOT_WAITING', 'Run is not waiting for this node')
      // The decision is committed: a lost wake leaves the run to its timeout's job, which reads it.
      const queue = queues[decided.queue]
      try {
        await wakeRun(queues, decided.queue, decided.runId)
        await queue.remove(resumeJobId(decided.runId, decided.nodeId))
      } catch (err) {
        log.warn({ err, runId: decided.runId }, 'decided run not woken now: its timeout job will resume it')
      }
      return decided
    },

    /**
     * After a change of the workflow's maxConcurrentRuns or flowControl: its runs waiting for a slot
     * that is now free start, and the runs its flow control held are gated again. Not awaited; a
     * failure is logged and the reconciler wakes them.
     */
    wake (workflowId: string, log: CallLog): void {
      Promise.all([wakeWaitingRuns({ db, queues }, workflowId), wakeFlowHeldRuns({ db, queues }, workflowId)])
        .catch((err: unknown) => { log.warn({ err, workflowId }, 'runs waiting for a slot not woken: the reconciler will') })
    },

    /** Waits at most `ms` for the jobs of runs already committed (a closing api): the reconciler queues the rest. */
    drain: async (ms: number): Promise<void> => { await starter.drain(ms) }
  }
}

export type RunService = ReturnType<typeof runService>
