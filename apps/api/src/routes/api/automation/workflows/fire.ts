import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { parseRunTags, RUN_TAG_BOUNDS } from '@switchboard/core/runs'
import { viewerOf } from '@switchboard/core/users'
import { workflowNotFound } from '@switchboard/core/workflows'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { idempotencyKeyOf, RunAccepted } from '../runs/schemas.ts'
import { createStartQuota } from '../start-quota.ts'

/**
 * POST /api/automation/workflows/:id/fire (README, Runs): the whole body becomes triggerData; the run
 * executes in the background. Registered by the workflows group, whose hook checks the id.
 * Answered within REQUEST_DEADLINE_MS: 503 with Retry-After when Postgres or Redis cannot
 * store and queue the run in time, and then no run exists.
 */
const fire: FastifyPluginAsyncTypebox = async (fastify) => {
  const checkStartQuota = createStartQuota(fastify)
  fastify.post('/:id/fire', {
    config: { scope: 'runs:write' },
    schema: {
      tags: ['runs'],
      params: IdParams,
      querystring: Type.Object({
        tags: Type.Optional(Type.String({ maxLength: RUN_TAG_BOUNDS.count * (RUN_TAG_BOUNDS.chars + 1), description: 'the run\'s tags, comma-separated, instead of the workflow\'s runTags (README, Finding runs)' }))
      }),
      body: Type.Optional(Type.Unknown()),
      response: { 202: RunAccepted, ...errorResponses(400, 401, 404, 413, 415, 429, 503) }
    }
  }, async (request, reply) => {
    const { deadline } = request
    const workflow = await deadline.race(fastify.triggers.findTarget(request.params.id, viewerOf(request.user)), 'find the workflow')
    if (workflow === null) throw workflowNotFound()
    if (!workflow.isActive) throw new DomainError('WORKFLOW_NOT_ACTIVE', 'Workflow is not active')
    await checkStartQuota(request, reply, workflow, deadline)
    const { runId } = await fastify.runs.start({
      workflow,
      triggerData: request.body ?? {},
      idempotencyKey: idempotencyKeyOf(request.headers),
      requestId: request.id,
      ...(request.query.tags !== undefined && { tags: parseRunTags(request.query.tags) })
    }, deadline)
    return reply.code(202).send({ runId })
  })
}

export default fire
