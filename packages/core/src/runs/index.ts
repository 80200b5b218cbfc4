/** Runs: every run statement (start, step, cancel, reads) and the reconciliation of runs and idempotency keys. */
export { createReconciler } from './reconciler.ts'
export { runsRepository } from './repository.ts'
export { createGroupStarter, GROUP_START_DEFAULTS, type GroupStarter, type RequestStart } from './group-start.ts'
export { startRun, startRuns } from './start.ts'
export { wakeWaitingRuns } from './slots.ts'
export type { LogLine } from './steps.ts'
export { createRunAdmission, othersActive, type RunAdmission } from './admission.ts'
