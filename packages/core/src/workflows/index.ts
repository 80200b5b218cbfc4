/** Workflows: definitions, their validation and the graph both validation and the engine read. */
export { workflowsRepository, type WorkflowsRepository } from './repository.ts'
export { createWorkflowService, type ScheduleSync, versionNotFound, workflowNotFound, type WorkflowService } from './service.ts'
export { EXPORT_FORMAT, EXPORT_FORMAT_VERSION } from './transfer.ts'
export { createCounterFolding, foldCounterDeltas } from './counters.ts'
