import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { viewerOf } from '@switchboard/core/users'
import { auditContextOf } from '../../../../audit-context.ts'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { RenameNodeBody, WorkflowDetail } from './schemas.ts'

/**
 * POST /api/automation/workflows/:id/rename-node (README, The workflow builder): a node's new id
 * with every reference to it, saved as a PATCH of the nodes is (a new version, the audit log).
 * Registered by the workflows group, whose hook checks the id and whose scope is `workflows:write`.
 */
const renameNode: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/:id/rename-node', {
    schema: {
      tags: ['workflows'],
      summary: 'Rename a node and rewrite every reference to it',
      params: IdParams,
      body: RenameNodeBody,
      response: { 200: WorkflowDetail, ...errorResponses(400, 401, 404, 409, 503) }
    }
  }, async (request) => fastify.workflows.renameNode(viewerOf(request.user), request.params.id, request.body, auditContextOf(request)))
}

export default renameNode
