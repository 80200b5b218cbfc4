import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { isCuid } from '@paralleldrive/cuid2'
import { DomainError } from '@switchboard/core/errors'
import { viewerOf } from '@switchboard/core/users'
import { runsRepository } from '@switchboard/core/runs'
import { resumeJobId, runJobId } from '@switchboard/core/queues'
import { errorResponses, Pagination } from '../../schemas/common.ts'
import { Run, RunStatus, RunSummary } from './run-schemas.ts'

const RunParams = Type.Object({ id: Type.String() })

const ListRunsQuery = Type.Object({
  workflowId: Type.Optional(Type.String({ maxLength: 64 })),
  status: Type.Optional(RunStatus),
  ...Pagination
})

const runNotFound = (): DomainError => new DomainError('RUN_NOT_FOUND', 'Run not found')

/** GET /api/automation/runs/:id (spec 4.11), the run list and cancel (contract, Runs). */
const runs: FastifyPluginAsyncTypebox = async (fastify) => {
  const repo = runsRepository(fastify.db)

  fastify.get('/api/automation/runs', {
    schema: { tags: ['runs'], querystring: ListRunsQuery, response: { 200: Type.Array(RunSummary), ...errorResponses(400, 401) } }
  }, async (request) => {
    const { workflowId, status, limit, offset } = request.query
    return repo.list(viewerOf(request.user), { workflowId, status, limit, offset })
  })

  fastify.get('/api/automation/runs/:id', {
    schema: { tags: ['runs'], params: RunParams, response: { 200: Run, ...errorResponses(401, 404) } }
  }, async (request) => {
    // A malformed id is a 404 like any unknown one (contract section 3).
    const run = isCuid(request.params.id) ? await repo.get(request.params.id, viewerOf(request.user)) : null
    if (run === null) throw runNotFound()
    return run
  })

  fastify.post('/api/automation/runs/:id/cancel', {
    schema: { tags: ['runs'], params: RunParams, response: { 200: Run, ...errorResponses(401, 404, 409) } }
  }, async (request) => {
    const { id } = request.params
    const outcome = isCuid(id) ? await repo.cancel(id, viewerOf(request.user)) : null
    if (outcome === null) throw runNotFound()
    if (outcome === 'finished') throw new DomainError('RUN_FINISHED', 'Run is already finished')
    // Best effort, not awaited: a removed job saves the worker a pointless pick-up; a job
    // that is running (locked, so not removable) finds the run CANCELLED and stops by itself.
    const queue = fastify.queues[outcome.queue]
    const jobIds = [runJobId(id), ...(outcome.currentNodeId === null ? [] : [resumeJobId(id, outcome.currentNodeId)])]
    for (const jobId of jobIds) {
      queue.remove(jobId).catch((err: unknown) => { request.log.debug({ err, runId: id, jobId }, 'job of a cancelled run not removed') })
    }
    return outcome.run
  })
}

export default runs
