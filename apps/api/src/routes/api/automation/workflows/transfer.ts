import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { DomainError } from '@switchboard/core/errors'
import { viewerOf } from '@switchboard/core/users'
import { auditContextOf } from '../../../../audit-context.ts'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { ImportedWorkflow, ImportWorkflowBody, WorkflowExport } from './schemas.ts'

/** Like create's check: a blank name is refused before the schema's other checks. */
async function refuseBlankName (request: FastifyRequest): Promise<void> {
  const name = (request.body as { workflow?: { name?: unknown } } | null | undefined)?.workflow?.name
  if (name === null || (typeof name === 'string' && name.trim() === '')) throw new DomainError('VALIDATION_ERROR', 'workflow.name is required')
}

/**
 * Export and import (README, Export and import): a workflow as portable JSON, and a new
 * workflow from one. Registered by the workflows group, whose hook checks the id.
 */
const transfer: FastifyPluginAsyncTypebox = async (fastify) => {
  const { workflows } = fastify
  const tags = ['workflows']

  fastify.get('/:id/export', {
    schema: {
      tags,
      summary: 'A workflow as portable JSON: no ids, owner, counters or secrets; credentials by name',
      params: IdParams,
      response: { 200: WorkflowExport, ...errorResponses(401, 404) }
    }
  }, async (request) => workflows.export(viewerOf(request.user), request.params.id))

  fastify.post('/import', {
    preValidation: refuseBlankName,
    schema: {
      tags,
      summary: 'Create an inactive workflow from an export, checked like a create; toFill lists the removed values it still lacks',
      body: ImportWorkflowBody,
      response: { 201: ImportedWorkflow, ...errorResponses(400, 401, 503) }
    }
  }, async (request, reply) => reply.code(201).send(await workflows.import(viewerOf(request.user), request.body.workflow, request.body.redacted ?? [], auditContextOf(request))))
}

export default transfer
