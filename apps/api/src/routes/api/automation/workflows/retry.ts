import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DomainError } from '@switchboard/core/errors'
import { viewerOf } from '@switchboard/core/users'
import { auditContextOf } from '../../../../audit-context.ts'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { BulkRetried, BulkRetryBody } from './schemas.ts'

/**
 * A date-time the schema's format accepts but a Date cannot hold (a leap second) is refused
 * like a malformed one.
 */
function instantOf (field: string, value: string): Date {
  const instant = new Date(value)
  if (Number.isNaN(instant.getTime())) throw new DomainError('VALIDATION_ERROR', `${field} must be an ISO 8601 date-time`)
  return instant
}

/**
 * POST /api/automation/workflows/:id/runs/retry (README, Replay): replays the workflow's failed
 * (or cancelled) runs of a time range that were not retried yet, at most 500 per call, and says
 * whether more remain. Registered by the workflows group, whose hook checks the id. Like an
 * event's fan-out it has no request deadline: it waits for the stores.
 */
const retry: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/:id/runs/retry', {
    config: { scope: 'runs:write' },
    schema: {
      tags: ['runs'],
      summary: 'Replay the failed runs of a time range, 500 at most per call',
      params: IdParams,
      body: BulkRetryBody,
      response: { 202: BulkRetried, ...errorResponses(400, 401, 404, 413, 415, 503) }
    }
  }, async (request, reply) => {
    const from = instantOf('from', request.body.from)
    const to = instantOf('to', request.body.to)
    if (to <= from) throw new DomainError('VALIDATION_ERROR', 'to must be after from')
    const replayed = await fastify.runs.retryMany({
      workflowId: request.params.id,
      viewer: viewerOf(request.user),
      status: request.body.status,
      from,
      to,
      version: request.body.version,
      requestId: request.id,
      audit: auditContextOf(request)
    })
    return reply.code(202).send(replayed)
  })
}

export default retry
