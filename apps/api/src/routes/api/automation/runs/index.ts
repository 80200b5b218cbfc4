import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { RUN_STATUSES } from '@switchboard/core/db'
import { viewerOf } from '@switchboard/core/users'
import { runsFinished } from '@switchboard/core/observability'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { checkIdParam } from '../../../../schemas/ids.ts'
import { idempotencyKeyOf, ListRunsQuery, ResumeRunBody, RetryRunBody, Run, RunResumed, RunRetried, RunStats, RunStatsQuery, RunSummary } from './schemas.ts'
import { keyScopes } from '../../key-scopes.ts'

const runNotFound = (): DomainError => new DomainError('RUN_NOT_FOUND', 'Run not found')

const MINUTE_MS = 60_000

/**
 * A date-time the schema's format accepts but a Date cannot hold (a leap second,
 * `23:59:60`) is refused like a malformed one rather than reaching SQL as NaN.
 */
function instantOf (field: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined
  const instant = new Date(value)
  if (Number.isNaN(instant.getTime())) throw new DomainError('VALIDATION_ERROR', `${field} must be an ISO 8601 date-time`)
  return instant
}

type RunStatus = typeof RUN_STATUSES[number]

const zeroCounts = (): Record<RunStatus, number> => Object.fromEntries(RUN_STATUSES.map((status) => [status, 0])) as Record<RunStatus, number>

/** GET /api/automation/runs/:id, the run list and cancel (README, Runs). */
const runRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRoute', keyScopes('runs:read', 'runs:write'))
  const { runs } = fastify
  fastify.addHook('preHandler', checkIdParam('id', () => { throw runNotFound() }))

  fastify.get('', {
    schema: { tags: ['runs'], querystring: ListRunsQuery, response: { 200: Type.Array(RunSummary), ...errorResponses(400, 401) } }
  }, async (request) => {
    const { workflowId, parentRunId, status, test, q, tag, limit, offset } = request.query
    const since = instantOf('since', request.query.since)
    const until = instantOf('until', request.query.until)
    return runs.list(viewerOf(request.user), { workflowId, parentRunId, status, test, since, until, q, tag, limit, offset })
  })

  // The console's overview: runs per minute by status. A static path, so it wins over `/:id`.
  fastify.get('/stats', {
    schema: { tags: ['runs'], querystring: RunStatsQuery, response: { 200: RunStats, ...errorResponses(400, 401) } }
  }, async (request) => {
    const { minutes, workflowId } = request.query
    const until = new Date()
    const currentMinute = Math.floor(until.getTime() / MINUTE_MS) * MINUTE_MS
    const since = new Date(currentMinute - (minutes - 1) * MINUTE_MS)
    const buckets = Array.from({ length: minutes }, (_, i) => ({ minute: new Date(since.getTime() + i * MINUTE_MS), counts: zeroCounts() }))
    for (const { minute, status, count } of await runs.perMinute(viewerOf(request.user), { since, workflowId })) {
      const bucket = buckets[(minute.getTime() - since.getTime()) / MINUTE_MS]
      // A minute past `until` (the database's clock a little ahead of the api's) has no bucket.
      if (bucket !== undefined) bucket.counts[status] += count
    }
    return { since, until, bucketSeconds: 60 as const, buckets }
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

  // Decides the approval the run waits for at nodeId (README, Flow); the run goes on in a worker.
  fastify.post('/:id/resume', {
    schema: {
      tags: ['runs'],
      summary: 'Approve or reject a run waiting at an approval node',
      params: IdParams,
      body: ResumeRunBody,
      response: { 202: RunResumed, ...errorResponses(400, 401, 404, 409) }
    }
  }, async (request, reply) => {
    const { nodeId, decision, data } = request.body
    const decided = await runs.resume({ viewer: viewerOf(request.user), runId: request.params.id, nodeId }, decision, data, request.log)
    return reply.code(202).send({ runId: decided.runId, nodeId: decided.nodeId, decision: decided.decision })
  })

  // A new run of the run's workflow with its triggerData and raw body, answered like /fire (202,
  // within REQUEST_DEADLINE_MS, Idempotency-Key honoured per run retried).
  fastify.post('/:id/retry', {
    // The body is optional: a request without one (curl -X POST) asks for the defaults.
    preValidation: async (request) => { request.body ??= { version: 'current' } },
    schema: {
      tags: ['runs'],
      summary: 'Replay a finished run: a new run with the same triggerData and raw body',
      params: IdParams,
      body: RetryRunBody,
      response: { 202: RunRetried, ...errorResponses(400, 401, 404, 409, 413, 415, 503) }
    }
  }, async (request, reply) => {
    const replayed = await runs.retry({
      runId: request.params.id,
      viewer: viewerOf(request.user),
      version: request.body.version,
      fromNodeId: request.body.fromNodeId,
      idempotencyKey: idempotencyKeyOf(request.headers),
      requestId: request.id
    }, request.deadline)
    return reply.code(202).send(replayed)
  })
}

export default runRoutes
