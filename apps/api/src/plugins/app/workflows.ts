import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { codeSandboxLimitsOf, createCodeSandboxPool, type CodeSandboxPool } from '@switchboard/core/engine'
import { createScheduleSync } from '@switchboard/core/schedules'
import { createWorkflowService, workflowsRepository, type WorkflowService, type WorkflowsRepository } from '@switchboard/core/workflows'

type Workflows = WorkflowService & {
  list: WorkflowsRepository['list']
  findDetail: WorkflowsRepository['findDetail']
}

function createWorkflows (fastify: FastifyInstance, code: CodeSandboxPool): Workflows {
  const repository = workflowsRepository(fastify.db)
  // CRON schedule side effects (README, Triggers) run inside the transaction that saves the workflow.
  const scheduleSync = createScheduleSync({ db: fastify.db, queue: fastify.queues['scheduled-tasks'] })
  return {
    ...createWorkflowService({ db: fastify.db, tools: { code }, scheduleSync, limits: fastify.config.limits, quotas: fastify.config.quotas }),
    list: repository.list,
    findDetail: repository.findDetail
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    workflows: Workflows
  }
}

/**
 * Workflow definitions: reads, and writes checked and scheduled by the workflow service. Code
 * nodes are compiled on one sandbox thread (README, Code), started with the first save of code.
 */
async function workflows (fastify: FastifyInstance): Promise<void> {
  const code = createCodeSandboxPool({ threads: 1, limits: codeSandboxLimitsOf(fastify.config) })
  fastify.addHook('onClose', async () => { await code.close() })
  fastify.decorate('workflows', createWorkflows(fastify, code))
}

export default fp(workflows, { name: 'workflows', dependencies: ['context'] })
