import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { resumeJobId, runJobId } from '@switchboard/core/queues'
import { createGroupStarter, runsRepository, wakeWaitingRuns, type startRun } from '@switchboard/core/runs'
import type { Deadline } from '@switchboard/core/timeout'
import { replayRun, replayRuns } from '@switchboard/core/triggers'

type RunsRepository = ReturnType<typeof runsRepository>
type Viewer = Parameters<RunsRepository['get']>[1]
type RunWithLogs = NonNullable<Awaited<ReturnType<RunsRepository['get']>>>

interface Runs {
  list: RunsRepository['list']
  get: RunsRepository['get']
  perMinute: RunsRepository['perMinute']
  /**
   * Starts a run for a request that is answered by `deadline`: the run is stored and queued
   * before it, or the start fails SERVICE_UNAVAILABLE and no run is left behind. Starts that
   * arrive together are written and queued together (group commit, `createGroupStarter`).
   */
  start: (input: Omit<Parameters<typeof startRun>[1], 'limits'>, deadline: Deadline) => ReturnType<typeof startRun>
  /** The cancelled run, `finished` when it had already ended, or null when the viewer has no such run. */
  cancel: (id: string, viewer: Viewer, log: FastifyBaseLogger) => Promise<RunWithLogs | 'finished' | null>
  /** Replays a finished run (POST /runs/:id/retry), answered by `deadline` like a start. */
  retry: (input: Omit<Parameters<typeof replayRun>[1], 'limits'>, deadline: Deadline) => ReturnType<typeof replayRun>
  /** Replays the runs of a workflow in a time range (POST /workflows/:id/runs/retry), like an event's fan-out: no request deadline. */
  retryMany: (input: Parameters<typeof replayRuns>[1]) => ReturnType<typeof replayRuns>
  /**
   * After a change of the workflow's maxConcurrentRuns: its runs waiting for a slot that is now
   * free start. Not awaited by the caller; a failure is logged and the reconciler wakes them.
   */
  wake: (workflowId: string, log: FastifyBaseLogger) => void
}

/** Clocks of the api and of Postgres (whose time stamps a run's creation) may differ this much. */
const CLOCK_SKEW_MS = 500

function createRuns (fastify: FastifyInstance): Runs {
  const { db, queues, config } = fastify
  const repository = runsRepository(db)
  const { requestDeadlineMs } = config.timeouts
  const deps = { db, queues, logger: fastify.log }
  const starter = createGroupStarter(deps)
  // A run the request could not confirm is taken back until the reconciler would queue it:
  // RECONCILER_GRACE_MS after the request arrived (its run was created later still).
  const limitsOf = (deadline: Deadline) => ({ deadline, settleBy: deadline.at - requestDeadlineMs + config.reconciler.graceMs - CLOCK_SKEW_MS })
  return {
    list: repository.list,
    get: repository.get,
    perMinute: repository.perMinute,
    start: async (input, deadline) => await starter.start({ ...input, limits: limitsOf(deadline) }),
    retry: async (input, deadline) => await replayRun(deps, { ...input, limits: limitsOf(deadline) }),
    retryMany: async (input) => await replayRuns(deps, input),

    async cancel (id, viewer, log) {
      const outcome = await repository.cancel(id, viewer)
      if (outcome === null || outcome === 'finished') return outcome
      // Best effort, not awaited: a removed job saves the worker a pointless pick-up; a job
      // that is running (locked, so not removable) finds the run CANCELLED and stops by itself.
      const queue = queues[outcome.queue]
      const jobIds = [runJobId(id), ...(outcome.currentNodeId === null ? [] : [resumeJobId(id, outcome.currentNodeId)])]
      for (const jobId of jobIds) {
        queue.remove(jobId).catch((err: unknown) => { log.debug({ err, runId: id, jobId }, 'job of a cancelled run not removed') })
      }
      return outcome.run
    },

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
