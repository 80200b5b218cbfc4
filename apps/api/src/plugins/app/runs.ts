import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { resumeJobId, runJobId } from '@switchboard/core/queues'
import { runWaits, wakeRun, wakeWaitingRuns, type Decided, type PendingApproval } from '@switchboard/core/engine'
import { createGroupStarter, runsRepository, type RequestStart } from '@switchboard/core/runs'
import { DomainError } from '@switchboard/core/errors'
import type { Deadline } from '@switchboard/core/timeout'
import { dispatchEvents, planReplay, replayRuns } from '@switchboard/core/triggers'

type RunsRepository = ReturnType<typeof runsRepository>
type Viewer = Parameters<RunsRepository['get']>[1]
type RunWithLogs = NonNullable<Awaited<ReturnType<RunsRepository['get']>>>

interface Runs {
  list: RunsRepository['list']
  get: RunsRepository['get']
  perMinute: RunsRepository['perMinute']
  /**
   * Starts a run for a request that is answered by `deadline`: resolves once the run is
   * committed (its job is queued after), or fails SERVICE_UNAVAILABLE (README, Guarantees).
   * Starts that arrive together share one transaction (group commit, `createGroupStarter`).
   */
  start: (input: Omit<RequestStart, 'deadline'>, deadline: Deadline) => Promise<{ runId: string }>
  /** The cancelled run, `finished` when it had already ended, or null when the viewer has no such run. */
  cancel: (id: string, viewer: Viewer, log: FastifyBaseLogger) => Promise<RunWithLogs | 'finished' | null>
  /** Replays a finished run (POST /runs/:id/retry), answered by `deadline` like a start. */
  retry: (input: Parameters<typeof planReplay>[1] & { requestId: string }, deadline: Deadline) => Promise<{ runId: string, retriedFrom: string }>
  /** Replays the runs of a workflow in a time range (POST /workflows/:id/runs/retry), like an event's fan-out: no request deadline. */
  retryMany: (input: Parameters<typeof replayRuns>[1]) => ReturnType<typeof replayRuns>
  /**
   * After a change of the workflow's maxConcurrentRuns: its runs waiting for a slot that is now
   * free start. Not awaited by the caller; a failure is logged and the reconciler wakes them.
   */
  wake: (workflowId: string, log: FastifyBaseLogger) => void
  /**
   * Decides the approval a run waits for at a node (as `viewer`, or with the public `token`) and
   * wakes the run: 404 for a run the viewer cannot see or an unknown token, 409 when the run does
   * not wait at that node now (README, Flow).
   */
  resume: (decider: Parameters<ReturnType<typeof runWaits>['decide']>[0], decision: Decided['decision'], data: unknown, log: FastifyBaseLogger) => Promise<Decided>
  /** The approvals the viewer may decide, oldest first. */
  approvals: (viewer: Viewer, limit: number, offset: number) => Promise<PendingApproval[]>
}

/** What a closing api waits at most for the jobs of runs it committed: the reconciler queues the rest. */
const DRAIN_MS = 2000

function createRuns (fastify: FastifyInstance): Runs {
  const { db, queues } = fastify
  const repository = runsRepository(db)
  const waits = runWaits(db)
  const deps = { db, queues, logger: fastify.log }
  const starter = createGroupStarter(deps)
  fastify.addHook('onClose', async () => { await starter.drain(DRAIN_MS) })
  return {
    list: repository.list,
    get: repository.get,
    perMinute: repository.perMinute,
    start: async (input, deadline) => await starter.start({ ...input, deadline }),
    async retry ({ requestId, ...input }, deadline) {
      const replay = await deadline.race(planReplay(db, input), 'find the run')
      const { runId } = await starter.start({ ...replay, requestId, deadline })
      return { runId, retriedFrom: replay.retriedFrom }
    },
    retryMany: async (input) => await replayRuns(deps, input),

    async cancel (id, viewer, log) {
      const outcome = await repository.cancel(id, viewer)
      if (outcome === null || outcome === 'finished') return outcome
      // Committed with the cancel (the outbox): not awaited, and what this does not dispatch the reconciler does.
      if (outcome.eventIds.length > 0) {
        dispatchEvents({ ...deps, eventFanoutMax: fastify.config.limits.eventFanoutMax }, { ids: outcome.eventIds })
          .catch((err: unknown) => { log.warn({ err, runId: id }, 'events of a cancelled run not dispatched yet: the reconciler will') })
      }
      // A cancelled child: the node that waits for it sees it now, not at its next recheck.
      if (outcome.parent !== null) {
        const { runId: parentRunId, queue } = outcome.parent
        wakeRun(queues, queue, parentRunId).catch((err: unknown) => { log.warn({ err, runId: parentRunId }, 'parent of a cancelled run not woken: its recheck will') })
      }
      // Best effort, not awaited: a removed job saves the worker a pointless pick-up; a job
      // that is running (locked, so not removable) finds the run CANCELLED and stops by itself.
      const queue = queues[outcome.queue]
      const jobIds = [runJobId(id), ...(outcome.currentNodeId === null ? [] : [resumeJobId(id, outcome.currentNodeId)])]
      for (const jobId of jobIds) {
        queue.remove(jobId).catch((err: unknown) => { log.debug({ err, runId: id, jobId }, 'job of a cancelled run not removed') })
      }
      return outcome.run
    },

    async resume (decider, decision, data, log) {
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

    approvals: async (viewer, limit, offset) => await waits.pending(viewer, limit, offset),

    wake (workflowId, log) {
      wakeWaitingRuns({ db, queues }, workflowId).catch((err: unknown) => { log.warn({ err, workflowId }, 'runs waiting for a slot not woken: the reconciler will') })
    }
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    runs: Runs
  }
}

/** Runs: starting one, reading, counting, cancelling and replaying them. */
async function runs (fastify: FastifyInstance): Promise<void> {
  fastify.decorate('runs', createRuns(fastify))
}

export default fp(runs, { name: 'runs', dependencies: ['context'] })
