import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { viewerOf } from '@switchboard/core/users'
import { errorResponses } from '../../../../schemas/common.ts'
import { ListApprovalsQuery, PendingApproval } from './schemas.ts'
import { keyScopes } from '../../key-scopes.ts'

/**
 * GET /api/automation/approvals: the runs waiting at an approval node for a decision the viewer
 * may take (theirs; admins: everyone's), oldest first; decided with POST /runs/:id/resume.
 */
const approvals: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRoute', keyScopes('runs:read', 'runs:write'))
  fastify.get('', {
    schema: { tags: ['runs'], querystring: ListApprovalsQuery, response: { 200: Type.Array(PendingApproval), ...errorResponses(400, 401) } }
  }, async (request) => await fastify.runs.approvals(viewerOf(request.user), request.query.limit, request.query.offset))
}

export default approvals
