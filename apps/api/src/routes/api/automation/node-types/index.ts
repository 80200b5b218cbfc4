import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { describeNodeTypes } from '@switchboard/core/engine'
import { errorResponses } from '../../../../schemas/common.ts'
import { NodeTypes } from './schemas.ts'
import { keyScopes } from '../../key-scopes.ts'

/** GET /api/automation/node-types: every node type with its config's JSON Schema and its traits (docs/nodes.md). */
const nodeTypes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRoute', keyScopes('workflows:read', 'workflows:write'))
  fastify.get('', {
    schema: {
      tags: ['workflows'],
      response: { 200: NodeTypes, ...errorResponses(401) }
    }
  }, async () => ({ nodeTypes: describeNodeTypes() }))
}

export default nodeTypes
