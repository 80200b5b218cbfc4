/** The engine: the run loop, templates and node types (one definition each, catalogued in nodes/index.ts). */
export { createRunEngine, type RunEngine } from './engine.ts'
export { traceRun } from './run-trace.ts'
export { blockedAddressReason, createHttpClient, resolveAllowedAddress, type LookupAll } from './nodes/http-client.ts'
export { describeNodeTypes, NODE_TYPES, type NodeTypeDescription } from './nodes/index.ts'
export { codeSandboxLimitsOf, createCodeSandboxPool, type CodeSandboxPool } from './sandbox/index.ts'
export { NODE_CATEGORIES } from './nodes/definition.ts'
