import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { viewerOf } from '@switchboard/core/users'
import { auditContextOf } from '../../../../audit-context.ts'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { ListVersionsQuery, VersionParams, WorkflowDetail, WorkflowVersion, WorkflowVersionSummary } from './schemas.ts'

/** The largest version number: an integer column. */
const MAX_VERSION = 2_147_483_647

/** `:n` as a version number; 0, which no version has, for anything else (answered like a missing version). */
const versionNumber = (text: string): number => /^[1-9][0-9]{0,9}$/.test(text) && Number(text) <= MAX_VERSION ? Number(text) : 0

/**
 * A workflow's versions (README, Versions): every definition it has had, newest first, and
 * restoring one. Registered by the workflows group, whose hook checks the id; a workflow the
 * caller cannot see has no versions they can see (404 Workflow not found).
 */
const versions: FastifyPluginAsyncTypebox = async (fastify) => {
  const { workflows } = fastify
  const tags = ['workflows']

  fastify.get('/:id/versions', {
    schema: {
      tags,
      summary: 'The versions of a workflow, newest first',
      params: IdParams,
      querystring: ListVersionsQuery,
      response: { 200: Type.Array(WorkflowVersionSummary), ...errorResponses(400, 401, 404) }
    }
  }, async (request) => workflows.versions(viewerOf(request.user), request.params.id, request.query))

  fastify.get('/:id/versions/:n', {
    schema: { tags, summary: 'One version of a workflow, with its definition', params: VersionParams, response: { 200: WorkflowVersion, ...errorResponses(401, 404) } }
  }, async (request) => workflows.version(viewerOf(request.user), request.params.id, versionNumber(request.params.n)))

  fastify.post('/:id/versions/:n/restore', {
    schema: {
      tags,
      summary: 'Make a version current again, as a new version',
      params: VersionParams,
      response: { 200: WorkflowDetail, ...errorResponses(400, 401, 404, 503) }
    }
  }, async (request) => workflows.restore(viewerOf(request.user), request.params.id, versionNumber(request.params.n), auditContextOf(request)))
}

export default versions
