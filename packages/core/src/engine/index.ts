/** The engine: the run loop, templates and node executors. */
export { createRunEngine, type RunEngine } from './engine.ts'
export { blockedAddressReason, createHttpClient, resolveAllowedAddress, type LookupAll } from './nodes/http-client.ts'
