/**
 * The engine: the run loop and its systems (the run store, children, waits, slots, holds,
 * suspension), the graph it walks, templates, node types (one definition each, catalogued in
 * nodes/index.ts) and the reconciler that repairs what a crash left. engine/README.md says which
 * file owns what.
 */
export { createRunEngine, type RunEngine, type RunEngineOptions, type RunOutcome } from './engine.ts'
export type { NodeDependencies } from './types.ts'
export { createReconciler } from './reconciler.ts'
export { traceRun } from './run-trace.ts'
export { wakeWaitingRuns } from './slots.ts'
export { wakeRun } from './children.ts'
export { RESUME_TOKEN_PATTERN, type Decided, type PendingApproval } from './waits.ts'
export type { LogLine } from './run-store.ts'
export { blockedAddressReason, createHttpClient, resolveAllowedAddress, type LookupAll } from './nodes/http-client.ts'
export { describeNodeTypes, NODE_TYPES, type NodeTypeDescription } from './nodes/index.ts'
export { codeSandboxLimitsOf, createCodeSandboxPool, type CodeSandboxPool } from './sandbox/index.ts'
export { NODE_CATEGORIES } from './nodes/definition.ts'
export { EVENT_MATCH_BOUNDS } from './nodes/wait-for-event.ts'
