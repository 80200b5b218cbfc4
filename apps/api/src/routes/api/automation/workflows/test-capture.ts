import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { viewerOf } from '@switchboard/core/users'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { TestCaptureAnswer } from './schemas.ts'

/**
 * "Listen for a test request" (README, The workflow builder): POST arms it for 2 minutes, GET
 * reads where it stands; the inbound webhook (../webhook) does the capturing. Registered by the
 * workflows group, whose hook checks the id and whose scopes are `workflows:read` and `workflows:write`.
 */
const testCapture: FastifyPluginAsyncTypebox = async (fastify) => {
  const tags = ['workflows']
  fastify.post('/:id/test-capture', {
    schema: {
      tags,
      summary: 'Listen for the next inbound webhook of a WEBHOOK workflow: it becomes its pinnedData',
      params: IdParams,
      response: { 200: TestCaptureAnswer, ...errorResponses(400, 401, 404, 503) }
    }
  }, async (request) => fastify.workflows.armTestCapture(viewerOf(request.user), request.params.id))

  fastify.get('/:id/test-capture', {
    schema: {
      tags,
      summary: 'Where listening for a test request stands, with what it captured',
      params: IdParams,
      response: { 200: TestCaptureAnswer, ...errorResponses(401, 404) }
    }
  }, async (request) => fastify.workflows.testCapture(viewerOf(request.user), request.params.id))
}

export default testCapture
