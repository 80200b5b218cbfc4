/**
 * The code sandbox: runs a workflow author's JavaScript in QuickJS on a pool
 * of worker threads, and checks its syntax when it is saved.
 */
export { createCodeSandboxPool, type CodeLogLine, type CodeRunResult, type CodeSandboxPool } from './pool.ts'
export { codeSandboxLimitsOf, DEFAULT_CODE_SANDBOX_LIMITS, type CodeSandboxLimits } from './limits.ts'
export { checkCodeSyntax, loadCodeSyntaxChecker, type CodeSyntaxError } from './syntax.ts'
