import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { isCuid } from '@paralleldrive/cuid2'
import { viewerOf } from '@switchboard/core/users'
import { DomainError } from '@switchboard/core/errors'
import { startRun } from '@switchboard/core/runs'
import { workflowNotFound } from '@switchboard/core/workflows'
import { findTriggerTarget } from '@switchboard/core/triggers'
import { errorResponses } from '../../schemas/common.ts'
import { idempotencyKeyOf, RunAccepted } from './run-schemas.ts'

/** POST /api/automation/workflows/:id/fire (spec 4.10): the whole body becomes triggerData; the run executes in the background. */
const fire: FastifyPluginAsyncTypebox = async (fastify) => {
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
    const workflow = await findTriggerTarget(fastify.db, id, viewerOf(request.user))
    if (workflow === null) throw workflowNotFound()
    if (!workflow.isActive) throw new DomainError('WORKFLOW_NOT_ACTIVE', 'Workflow is not active')
    const { runId } = await startRun(fastify, {
      workflow,
      triggerData: request.body ?? {},
      idempotencyKey: idempotencyKeyOf(request.headers)
    })
    return reply.code(202).send({ runId })
  })
}

export default fire
