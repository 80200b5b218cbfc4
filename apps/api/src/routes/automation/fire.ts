import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { isCuid } from '@paralleldrive/cuid2'
import { viewerOf } from '@switchboard/core/users/viewer'
import { AppError, notFound } from '@switchboard/core/errors'
import { runsRepository } from '@switchboard/core/runs/repository'
import { startRun } from '@switchboard/core/runs/start'
import { errorResponses } from '../../schemas/common.ts'
import { idempotencyKeyOf, RunAccepted } from './run-schemas.ts'

const workflowNotFound = (): AppError => notFound('Workflow not found', 'WORKFLOW_NOT_FOUND')

/** POST /api/automation/workflows/:id/fire (spec 4.10): the whole body becomes triggerData; the run executes in the background. */
const fire: FastifyPluginAsyncTypebox = async (fastify) => {
  const repo = runsRepository(fastify.db)

  fastify.post('/api/automation/workflows/:id/fire', {
    schema: {
      tags: ['runs'],
      // No length limit here: a malformed id is a 404 like any unknown one (contract section 3).
      params: Type.Object({ id: Type.String() }),
      body: Type.Optional(Type.Unknown()),
      response: { 202: RunAccepted, ...errorResponses(400, 401, 404, 413, 415) }
    }
  }, async (request, reply) => {
    const { id } = request.params
    if (!isCuid(id)) throw workflowNotFound()
    const workflow = await repo.findTriggerTarget(id, viewerOf(request.user))
    if (workflow === null) throw workflowNotFound()
    if (!workflow.isActive) throw new AppError(400, 'WORKFLOW_NOT_ACTIVE', 'Workflow is not active')
    const { runId } = await startRun(fastify, {
      workflow,
      triggerData: request.body ?? {},
      idempotencyKey: idempotencyKeyOf(request.headers)
    })
    return reply.code(202).send({ runId })
  })
}

export default fire
