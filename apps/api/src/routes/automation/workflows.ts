import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { viewerOf } from '@switchboard/core/users'
import { workflowsRepository, createWorkflowService, workflowNotFound, type ScheduleSync } from '@switchboard/core/workflows'
import { errorResponses } from '../../schemas/common.ts'
import {
  CreateWorkflowBody,
  ListWorkflowsQuery,
  UpdateWorkflowBody,
  WorkflowDetail,
  WorkflowParams,
  WorkflowSummary
} from './workflow-schemas.ts'

export interface WorkflowRoutesOptions {
  /** CRON schedule side effects (spec section 3). */
  scheduleSync?: ScheduleSync
}

/** A null name is as missing as a blank one. */
const isBlank = (value: unknown): boolean => value === null || (typeof value === 'string' && value.trim() === '')

/**
 * AJV reports a missing triggerType before it looks at name's value, so a blank
 * name is refused here first: the contract checks name before triggerType.
 */
async function refuseBlankName (request: FastifyRequest): Promise<void> {
  const body = request.body as Record<string, unknown> | null | undefined
  if (isBlank(body?.name)) throw new DomainError('VALIDATION_ERROR', 'name is required')
  if (request.method === 'POST' && (typeof body !== 'object' || body === null || Array.isArray(body))) {
    throw new DomainError('VALIDATION_ERROR', 'name is required')
  }
}

/** Workflow definitions (spec 4.6–4.9 and DELETE), scoped to the caller; admins see all. */
const workflowRoutes: FastifyPluginAsyncTypebox<WorkflowRoutesOptions> = async (fastify, opts) => {
  const workflows = workflowsRepository(fastify.db)
  const service = createWorkflowService({ db: fastify.db, scheduleSync: opts.scheduleSync, limits: fastify.config.limits })
  const tags = ['workflows']

  fastify.post('/api/automation/workflows', {
    preValidation: refuseBlankName,
    schema: {
      tags,
      summary: 'Create a workflow',
      body: CreateWorkflowBody,
      response: { 201: WorkflowDetail, ...errorResponses(400, 401, 503) }
    }
  }, async (request, reply) => {
    const workflow = await service.create(viewerOf(request.user), request.body)
    return reply.code(201).send(workflow)
  })

  fastify.get('/api/automation/workflows', {
    schema: {
      tags,
      summary: 'List workflows, newest updatedAt first',
      querystring: ListWorkflowsQuery,
      response: { 200: Type.Array(WorkflowSummary), ...errorResponses(400, 401) }
    }
  }, async (request) => workflows.list(viewerOf(request.user), request.query))

  fastify.get('/api/automation/workflows/:id', {
    schema: {
      tags,
      summary: 'A workflow with its latest 10 runs and its schedules',
      params: WorkflowParams,
      response: { 200: WorkflowDetail, ...errorResponses(401, 404) }
    }
  }, async (request) => {
    const workflow = await workflows.findDetail(viewerOf(request.user), request.params.id)
    if (workflow === null) throw workflowNotFound()
    return workflow
  })

  fastify.patch('/api/automation/workflows/:id', {
    preValidation: refuseBlankName,
    schema: {
      tags,
      summary: 'Change the supplied fields of a workflow',
      params: WorkflowParams,
      body: UpdateWorkflowBody,
      response: { 200: WorkflowDetail, ...errorResponses(400, 401, 404, 503) }
    }
  }, async (request) => service.update(viewerOf(request.user), request.params.id, request.body))

  fastify.delete('/api/automation/workflows/:id', {
    schema: {
      tags,
      summary: 'Delete a workflow with its runs and schedules',
      params: WorkflowParams,
      response: { 204: Type.Null(), ...errorResponses(401, 404, 503) }
    }
  }, async (request, reply) => {
    await service.delete(viewerOf(request.user), request.params.id)
    return reply.code(204).send(null)
  })
}

export default workflowRoutes
