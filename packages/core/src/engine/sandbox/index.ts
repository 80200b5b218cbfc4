/**
 * The code sandbox: runs a workflow author's JavaScript in QuickJS on a pool
 * of worker threads, and compiles it there when it is saved.
 */
export { createCodeSandboxPool, type CodeLogLine, type CodeRunResult, type CodeSandboxPool, type CodeSyntaxError } from './pool.ts'
export { codeSandboxLimitsOf, type CodeSandboxLimits } from './limits.ts'
