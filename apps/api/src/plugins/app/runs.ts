import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Viewer } from '@switchboard/core/auth/viewer'
import { resumeJobId, runJobId } from '@switchboard/core/queues'
import { runsRepository, type RunWithLogs } from '@switchboard/core/repositories/runs'
import { emitEvent, startRun, type EmitEventInput, type StartRunInput } from '@switchboard/core/services/runs'

function createRuns (fastify: FastifyInstance) {
  const { db, queues } = fastify
  const repository = runsRepository(db)
  return {
    list: repository.list,
    get: repository.get,
    start: async (input: StartRunInput) => startRun({ db, queues }, input),
    emitEvent: async (input: EmitEventInput) => emitEvent({ db, queues, eventFanoutMax: fastify.config.limits.eventFanoutMax }, input),

    /** The cancelled run, `finished` when it had already ended, or null when the viewer has no such run. */
    async cancel (id: string, viewer: Viewer, log: FastifyBaseLogger): Promise<RunWithLogs | 'finished' | null> {
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
    runs: ReturnType<typeof createRuns>
  }
}

/** Runs: starting them (fire, webhook, events), reading and cancelling them. */
async function runs (fastify: FastifyInstance): Promise<void> {
  fastify.decorate('runs', createRuns(fastify))
}

export default fp(runs, { name: 'runs', dependencies: ['context'] })
