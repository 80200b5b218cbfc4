import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DomainError } from '@switchboard/core/errors'
import { viewerOf } from '@switchboard/core/users'
import { workflowNotFound } from '@switchboard/core/workflows'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { RunAccepted } from '../runs/schemas.ts'
import { createStartQuota } from '../start-quota.ts'
import { TestRunBody } from './schemas.ts'

/**
 * POST /api/automation/workflows/:id/test (README, The workflow builder): a run of the workflow,
 * active or not, with the given triggerData or else its pinnedData, marked `test: true` and
 * ending after `untilNodeId` when given ("Run to here" in the builder). It counts as a run,
 * quotas included. Registered by the workflows group, whose hook checks the id.
 */
const testRun: FastifyPluginAsyncTypebox = async (fastify) => {
  const checkStartQuota = createStartQuota(fastify)
  fastify.post('/:id/test', {
    config: { scope: 'runs:write' },
    // The body is optional: a request without one tests with the pinned data.
    preValidation: async (request) => { request.body ??= {} },
    schema: {
      tags: ['runs'],
      summary: 'Run a workflow, active or not, as a test run',
      params: IdParams,
      body: TestRunBody,
      response: { 202: RunAccepted, ...errorResponses(400, 401, 404, 413, 415, 429, 503) }
    }
  }, async (request, reply) => {
    const { deadline } = request
    const viewer = viewerOf(request.user)
    const [target, workflow] = await deadline.race(Promise.all([
      fastify.triggers.findTarget(request.params.id, viewer),
      fastify.workflows.findDetail(viewer, request.params.id)
    ]), 'find the workflow')
    if (target === null || workflow === null) throw workflowNotFound()
    const { triggerData, untilNodeId } = request.body
    if (untilNodeId !== undefined && !workflow.nodes.some((node) => node.id === untilNodeId)) {
      throw new DomainError('VALIDATION_ERROR', `untilNodeId names no node of the workflow: ${untilNodeId}`)
    }
    await checkStartQuota(request, reply, target, deadline)
    const { runId } = await fastify.runs.start({
      workflow: target,
      triggerData: triggerData !== undefined ? triggerData : (workflow.pinnedData ?? {}),
      test: true,
      untilNodeId,
      requestId: request.id
    }, deadline)
    return reply.code(202).send({ runId })
  })
}

export default testRun
