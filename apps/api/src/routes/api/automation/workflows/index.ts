import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { viewerOf } from '@switchboard/core/users'
import { workflowNotFound } from '@switchboard/core/workflows'
import { auditContextOf } from '../../../../audit-context.ts'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { checkIdParam } from '../../../../schemas/ids.ts'
import fire from './fire.ts'
import renameNode from './rename-node.ts'
import retry from './retry.ts'
import testCapture from './test-capture.ts'
import testRun from './test-run.ts'
import transfer from './transfer.ts'
import versions from './versions.ts'
import {
  CreateWorkflowBody,
  ListWorkflowsQuery,
  UpdateWorkflowBody,
  WorkflowDetail,
  WorkflowSummary
} from './schemas.ts'
import { keyScopes } from '../../key-scopes.ts'

/** A null name is as missing as a blank one. */
const isBlank = (value: unknown): boolean => value === null || (typeof value === 'string' && value.trim() === '')

/**
 * AJV reports a missing triggerType before it looks at name's value, so a blank
 * name is refused here first: the API checks name before triggerType (README, Workflows).
 */
async function refuseBlankName (request: FastifyRequest): Promise<void> {
  const body = request.body as Record<string, unknown> | null | undefined
  if (isBlank(body?.name)) throw new DomainError('VALIDATION_ERROR', 'name is required')
  if (request.method === 'POST' && (typeof body !== 'object' || body === null || Array.isArray(body))) {
    throw new DomainError('VALIDATION_ERROR', 'name is required')
  }
}

/** Workflow definitions (README, Workflows), scoped to the caller; admins see all; their fire, bulk retry, versions, export and import. */
const workflowRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRoute', keyScopes('workflows:read', 'workflows:write'))
  const { workflows } = fastify
  const tags = ['workflows']
  fastify.addHook('preHandler', checkIdParam('id', () => { throw workflowNotFound() }))
  await fastify.register(fire)
  await fastify.register(renameNode)
  await fastify.register(retry)
  await fastify.register(testRun)
  await fastify.register(testCapture)
  await fastify.register(versions)
  await fastify.register(transfer)

  fastify.post('', {
    preValidation: refuseBlankName,
    schema: {
      tags,
      summary: 'Create a workflow',
      body: CreateWorkflowBody,
      response: { 201: WorkflowDetail, ...errorResponses(400, 401, 503) }
    }
  }, async (request, reply) => {
    const workflow = await workflows.create(viewerOf(request.user), request.body, auditContextOf(request))
    return reply.code(201).send(workflow)
  })

  fastify.get('', {
    schema: {
      tags,
      summary: 'List workflows, newest updatedAt first',
      querystring: ListWorkflowsQuery,
      response: { 200: Type.Array(WorkflowSummary), ...errorResponses(400, 401) }
    }
  }, async (request) => workflows.list(viewerOf(request.user), request.query))

  fastify.get('/:id', {
    schema: {
      tags,
      summary: 'A workflow with its latest 10 runs and its schedules',
      params: IdParams,
      response: { 200: WorkflowDetail, ...errorResponses(401, 404) }
    }
  }, async (request) => {
    const workflow = await workflows.findDetail(viewerOf(request.user), request.params.id)
    if (workflow === null) throw workflowNotFound()
    return workflow
  })

  fastify.patch('/:id', {
    preValidation: refuseBlankName,
    schema: {
      tags,
      summary: 'Change the supplied fields of a workflow',
      params: IdParams,
      body: UpdateWorkflowBody,
      response: { 200: WorkflowDetail, ...errorResponses(400, 401, 404, 503) }
    }
  }, async (request) => {
    const workflow = await workflows.update(viewerOf(request.user), request.params.id, request.body, auditContextOf(request))
    // A higher limit, or none, frees slots for the runs waiting.
    if (request.body.maxConcurrentRuns !== undefined || request.body.flowControl !== undefined) fastify.runs.wake(workflow.id, request.log)
    return workflow
  })

  fastify.delete('/:id', {
    schema: {
      tags,
      summary: 'Delete a workflow with its runs and schedules',
      params: IdParams,
      response: { 204: Type.Null(), ...errorResponses(401, 404, 503) }
    }
  }, async (request, reply) => {
    await workflows.delete(viewerOf(request.user), request.params.id, auditContextOf(request))
    return reply.code(204).send(null)
  })
}

export default workflowRoutes
