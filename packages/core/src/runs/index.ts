/** Runs: every run statement (start, step, cancel, reads) and the reconciliation of runs and idempotency keys. */
export { createReconciler } from './reconciler.ts'
export { runsRepository } from './repository.ts'
export { startRun } from './start.ts'
