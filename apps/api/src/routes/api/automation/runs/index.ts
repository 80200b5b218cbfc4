import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { viewerOf } from '@switchboard/core/users'
import { runsFinished } from '@switchboard/core/observability'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { checkIdParam } from '../../../../schemas/ids.ts'
import { ListRunsQuery, Run, RunSummary } from './schemas.ts'

const runNotFound = (): DomainError => new DomainError('RUN_NOT_FOUND', 'Run not found')

/** GET /api/automation/runs/:id (spec 4.11), the run list and cancel (contract, Runs). */
const runRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { runs } = fastify
  fastify.addHook('preHandler', checkIdParam('id', () => { throw runNotFound() }))

  fastify.get('', {
    schema: { tags: ['runs'], querystring: ListRunsQuery, response: { 200: Type.Array(RunSummary), ...errorResponses(400, 401) } }
  }, async (request) => {
    const { workflowId, status, limit, offset } = request.query
    return runs.list(viewerOf(request.user), { workflowId, status, limit, offset })
  })

  fastify.get('/:id', {
    schema: { tags: ['runs'], params: IdParams, response: { 200: Run, ...errorResponses(401, 404) } }
  }, async (request) => {
    const run = await runs.get(request.params.id, viewerOf(request.user))
    if (run === null) throw runNotFound()
    return run
  })

  fastify.post('/:id/cancel', {
    schema: { tags: ['runs'], params: IdParams, response: { 200: Run, ...errorResponses(401, 404, 409) } }
  }, async (request) => {
    const outcome = await runs.cancel(request.params.id, viewerOf(request.user), request.log)
    if (outcome === null) throw runNotFound()
    if (outcome === 'finished') throw new DomainError('RUN_FINISHED', 'Run is already finished')
    runsFinished.inc({ status: 'CANCELLED' })
    return outcome
  })
}

export default runRoutes
