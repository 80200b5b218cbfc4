import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { resumeJobId, runJobId } from '@switchboard/core/queues'
import { runsRepository, startRun } from '@switchboard/core/runs'

type RunsRepository = ReturnType<typeof runsRepository>
type Viewer = Parameters<RunsRepository['get']>[1]
type RunWithLogs = NonNullable<Awaited<ReturnType<RunsRepository['get']>>>

interface Runs {
  list: RunsRepository['list']
  get: RunsRepository['get']
  perMinute: RunsRepository['perMinute']
  start: (input: Parameters<typeof startRun>[1]) => ReturnType<typeof startRun>
  /** The cancelled run, `finished` when it had already ended, or null when the viewer has no such run. */
  cancel: (id: string, viewer: Viewer, log: FastifyBaseLogger) => Promise<RunWithLogs | 'finished' | null>
}

function createRuns (fastify: FastifyInstance): Runs {
  const { db, queues } = fastify
  const repository = runsRepository(db)
  return {
    list: repository.list,
    get: repository.get,
    perMinute: repository.perMinute,
    start: async (input) => startRun({ db, queues }, input),

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
    }
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    runs: Runs
  }
}

/** Runs: starting one, reading, counting and cancelling them. */
async function runs (fastify: FastifyInstance): Promise<void> {
  fastify.decorate('runs', createRuns(fastify))
}

export default fp(runs, { name: 'runs', dependencies: ['context'] })
