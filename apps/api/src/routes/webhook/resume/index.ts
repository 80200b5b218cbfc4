import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DomainError } from '@switchboard/core/errors'
import { RESUME_TOKEN_PATTERN } from '@switchboard/core/engine'
import { errorResponses } from '../../../schemas/common.ts'
import { ResumeByTokenBody, RunResumed } from '../../api/automation/runs/schemas.ts'
import { ResumeTokenParams } from './schemas.ts'

const tokenShape = new RegExp(RESUME_TOKEN_PATTERN)

/**
 * POST /webhook/resume/:token, public: the one-time link of an approval (the approval node's
 * output and its `workflow.run.waiting` event carry it). A wrong token answers 404 like a missing
 * one; a used or expired one 409, as the resume route does (README, Flow).
 */
const resume: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/:token', {
    config: { public: true },
    // The body is optional: a partner's bare POST approves.
    preValidation: async (request) => { request.body ??= { decision: 'approve' } },
    schema: {
      tags: ['runs'],
      summary: 'Approve or reject a waiting run with its one-time resume token',
      // Public: the token is the authentication.
      security: [],
      params: ResumeTokenParams,
      body: ResumeByTokenBody,
      response: { 202: RunResumed, ...errorResponses(400, 404, 409) }
    }
  }, async (request, reply) => {
    const { token } = request.params
    if (!tokenShape.test(token)) throw new DomainError('RESUME_TOKEN_NOT_FOUND', 'Resume token not found')
    const decided = await fastify.runs.resume({ token }, request.body.decision, request.body.data, request.log)
    return reply.code(202).send({ runId: decided.runId, nodeId: decided.nodeId, decision: decided.decision })
  })
}

export default resume
