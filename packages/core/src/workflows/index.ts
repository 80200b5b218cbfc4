/** Workflows: definitions, their validation and the graph both validation and the engine read. */
export { workflowsRepository } from './repository.ts'
export { createWorkflowService, versionNotFound, workflowNotFound, type ScheduleSync } from './service.ts'
export { EXPORT_FORMAT, EXPORT_FORMAT_VERSION } from './transfer.ts'
export { createCounterFolding, foldCounterDeltas } from './counters.ts'
