/** Workflows: definitions, their validation and the graph both validation and the engine read. */
export { workflowsRepository } from './repository.ts'
export { createWorkflowService, workflowNotFound, type ScheduleSync } from './service.ts'
export { createCounterFolding, foldCounterDeltas } from './counters.ts'
