import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { runsRepository } from '@switchboard/core/repositories/runs'
import { workflowsRepository } from '@switchboard/core/repositories/workflows'
import { createScheduleSync } from '@switchboard/core/schedules/schedule-sync'
import { createWorkflowService } from '@switchboard/core/services/workflows'

function createWorkflows (fastify: FastifyInstance) {
  const repository = workflowsRepository(fastify.db)
  // CRON schedule side effects (spec section 3) run inside the transaction that saves the workflow.
  const scheduleSync = createScheduleSync({ db: fastify.db, queue: fastify.queues['scheduled-tasks'] })
  return {
    ...createWorkflowService({ db: fastify.db, scheduleSync, limits: fastify.config.limits }),
    list: repository.list,
    findDetail: repository.findDetail,
    /** What a fire or an inbound webhook starts a run from; `viewer` scopes it to its owner. */
    findTriggerTarget: runsRepository(fastify.db).findTriggerTarget
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    workflows: ReturnType<typeof createWorkflows>
  }
}

/** Workflow definitions: reads, and writes checked and scheduled by the workflow service. */
async function workflows (fastify: FastifyInstance): Promise<void> {
  fastify.decorate('workflows', createWorkflows(fastify))
}

export default fp(workflows, { name: 'workflows', dependencies: ['context'] })
